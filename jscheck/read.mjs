// Reads exported Arrow IPC files (stream or file format, with apache-arrow) and Parquet
// files (with DuckDB) and prints, per file, the rows' ids, messages, tools and tool
// turns as plain JSON: {path: [{id, n_tokens, messages, tools, tool_messages}, ...]}.
// The Go tests compare this with what the Go Arrow readers decode from the same files.
import { readFileSync } from "node:fs";
import { tableFromIPC } from "apache-arrow";
import { DuckDBInstance } from "@duckdb/node-api";
import { plain } from "./plain.mjs";

const columns = ["id", "n_tokens", "messages", "tools", "tool_messages"];

const out = {};
for (const path of process.argv.slice(2)) {
  if (path.endsWith(".parquet")) {
    const db = await DuckDBInstance.create(":memory:");
    const con = await db.connect();
    const sql = `select ${columns.map((c) => `to_json(${c}) as ${c}`).join(", ")} from read_parquet('${path.replaceAll("'", "''")}')`;
    const reader = await con.runAndReadAll(sql);
    out[path] = reader.getRowObjectsJson().map((r) => Object.fromEntries(columns.map((c) => [c, JSON.parse(r[c])])));
  } else {
    const table = tableFromIPC(readFileSync(path));
    const rows = [];
    for (let i = 0; i < table.numRows; i++) {
      const row = {};
      for (const c of columns) row[c] = plain(table.getChild(c).get(i));
      rows.push(row);
    }
    out[path] = rows;
  }
}
process.stdout.write(JSON.stringify(out) + "\n");
