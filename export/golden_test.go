package export

import (
	"bytes"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenDir holds one golden file per exported file: the JSONL formats byte for byte,
// the binary ones (arrow, arrow-file, parquet) as their schema and rows read back with
// the Arrow readers and written as JSON, and the dataset card.
const goldenDir = "testdata/golden"

// goldenKept is the small input of the golden export: a HotpotQA trajectory, a FEVER
// claim, and one whose texts need escaping in JSON.
func goldenKept() []pipeline.Episode {
	hotpot := episodetest.Small()
	fever := episodetest.Small()
	fever.ID, fever.QuestionID, fever.Task = "ep2", "q2", pipeline.TaskFEVER
	fever.Question, fever.Answer, fever.Prediction = "The Lantern Museum is in Oslo.", pipeline.LabelSupports, pipeline.LabelSupports
	fever.Steps[1].Thought, fever.Steps[1].Action, fever.Steps[1].Argument = "It is.", "Finish[SUPPORTS]", pipeline.LabelSupports
	odd := episodetest.Episode("ep3", "q3", "Search[Ünïcode <&> \"quotes\"]", "Lookup[tab\there]", "Finish[Aldbrook]")
	odd.Steps[0].Observation = "Line one\nline two \\ backslash \u2028 separator, bad \xff byte."
	odd.Steps[2].Argument = episodetest.Answer
	return []pipeline.Episode{hotpot, fever, odd}
}

// goldenReasoningKept is goldenKept with a reasoning model's texts: reasoning on every
// step of the first episode (one with characters JSON escapes), on the second's first step
// only, none on the third, and the log-probabilities and token ids of the first's calls.
func goldenReasoningKept() []pipeline.Episode {
	eps := goldenKept()
	for i := range eps {
		eps[i].Steps = slices.Clone(eps[i].Steps)
	}
	eps[0].Steps[0].Reasoning = "The question names the Lantern Museum; its page should say where it is."
	eps[0].Steps[1].Reasoning = "The page says \"Aldbrook\" <&>\nso that is the answer."
	eps[0].Steps[0].Calls = []pipeline.Call{{Completion: "c", Logprobs: []float64{-0.25, -1.5e-7}, PromptTokenIDs: []int64{1, 2, 3}, CompletionTokenIDs: []int64{40, 41}}}
	eps[1].Steps[0].Reasoning = "A claim about a museum: search it."
	return eps
}

// goldenRejected is a wrong answer to q1, for the preference pairs.
func goldenRejected() iter.Seq2[pipeline.Rejected, error] {
	wrong := episodetest.Small()
	wrong.ID, wrong.Prediction, wrong.Correct, wrong.EM, wrong.F1 = "ep1-wrong", "Bergen", false, 0, 0
	wrong.Steps[1].Action, wrong.Steps[1].Argument = "Finish[Bergen]", "Bergen"
	return func(yield func(pipeline.Rejected, error) bool) {
		yield(pipeline.Rejected{Episode: wrong, Rejects: []pipeline.Reject{{Rule: "correct", Code: "wrong_answer"}}}, nil)
	}
}

// reasoningGoldenFormats are the formats whose reasoning export this package decides (the
// golden reasoning cases), beside the binary ones.
var reasoningGoldenFormats = []string{"openai-chat", "openai-tools", "axolotl-chat", "agentgym", "completion", "alpaca", "arrow-file", "parquet"}

// TestGoldenFiles exports the golden input to every format (react view) with the
// pairs file, and compares each file with its golden. A change of format shows up as a
// diff here; after a deliberate change, refresh with go test ./export -update.
func TestGoldenFiles(t *testing.T) {
	tests := []struct {
		name string
		cfg  pipeline.ExportConfig
	}{
		{"formats", pipeline.ExportConfig{
			Formats: append(slices.Clone(allFormats), "openai-tools", "hf-tools", "sharegpt-tools"), Views: []string{ViewReAct}, System: "Answer the question.", Weights: true,
			ObservationRole: true, ValidationFraction: 0.4, SplitSeed: 2, Pairs: true, CorrectOnly: true,
		}},
		// The card alone: its byte counts are of JSONL files only, so that it changes
		// with the text formats and not with the bytes of a binary writer.
		{"card", pipeline.ExportConfig{Formats: []string{"openai-chat", "sharegpt"}, ValidationFraction: 0.4, SplitSeed: 2}},
		// Reasoning-bearing episodes, kept in the formats' fields and inlined.
		{"reasoning", pipeline.ExportConfig{
			Formats: reasoningGoldenFormats, Views: []string{ViewReAct}, System: "Answer the question.", Weights: true,
			ValidationFraction: 0.4, SplitSeed: 2, CorrectOnly: true, Reasoning: ReasoningKeep,
		}},
		{"reasoning-inline", pipeline.ExportConfig{
			Formats: reasoningGoldenFormats, Views: []string{ViewReAct}, System: "Answer the question.", Weights: true,
			ValidationFraction: 0.4, SplitSeed: 2, CorrectOnly: true, Reasoning: ReasoningInline,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "export")
			card := CardInfo{RunID: "run-golden", Model: "test-model", PromptHash: "ph", CorpusHash: "ch", Task: "hotpotqa",
				Method: "react", Summary: pipeline.Summary{Episodes: 4, Kept: 3, RejectReasons: map[string]int{"correct/wrong_answer": 1},
					Usage: pipeline.Usage{PromptTokens: 4000, CompletionTokens: 300, TotalTokens: 4300, CostUSD: 0.01}}}
			kept := goldenKept
			if strings.HasPrefix(tt.name, "reasoning") {
				kept = goldenReasoningKept
			}
			res, err := Run(t.Context(), RunOptions{Config: tt.cfg, Dir: dir, Card: card,
				Kept: func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(kept()) }, Rejected: goldenRejected})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]byte{}
			for _, f := range res.Files {
				path := filepath.Join(dir, filepath.FromSlash(f.Path))
				switch f.Format {
				case "card":
					if strings.HasPrefix(tt.name, "reasoning") {
						got["README.md"] = readFile(t, path) // where the reasoning went
					}
					continue // TestGoldenFiles/card
				case "arrow", "arrow-file", "parquet":
					got[f.Path+".json"] = binaryAsJSON(t, path, f.Format)
				default:
					if tt.name == "card" {
						continue
					}
					got[f.Path] = readFile(t, path)
				}
			}
			if tt.name == "card" {
				got = map[string][]byte{"README.md": readFile(t, filepath.Join(dir, "README.md"))}
			}
			checkGolden(t, filepath.Join(goldenDir, tt.name), got)
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkGolden compares files (paths relative to dir) with the golden files under dir,
// or rewrites dir with -update. A golden file that the export no longer writes fails too.
func checkGolden(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for rel, b := range files {
			path := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		want, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b, ok := files[rel]
		switch {
		case !ok:
			t.Errorf("%s: golden file of a file the export no longer writes (go test ./export -update)", path)
		case !bytes.Equal(b, want):
			t.Errorf("%s differs from what the export writes (go test ./export -update after a deliberate change):\n%s", path, firstDiff(b, want))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v (go test ./export -update writes the golden files)", err)
	}
	for rel := range files {
		if !seen[rel] {
			t.Errorf("%s: no golden file under %s (go test ./export -update)", rel, dir)
		}
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got %q\nwant %q", i+1, gl, wl)
		}
	}
	return "(same lines, different bytes)"
}

// binaryAsJSON reads an Arrow stream, Arrow file or Parquet file back with the Arrow
// readers and renders it as text: the schema (with its metadata), then one JSON object
// per row (array.RecordToJSON, keys sorted).
func binaryAsJSON(t *testing.T, path, format string) []byte {
	t.Helper()
	var rows bytes.Buffer
	schema := eachRecord(t, format, path, func(rec arrow.Record) {
		if err := array.RecordToJSON(rec, &rows); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	})
	return append([]byte(schema.String()+"\n"), rows.Bytes()...)
}
