package main

// ALFWorld and WebShop through `reactgen run`, against fake AgentGym servers on
// 127.0.0.1 (env/agentgym/agentgymtest) and a fake model that plays their games: the
// notebooks' prompts byte for byte, the successes the model's actions earn, the actions
// as the servers received them, and every export format.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reactgen/reactgen/env/agentgym/agentgymtest"
	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
	"gopkg.in/yaml.v3"
)

// gameConfig writes a run config for a game task and returns its path.
func gameConfig(t *testing.T, dir string, sections map[string]map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(sections)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeJSON writes v as a JSON file and returns its path.
func writeJSONFile(t *testing.T, path string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// householdPlayer answers ALFWorld completion prompts: for the game whose first
// observation the prompt holds after "Here is the task.\n", it thinks once (react),
// then plays the game's solution; on games it does not know, it looks forever.
func householdPlayer(games []agentgymtest.Game, react bool) (llmtest.Handler, func() []string) {
	var mu sync.Mutex
	var prompts []string
	h := func(_ context.Context, r llmtest.Req) llmtest.Reply {
		mu.Lock()
		prompts = append(prompts, r.Prompt)
		mu.Unlock()
		_, task, _ := strings.Cut(r.Prompt, "\nHere is the task.\n")
		done := strings.Count(task, "\n>") - 1
		for gi, g := range games {
			if !strings.HasPrefix(task, g.Observation+"\n>") {
				continue
			}
			var script []string
			if react {
				script = append(script, fmt.Sprintf("think: I am to solve game %d.", gi))
			}
			for _, m := range g.Solution {
				script = append(script, m.Action)
			}
			if gi == 2 {
				break // the examine game: the model never finds its way
			}
			if done < len(script) {
				return llmtest.Reply{Texts: []string{" " + script[done] + "\n"}}
			}
		}
		return llmtest.Reply{Texts: []string{" look"}}
	}
	return h, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(prompts)
	}
}

func TestALFWorldRunThroughAgentGym(t *testing.T) {
	games := agentgymtest.Household()
	tmp := t.TempDir()
	entries := agentgymtest.ALFWorldPrompts()
	promptFile := writeJSONFile(t, filepath.Join(tmp, "alfworld_prompts.json"), entries)
	for _, method := range []string{"react", "act"} {
		t.Run(method, func(t *testing.T) {
			envSrv := agentgymtest.NewALFWorld(t, games)
			player, prompts := householdPlayer(games, method == "react")
			model := llmtest.NewServer(t, player)
			out := filepath.Join(tmp, method, "run")
			cfg := gameConfig(t, filepath.Join(tmp, method), map[string]map[string]any{
				"task":     {"name": "alfworld", "offset": 0, "limit": 3},
				"env":      {"url": envSrv.URL, "timeout": "5s"},
				"llm":      {"base_url": model.URL, "model": "fake-model", "max_retries": 1, "backoff_base": "5ms", "backoff_max": "10ms", "request_max_tokens": 100},
				"generate": {"method": method, "format": "completion", "exemplars": promptFile, "shuffle": false, "concurrency": 2, "target_correct": 0, "progress": "off"},
				"export":   {"formats": export.Formats(), "validation_fraction": 0},
			})
			res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "sk-test"}, "run", "--config", cfg, "--out", out)
			if res.code != 0 {
				t.Fatalf("exit %d: %v\n%s", res.code, res.err, res.stderr)
			}
			eps := byQuestion(logLines(t, filepath.Join(out, pipeline.EpisodesFile)))
			if len(eps) != 3 {
				t.Fatalf("%d episodes, want 3", len(eps))
			}
			kind := method
			for gi, g := range games {
				ep := eps[fmt.Sprintf("alfworld-%d", gi)]
				if ep.Question != g.Observation || ep.QuestionType != g.TaskType {
					t.Errorf("game %d: question %q type %q", gi, ep.Question, ep.QuestionType)
				}
				won := gi != 2
				if ep.Correct != won || ep.Reward == nil || (*ep.Reward == 1) != won || ep.Finished != won {
					t.Errorf("game %d: correct %v finished %v reward %v, want won=%v", gi, ep.Correct, ep.Finished, ep.Reward, won)
				}
				if !won && (len(ep.Steps) != 49 || ep.StopReason != pipeline.StopMaxSteps) {
					t.Errorf("game %d: %d steps, stop %s; want the notebook's 49 actions", gi, len(ep.Steps), ep.StopReason)
				}
				for _, st := range ep.Steps {
					if strings.HasPrefix(st.Action, "think:") && (st.Observation != "OK." || st.ActionType != pipeline.ActionThink) {
						t.Errorf("game %d: think step %+v", gi, st)
					}
				}
				// The first two prompts of the game, as alfworld.ipynb builds them.
				typ := map[int]string{0: "put", 1: "clean", 2: "examine"}[gi]
				init := "Interact with a household to solve a task. Here are two examples.\n" + entries[kind+"_"+typ+"_1"] + entries[kind+"_"+typ+"_0"] + "\nHere is the task.\n" + g.Observation + "\n>"
				first := ep.Steps[0]
				second := init + " " + first.Action + "\n" + first.Observation + "\n>"
				all := prompts()
				if !slices.Contains(all, init) || !slices.Contains(all, second) {
					t.Errorf("game %d: the notebook's prompts were not sent:\n%q\n%q", gi, init, second)
				}
			}
			// Every action the server received is one of an episode's steps, in order.
			var want, got []string
			for gi := range games {
				for _, st := range eps[fmt.Sprintf("alfworld-%d", gi)].Steps {
					want = append(want, st.Action)
				}
			}
			for _, acts := range envSrv.AllActions() {
				got = append(got, acts...)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(want, got) {
				t.Errorf("the server received %d actions, the episodes record %d", len(got), len(want))
			}
			kept := logLines(t, filepath.Join(out, pipeline.KeptFile))
			if len(kept) != 2 {
				t.Fatalf("kept %d, want the 2 won games", len(kept))
			}
			checkExports(t, out)
		})
	}
}

// checkExports fails when an export format wrote no file.
func checkExports(t *testing.T, out string) {
	t.Helper()
	m := readManifest(t, out)
	formats := map[string]int{}
	for _, o := range m.Outputs {
		if o.Stage == pipeline.StageExport && o.Format != "" {
			formats[o.Format] += o.Rows
		}
	}
	for _, f := range export.Formats() {
		if formats[f] == 0 {
			t.Errorf("export format %s wrote no rows (outputs %v)", f, formats)
		}
	}
	t.Logf("export rows: %v", formats)
}
