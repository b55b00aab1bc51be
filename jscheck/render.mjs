// Renders conversations through published chat templates with @huggingface/jinja, the
// way transformers' apply_chat_template calls a template: messages, tools (null when a
// row has none), add_generation_prompt false and the tokenizer's special tokens, under
// trim_blocks and lstrip_blocks. It also reports the template's {% generation %} spans,
// the assistant-only loss mask that transformers' AssistantTracker records.
//
//   node render.mjs render < request.json
//     request: {"templates": {name: path}, "rows": [{"messages": [...], "tools": [...]}],
//               "tokens": {"bos_token": ..., ...}}
//     prints {name: [{"text", "spans": [[start, end], ...] (UTF-8 byte offsets),
//                     "error"}]} (one entry per row, in order)
//   node render.mjs merge FILE...
//     prints each JSONL file's rows after DuckDB's read_json inference (the union of the
//     keys of every object at one place in the rows, missing keys filled with null, as
//     Arrow's JSON reader infers one struct): {path: [row, ...]}
//
// @huggingface/jinja accepts {% generation %} but drops it, so the spans are found from
// the engine's own output: each tag is replaced, keeping its whitespace control, by a
// block that emits one private-use character (U+E000 at the start, U+E001 at the end),
// and the characters' places in the output are the span bounds. A template whose text
// holds either character is refused.
import { readFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";
import { DuckDBInstance } from "@duckdb/node-api";

const OPEN = "\uE000";
const CLOSE = "\uE001";

// marked returns the template source with its generation tags made into markers.
function marked(src) {
  if (src.includes(OPEN) || src.includes(CLOSE)) throw new Error("template holds U+E000 or U+E001");
  return src.replace(/{%(-?)\s*(end)?generation\s*(-?)%}/g, (_, l, end, r) =>
    `{%${l} if true %}${end ? CLOSE : OPEN}{% endif ${r}%}`);
}

// spansOf strips the markers from out and returns the text and the spans as UTF-8 byte
// offsets into it.
function spansOf(out) {
  let text = "";
  let bytes = 0;
  let last = 0;
  const spans = [];
  let open = -1;
  for (let i = 0; i < out.length; i++) {
    const c = out[i];
    if (c !== OPEN && c !== CLOSE) continue;
    const piece = out.slice(last, i);
    text += piece;
    bytes += Buffer.byteLength(piece, "utf8");
    last = i + 1;
    if (c === OPEN) {
      if (open >= 0) throw new Error("generation block inside a generation block");
      open = bytes;
    } else {
      if (open < 0) throw new Error("endgeneration without generation");
      spans.push([open, bytes]);
      open = -1;
    }
  }
  text += out.slice(last);
  if (open >= 0) throw new Error("generation block not closed");
  return { text, spans };
}

async function render() {
  const req = JSON.parse(readFileSync(0, "utf8"));
  const out = {};
  for (const [name, path] of Object.entries(req.templates)) {
    const tpl = new Template(marked(readFileSync(path, "utf8")));
    out[name] = req.rows.map((row) => {
      try {
        const raw = tpl.render({
          ...(req.tokens ?? {}),
          messages: row.messages,
          tools: row.tools ?? null,
          add_generation_prompt: false,
        });
        return spansOf(raw);
      } catch (e) {
        return { error: String(e && e.message ? e.message : e) };
      }
    });
  }
  return out;
}

async function merge(paths) {
  const db = await DuckDBInstance.create(":memory:");
  const con = await db.connect();
  const out = {};
  for (const path of paths) {
    const p = path.replaceAll("'", "''");
    const reader = await con.runAndReadAll(
      `select to_json(t) as row from read_json('${p}', format='newline_delimited', sample_size=-1, maximum_depth=-1) as t`);
    out[path] = reader.getRowObjectsJson().map((r) => JSON.parse(r.row));
  }
  return out;
}

const [mode, ...args] = process.argv.slice(2);
let result;
if (mode === "render") result = await render();
else if (mode === "merge") result = await merge(args);
else {
  process.stderr.write("usage: render.mjs render < request.json | render.mjs merge FILE...\n");
  process.exit(2);
}
process.stdout.write(JSON.stringify(result) + "\n");
