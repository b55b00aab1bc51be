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

// int turns a 64-bit integer into a number when exact, else into its decimal string.
function int(v) {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
}

// plain turns decoded values (Arrow vectors and structs, typed arrays, BigInt) into
// JSON-ready values.
function plain(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === "bigint") return int(v);
  if (Array.isArray(v)) return v.map(plain);
  if (ArrayBuffer.isView(v)) return Array.from(v, plain);
  if (typeof v === "object") {
    if (typeof v.toArray === "function" && !(v.constructor && v.constructor.name === "Object")) {
      if (typeof v.toJSON === "function" && !Array.isArray(v.toJSON())) return plain(v.toJSON());
      return Array.from(v.toArray(), plain);
    }
    const out = {};
    for (const [k, x] of Object.entries(typeof v.toJSON === "function" ? v.toJSON() : v)) out[k] = plain(x);
    return out;
  }
  return v;
}

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
