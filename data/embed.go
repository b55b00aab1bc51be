// Package data embeds reactgen's bundled data: the few-shot exemplars of each task
// (prompts/hotpotqa.json, prompts/fever.json) and the demo world (demo/corpus.jsonl,
// demo/hotpotqa.json, demo/fever.jsonl), a fictional encyclopedia with questions and
// claims that runs the whole pipeline offline. It consumes nothing and produces FS.
//
// Imports: nothing of reactgen (data/demoworld and data/download import pipeline).
package data

import "embed"

// FS holds prompts/ and demo/ as they are in the source tree. Paths use forward
// slashes: FS.ReadFile("prompts/hotpotqa.json").
//
//go:embed prompts demo
var FS embed.FS
