// Prints the o200k_base and cl100k_base token counts of each file named on the command line,
// as one JSON object {file: {o200k_base: n, cl100k_base: n}}, counted by js-tiktoken: an
// implementation independent of the Go one that internal/bpe wraps.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { Tiktoken } from "js-tiktoken/lite";
import o200k from "js-tiktoken/ranks/o200k_base";
import cl100k from "js-tiktoken/ranks/cl100k_base";

const encodings = { o200k_base: new Tiktoken(o200k), cl100k_base: new Tiktoken(cl100k) };
const out = {};
for (const path of process.argv.slice(2)) {
  const text = readFileSync(path, "utf8");
  out[basename(path)] = {};
  for (const [name, enc] of Object.entries(encodings)) {
    // No special tokens are allowed or disallowed: the text is counted as plain text.
    out[basename(path)][name] = enc.encode(text, [], []).length;
  }
}
process.stdout.write(JSON.stringify(out, null, 2) + "\n");
