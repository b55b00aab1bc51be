package main

// Reasoning text through the command line: a fake reasoning model that answers its
// thinking as vLLM does (reasoning) or as DeepSeek and SGLang do (reasoning_content),
// online and in batches, in the chat and tools formats; the reasoning is kept per step
// in the episode record, apart from the thought, and survives a cached re-run, a resume
// and a merge of shards.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// reasoningModel is the demo's fake model with a reasoning text for every reply, sent
// under field: one that depends on the request, so that a replayed or resumed step can be
// told from a re-asked one only by its record.
func reasoningModel(t *testing.T, field string) (*llmtest.Server, func(llmtest.Req) string) {
	t.Helper()
	model := newFakeModel(t)
	reasoning := func(r llmtest.Req) string {
		var all strings.Builder
		for _, m := range r.Messages {
			all.WriteString(m.Content)
		}
		all.WriteString(r.Prompt)
		return fmt.Sprintf("The reply I weigh, %08x: the question's page first, then its facts.", hashOf(all.String()))
	}
	srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		rep := model.handle(ctx, r)
		rep.Reasoning, rep.ReasoningField = reasoning(r), field
		return rep
	})
	return srv, reasoning
}

// stepsReasoning maps each episode's id to its steps' reasoning texts, and checks that
// every step that made a request carries its call's reasoning apart from its thought.
func stepsReasoning(t *testing.T, run string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for id, ep := range effective(logLines(t, filepath.Join(run, pipeline.EpisodesFile))) {
		for i, st := range ep.Steps {
			if len(st.Calls) == 0 {
				continue
			}
			if st.Reasoning == "" || st.Reasoning != st.Calls[len(st.Calls)-1].Reasoning && !strings.Contains(st.Reasoning, st.Calls[0].Reasoning) ||
				st.Reasoning == st.Thought || strings.Contains(st.Thought, "I weigh") {
				t.Errorf("%s step %d: reasoning %q, calls' %q, thought %q", id, i+1, st.Reasoning, st.Calls[0].Reasoning, st.Thought)
			}
			out[id] = append(out[id], st.Reasoning)
		}
		if len(out[id]) == 0 {
			t.Errorf("%s: no step with a call", id)
		}
	}
	return out
}

func sameReasoning(t *testing.T, what string, got, want map[string][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d episodes, want %d", what, len(got), len(want))
	}
	for id, w := range want {
		if fmt.Sprint(got[id]) != fmt.Sprint(w) {
			t.Errorf("%s: episode %s reasoning %q, want %q", what, id, got[id], w)
		}
	}
}

func TestReasoningKeptThroughCacheResumeBatchAndMerge(t *testing.T) {
	for _, field := range []string{"reasoning", "reasoning_content"} {
		for _, format := range []string{"chat", "tools"} {
			t.Run(field+"/"+format, func(t *testing.T) {
				srv, _ := reasoningModel(t, field)
				tmp := t.TempDir()
				sets := func(more map[string]any) map[string]any {
					s := map[string]any{"generate.format": format, "task.limit": 16, "llm.cache_dir": filepath.Join(tmp, "cache")}
					for k, v := range more {
						s[k] = v
					}
					return s
				}
				res, whole := generateWith(t, filepath.Join(tmp, "whole"), srv.URL, sets(nil), nil)
				if res.code != 0 {
					t.Fatalf("exit %d: %s", res.code, res.stderr)
				}
				want := stepsReasoning(t, whole)

				// The same run over the cache sends nothing and keeps the reasoning.
				before := srv.Requests()
				res, again := generateWith(t, filepath.Join(tmp, "again"), srv.URL, sets(nil), nil)
				if res.code != 0 || srv.Requests() != before {
					t.Fatalf("cached re-run: exit %d, %d requests: %s", res.code, srv.Requests()-before, res.stderr)
				}
				sameReasoning(t, "cached re-run", stepsReasoning(t, again), want)

				// Every format this run's reasoning can go to carries it: kept in the
				// formats' fields, or inlined into the trained text.
				checkExportedReasoning(t, filepath.Join(tmp, "whole"), whole)

				// Stopped by the budget, then resumed without the cache.
				dir := filepath.Join(tmp, "resumed")
				for _, max := range []int{7, 0} {
					res, _ := generateWith(t, dir, srv.URL, sets(map[string]any{"llm.max_requests": max, "llm.cache": false, "generate.concurrency": 2}), nil)
					if res.code != 0 {
						t.Fatalf("max_requests %d: exit %d: %s", max, res.code, res.stderr)
					}
				}
				if m := readManifest(t, filepath.Join(dir, "run")); m.Resumes < 1 {
					t.Errorf("resumes %d, want 1", m.Resumes)
				}
				sameReasoning(t, "resumed run", stepsReasoning(t, filepath.Join(dir, "run")), want)

				// In batches, without the cache.
				res, batch := generateWith(t, filepath.Join(tmp, "batch"), srv.URL, sets(map[string]any{
					"llm.cache": false, "llm.mode": "batch", "llm.batch": map[string]any{"window": "50ms", "poll": "5ms"},
				}), nil)
				if res.code != 0 {
					t.Fatalf("batch: exit %d: %s", res.code, res.stderr)
				}
				sameReasoning(t, "batch run", stepsReasoning(t, batch), want)
				checkExportedReasoning(t, filepath.Join(tmp, "batch"), batch)

				// Two shards merged.
				var shards []string
				for i := range 2 {
					cfg := testConfig(t, filepath.Join(tmp, fmt.Sprintf("cfg-%d", i)), srv.URL, sets(nil))
					out := filepath.Join(tmp, fmt.Sprintf("shard-%d", i))
					if r := invoke(t, "", map[string]string{"OPENAI_API_KEY": "k"}, "generate", "--config", cfg, "--out", out, "--shard", fmt.Sprintf("%d/2", i)); r.code != 0 {
						t.Fatalf("shard %d: exit %d: %s", i, r.code, r.stderr)
					}
					shards = append(shards, out)
				}
				merged := filepath.Join(tmp, "merged")
				if r := invoke(t, "", nil, append([]string{"merge", merged}, shards...)...); r.code != 0 {
					t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
				}
				sameReasoning(t, "merged shards", stepsReasoning(t, merged), want)
			})
		}
	}
}

// checkExportedReasoning filters and exports run (generated with the config under dir)
// with export.reasoning keep and inline, and finds every kept step's reasoning in every
// file of the formats that carry it: as a reasoning_content value (keep: openai-chat,
// openai-tools, axolotl-chat, agentgym) or as <think> text in the trained text (inline:
// those and completion, alpaca).
func checkExportedReasoning(t *testing.T, dir, run string) {
	t.Helper()
	cfg := filepath.Join(dir, "cfg", "config.yaml")
	if _, err := os.Stat(cfg); err != nil {
		t.Fatalf("no config beside the run: %v", err)
	}
	if r := invoke(t, "", nil, "filter", "--config", cfg, "--out", run); r.code != 0 {
		t.Fatalf("filter: exit %d: %s", r.code, r.stderr)
	}
	var texts []string
	for ep, err := range pipeline.ReadKept(filepath.Join(run, pipeline.KeptFile)) {
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range ep.Steps {
			if st.Reasoning != "" {
				texts = append(texts, st.Reasoning)
			}
		}
	}
	if len(texts) == 0 {
		t.Fatal("no kept step carries reasoning")
	}
	cases := map[string][]string{
		"keep":   {"openai-chat", "openai-tools", "axolotl-chat", "agentgym"},
		"inline": {"openai-chat", "openai-tools", "axolotl-chat", "agentgym", "completion", "alpaca"},
	}
	for mode, formats := range cases {
		r := invoke(t, "", nil, "export", "--config", cfg, "--out", run, "--set", "export.reasoning="+mode,
			"--set", "export.formats=["+strings.Join(formats, ",")+"]", "--set", "export.validation_fraction=0")
		if r.code != 0 {
			t.Fatalf("export %s: exit %d: %s", mode, r.code, r.stderr)
		}
		for _, format := range formats {
			values := jsonStrings(t, filepath.Join(run, "export", format+".train.jsonl"))
			for _, text := range texts {
				found := false
				for _, v := range values {
					if mode == "keep" && v.key == "reasoning_content" && v.s == text ||
						mode == "inline" && strings.Contains(v.s, "<think>\n"+text+"\n</think>\n\n") {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("export.reasoning %s, %s: reasoning %q not found", mode, format, text)
				}
			}
		}
	}
}

type keyed struct{ key, s string }

// jsonStrings lists every string value of a JSONL file with the key it is under.
func jsonStrings(t *testing.T, path string) []keyed {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []keyed
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case string:
			out = append(out, keyed{key, v})
		case []any:
			for _, e := range v {
				walk(key, e)
			}
		case map[string]any:
			for k, e := range v {
				walk(k, e)
			}
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		walk("", v)
	}
	return out
}
