// Reads every column of exported files with readers that share no code with reactgen's
// writer, and prints each file's rows as plain JSON, per reader:
//   {path: {reader: [{column: value, ...}, ...]}}
// Parquet files are read by hyparquet (with hyparquet-compressors for zstd) and by
// DuckDB; Arrow IPC files (stream or file format) by apache-arrow. A reader that fails
// reports {error: message} instead of rows. 64-bit integers become numbers when they are
// exact in a double, else decimal strings; the Go test decodes the same way.
import { readFileSync } from "node:fs";
import { tableFromIPC } from "apache-arrow";
import { DuckDBInstance } from "@duckdb/node-api";
import { asyncBufferFromFile, parquetReadObjects } from "hyparquet";
import { compressors } from "hyparquet-compressors";
import { plain } from "./plain.mjs";

async function attempt(fn) {
  try {
    return await fn();
  } catch (e) {
    return { error: String(e && e.stack ? e.stack : e) };
  }
}

async function hyparquet(path) {
  const file = await asyncBufferFromFile(path);
  const rows = await parquetReadObjects({ file, compressors });
  return rows.map(plain);
}

async function duckdb(path) {
  const db = await DuckDBInstance.create(":memory:");
  const con = await db.connect();
  // to_json of the whole row keeps every column's nesting; BIGINT stays exact in JSON.
  const sql = `select to_json(t) as j from read_parquet('${path.replaceAll("'", "''")}') t`;
  const reader = await con.runAndReadAll(sql);
  return reader.getRowObjectsJson().map((r) => JSON.parse(r.j));
}

function arrow(path) {
  const table = tableFromIPC(readFileSync(path));
  const names = table.schema.fields.map((f) => f.name);
  const rows = [];
  for (let i = 0; i < table.numRows; i++) {
    const row = {};
    for (const c of names) row[c] = plain(table.getChild(c).get(i));
    rows.push(row);
  }
  return rows;
}

const out = {};
for (const path of process.argv.slice(2)) {
  if (path.endsWith(".parquet")) {
    out[path] = { hyparquet: await attempt(() => hyparquet(path)), duckdb: await attempt(() => duckdb(path)) };
  } else {
    out[path] = { "apache-arrow": await attempt(() => arrow(path)) };
  }
}
process.stdout.write(JSON.stringify(out) + "\n");
