package export

import (
	"encoding/json"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/finetune"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

// reasoningOf is the reasoning text the test gives step j of episode i: every third
// episode has none on any step, so that rows with and without it mix.
func reasoningOf(i, j int) string {
	if i%3 == 2 {
		return ""
	}
	return fmt.Sprintf("Episode %d, step %d: what I know, and \"what\" <to> find next.\n日本", i, j+1)
}

// reasoningEpisodes are toolEpisodes with reasoning texts on their steps.
func reasoningEpisodes(n int) func() iter.Seq2[pipeline.Episode, error] {
	return episodetest.Stream(n, func(i int, ep *pipeline.Episode) {
		ep.Steps = slices.Clone(ep.Steps)
		for j := range ep.Steps {
			ep.Steps[j].Reasoning = reasoningOf(i, j)
		}
	})
}

// ownFormats are the JSONL formats whose reasoning this file checks.
var ownFormats = []string{"openai-chat", "openai-tools", "axolotl-chat", "agentgym", "completion", "alpaca"}

// assistantTexts returns, per assistant turn of a row of format, the turn's text and its
// reasoning_content (completion and alpaca: the trained text, no field).
func assistantTexts(t *testing.T, format string, row map[string]any) (texts, fields []string) {
	t.Helper()
	switch format {
	case "completion":
		return []string{row["completion"].(string)}, []string{""}
	case "alpaca":
		return []string{row["output"].(string)}, []string{""}
	}
	key, role, text := "messages", "assistant", "content"
	if format == "agentgym" {
		key, role, text = "conversations", "gpt", "value"
	}
	for _, m := range row[key].([]any) {
		turn := m.(map[string]any)
		if turn["role"] != role && turn["from"] != role {
			continue
		}
		s, _ := turn[text].(string)
		r, _ := turn["reasoning_content"].(string)
		texts, fields = append(texts, s), append(fields, r)
	}
	return texts, fields
}

// TestReasoningInEveryOwnFormat exports reasoning-bearing episodes with export.reasoning
// keep, inline and drop, and finds each step's reasoning exactly where the mode puts it:
// keep in reasoning_content (nowhere in completion and alpaca), inline as <think> text
// before the thought, drop nowhere; and never in the thought's place.
func TestReasoningInEveryOwnFormat(t *testing.T) {
	const n = 12
	for _, mode := range ReasoningModes {
		t.Run(mode, func(t *testing.T) {
			cfg := pipeline.ExportConfig{Formats: ownFormats, ValidationFraction: 0, SplitSeed: 1, Views: []string{ViewReAct},
				CorrectOnly: true, Weights: true, Reasoning: mode}
			res, dir := runExport(t, cfg, reasoningEpisodes(n))
			want := map[string]bool{} // every reasoning text the episodes hold
			for ep, err := range reasoningEpisodes(n)() {
				if err != nil {
					t.Fatal(err)
				}
				for _, st := range ep.Steps {
					if st.Reasoning != "" {
						want[st.Reasoning] = true
					}
				}
			}
			for _, f := range res.Files {
				if !slices.Contains(ownFormats, f.Format) {
					continue
				}
				found := map[string]int{}
				for _, row := range readJSONLRows(t, filepath.Join(dir, f.Path)) {
					texts, fields := assistantTexts(t, f.Format, row)
					for k, text := range texts {
						if fields[k] != "" {
							found[fields[k]]++
							if mode != ReasoningKeep {
								t.Errorf("%s under %s: reasoning_content %q", f.Path, mode, fields[k])
							}
						}
						if r, ok := strings.CutPrefix(text, "<think>\n"); ok {
							r, _, ok = strings.Cut(r, "\n</think>\n\n")
							if !ok || mode != ReasoningInline {
								t.Errorf("%s under %s: turn %q", f.Path, mode, text)
							}
							found[r]++
						} else if strings.Contains(text, "<think>") || strings.Contains(text, "what I know") {
							t.Errorf("%s under %s: reasoning elsewhere in %q", f.Path, mode, text)
						}
					}
				}
				switch {
				case mode == ReasoningDrop || mode == ReasoningKeep && (f.Format == "completion" || f.Format == "alpaca"):
					if len(found) != 0 {
						t.Errorf("%s under %s: %d reasoning texts, want none", f.Path, mode, len(found))
					}
				default:
					for r := range want {
						if found[r] == 0 {
							t.Errorf("%s under %s: reasoning %q missing", f.Path, mode, r)
						}
					}
					for r, c := range found {
						if !want[r] || c != 1 && f.Format != "completion" && f.Format != "alpaca" {
							t.Errorf("%s under %s: reasoning %q found %d times", f.Path, mode, r, c)
						}
					}
				}
			}
		})
	}
}

// TestWithoutReasoningNothingChanges exports the same episodes without reasoning under
// every mode: every JSONL file is the same bytes.
func TestWithoutReasoningNothingChanges(t *testing.T) {
	var first map[string][]byte
	for _, mode := range ReasoningModes {
		cfg := pipeline.ExportConfig{Formats: append(slices.Clone(ownFormats), "sharegpt", "hf-tools", "sharegpt-tools"), ValidationFraction: 0.2,
			SplitSeed: 1, Views: []string{ViewReAct, ViewAct, ViewStandard}, CorrectOnly: true, Reasoning: mode}
		res, dir := runExport(t, cfg, toolEpisodes(20))
		got := map[string][]byte{}
		for _, f := range res.Files {
			if strings.Contains(f.Path, ".jsonl") {
				got[f.Path] = readFile(t, filepath.Join(dir, f.Path))
			}
		}
		if first == nil {
			first = got
			continue
		}
		for p, b := range first {
			if string(got[p]) != string(b) {
				t.Errorf("%s differs under export.reasoning %s", p, mode)
			}
		}
	}
}

// TestReasoningUploadPassesOpenAIChecks: the openai-chat and openai-tools files carry
// reasoning_content, which OpenAI's checks refuse; what reactgen train uploads
// (finetune.ForUpload) passes them, and is the file exported with export.reasoning drop.
func TestReasoningUploadPassesOpenAIChecks(t *testing.T) {
	const n = 30
	c := o200k(t)
	files := map[string]map[string][]byte{}
	for _, mode := range []string{ReasoningKeep, ReasoningDrop} {
		cfg := pipeline.ExportConfig{Formats: []string{"openai-chat", "openai-tools"}, ValidationFraction: 0.2, SplitSeed: 1,
			Views: []string{ViewReAct}, CorrectOnly: true, Weights: true, System: "Answer.", Reasoning: mode}
		res, dir := runExport(t, cfg, reasoningEpisodes(n))
		files[mode] = map[string][]byte{}
		for _, f := range res.Files {
			if f.Format == "openai-chat" || f.Format == "openai-tools" {
				files[mode][f.Path] = readFile(t, filepath.Join(dir, f.Path))
			}
		}
	}
	refused := 0
	for path, b := range files[ReasoningKeep] {
		for _, line := range readLinesOf(b) {
			for _, e := range checkOpenAIRow(line, c) {
				if strings.Contains(e, "message_unrecognized_key") {
					refused++
				}
			}
		}
		up, err := finetune.ForUpload(b)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		dropped := readLinesOf(files[ReasoningDrop][path])
		for i, line := range readLinesOf(up) {
			for _, e := range checkOpenAIRow(line, c) {
				t.Errorf("%s line %d as uploaded: %s", path, i+1, e)
			}
			var a, b any
			if json.Unmarshal(line, &a) != nil || i >= len(dropped) || json.Unmarshal(dropped[i], &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("%s line %d as uploaded differs from the export without reasoning", path, i+1)
			}
		}
	}
	if refused == 0 {
		t.Error("OpenAI's checks refused no row with reasoning_content: the test checks nothing")
	}
	// A file without reasoning is uploaded byte for byte.
	for path, b := range files[ReasoningDrop] {
		up, err := finetune.ForUpload(b)
		if err != nil || string(up) != string(b) {
			t.Errorf("%s without reasoning: changed for upload (%v)", path, err)
		}
	}
}

func readLinesOf(b []byte) [][]byte {
	var out [][]byte
	for l := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
		out = append(out, []byte(l))
	}
	return out
}

// TestReasoningAndTokensInArrowAndParquet reads the Arrow and Parquet files back: each
// step's reasoning, log-probabilities and token ids, and each message's reasoning.
func TestReasoningAndTokensInArrowAndParquet(t *testing.T) {
	kept := goldenReasoningKept()
	cfg := pipeline.ExportConfig{Formats: []string{"arrow-file", "parquet"}, ValidationFraction: 0, SplitSeed: 1, Views: []string{ViewReAct}, CorrectOnly: true}
	res, dir := runExport(t, cfg, func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(kept) })
	for _, f := range res.Files {
		if f.Format != "arrow-file" && f.Format != "parquet" {
			continue
		}
		exs := readExamples(t, f.Format, filepath.Join(dir, f.Path))
		byID := map[string]Example{}
		for _, ex := range exs {
			byID[ex.ID] = ex
		}
		for _, ep := range kept {
			ex, ok := byID[ep.ID]
			if !ok {
				t.Fatalf("%s: no example %s", f.Path, ep.ID)
			}
			msg := 0
			for j, st := range ep.Steps {
				got := ex.Steps[j]
				var c pipeline.Call
				if len(st.Calls) > 0 {
					c = st.Calls[len(st.Calls)-1]
				}
				if got.Reasoning != st.Reasoning || !slices.Equal(got.Logprobs, c.Logprobs) ||
					!slices.Equal(got.PromptTokenIDs, c.PromptTokenIDs) || !slices.Equal(got.CompletionTokenIDs, c.CompletionTokenIDs) {
					t.Errorf("%s %s step %d: %+v, want reasoning %q and call %+v", f.Path, ep.ID, j+1, got, st.Reasoning, c)
				}
				for ; msg < len(ex.Messages) && ex.Messages[msg].Role != RoleAssistant; msg++ {
				}
				if msg >= len(ex.Messages) || ex.Messages[msg].Reasoning != st.Reasoning {
					t.Errorf("%s %s step %d: message reasoning differs", f.Path, ep.ID, j+1)
				}
				msg++
			}
		}
	}
}
