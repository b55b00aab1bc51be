package main

// ALFWorld and WebShop through `reactgen run`, against fake AgentGym servers on
// 127.0.0.1 (env/agentgym/agentgymtest) and a fake model that plays their games: the
// notebooks' prompts byte for byte, the successes the model's actions earn, the actions
// as the servers received them, every export format, and a server that stops answering.

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

	"gopkg.in/yaml.v3"

	"github.com/reactgen/reactgen/env/agentgym/agentgymtest"
	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// writeSections writes a run config of sections as config.yaml in dir and returns its path.
func writeSections(t *testing.T, dir string, sections map[string]map[string]any) string {
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

// household sets up agentgymtest's household games: a temporary directory holding
// ALFWorld's prompts file, an ALFWorld server playing the games, and a model that plays
// each game's winning script.
func household(t *testing.T) (games []agentgymtest.Game, tmp, promptFile string, envSrv *agentgymtest.Server, player *gamePlayer) {
	t.Helper()
	games = agentgymtest.Household()
	tmp = t.TempDir()
	promptFile = writeJSONFile(t, filepath.Join(tmp, "alfworld_prompts.json"), agentgymtest.ALFWorldPrompts())
	envSrv = agentgymtest.NewALFWorld(t, games)
	player = &gamePlayer{task: pipeline.TaskALFWorld, scripts: householdScripts(games, true), fallback: "look"}
	return games, tmp, promptFile, envSrv, player
}

// writeJSONFile writes v as a JSON file and returns its path.
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

// gamePlayer is a fake model that plays games: scripts maps a game's first observation
// to the actions it plays, in order; past its script, or on a game it has none for, it
// plays fallback. It reads the game and how far it is from the request as each format
// renders it (completion: the text after the game's first observation; chat and tools:
// the first user turn and the assistant turns), answers text in completion and chat
// (with the completion's leading space) and one function call in tools, and records
// every completion prompt.
type gamePlayer struct {
	task     string
	scripts  map[string][]string
	fallback string

	mu      sync.Mutex
	prompts []string
}

func (p *gamePlayer) handle(_ context.Context, r llmtest.Req) llmtest.Reply {
	start, done := "", 0
	if r.Endpoint == "completions" {
		p.mu.Lock()
		p.prompts = append(p.prompts, r.Prompt)
		p.mu.Unlock()
		for ob := range p.scripts {
			if i := strings.LastIndex(r.Prompt, ob); i >= 0 {
				start, done = ob, strings.Count(r.Prompt[i+len(ob):], map[string]string{pipeline.TaskALFWorld: "\n>", pipeline.TaskWebShop: "\n\nAction:"}[p.task])-1
			}
		}
	} else {
		for _, m := range r.Messages {
			switch {
			case m.Role == "user" && start == "":
				start = m.Content
			case m.Role == "assistant":
				done++
			}
		}
	}
	action := p.fallback
	if s := p.scripts[start]; done < len(s) {
		action = s[done]
	}
	if len(r.Tools) > 0 {
		name, args, ok := tool.ParseCommand(p.task, action)
		if !ok {
			return llmtest.Reply{Texts: []string{action}}
		}
		return llmtest.Reply{ToolCalls: []llm.ToolCall{{Function: llm.FunctionCall{Name: name, Arguments: args}}}}
	}
	return llmtest.Reply{Texts: []string{" " + action + "\n"}}
}

func (p *gamePlayer) sent() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.prompts)
}

// householdScripts: the model thinks once (react), then plays games 0 and 1's solutions;
// game 2 it never solves.
func householdScripts(games []agentgymtest.Game, react bool) map[string][]string {
	scripts := map[string][]string{}
	for gi, g := range games[:2] {
		var s []string
		if react {
			s = append(s, fmt.Sprintf("think: I am to solve game %d.", gi))
		}
		for _, m := range g.Solution {
			s = append(s, m.Action)
		}
		scripts[g.Observation] = s
	}
	scripts[games[2].Observation] = nil
	return scripts
}

// serverActions are the actions a fake server received, sorted.
func serverActions(srv *agentgymtest.Server) []string {
	var got []string
	for _, acts := range srv.AllActions() {
		got = append(got, acts...)
	}
	slices.Sort(got)
	return got
}

func runGame(t *testing.T, dir string, sections map[string]map[string]any) (result, string) {
	t.Helper()
	out := filepath.Join(dir, "run")
	cfg := writeSections(t, dir, sections)
	return invoke(t, "", map[string]string{"OPENAI_API_KEY": "sk-test"}, "run", "--config", cfg, "--out", out), out
}

// playGames runs the games of sections in dir (runGame) and fails the test, naming the
// run what, unless it exits 0. It returns the run directory.
func playGames(t *testing.T, what, dir string, sections map[string]map[string]any) string {
	t.Helper()
	res, out := runGame(t, dir, sections)
	if res.code != 0 {
		t.Fatalf("%s: exit %d: %v\n%s", what, res.code, res.err, res.stderr)
	}
	return out
}

// outcomes are the last record of each game in run's episode log: the games' outcomes.
func outcomes(t *testing.T, run string) map[string]pipeline.Episode {
	t.Helper()
	return byQuestion(logLines(t, filepath.Join(run, pipeline.EpisodesFile)))
}

func TestALFWorldRunThroughAgentGym(t *testing.T) {
	games := agentgymtest.Household()
	tmp := t.TempDir()
	entries := agentgymtest.ALFWorldPrompts()
	promptFile := writeJSONFile(t, filepath.Join(tmp, "alfworld_prompts.json"), entries)
	for _, c := range []struct{ method, format string }{{"react", "completion"}, {"act", "completion"}, {"react", "chat"}, {"react", "tools"}} {
		t.Run(c.method+"-"+c.format, func(t *testing.T) {
			envSrv := agentgymtest.NewALFWorld(t, games)
			player := &gamePlayer{task: pipeline.TaskALFWorld, scripts: householdScripts(games, c.method == "react"), fallback: "look"}
			model := llmtest.NewServer(t, player.handle)
			res, out := runGame(t, filepath.Join(tmp, c.method+"-"+c.format), map[string]map[string]any{
				"task":     {"name": "alfworld", "offset": 0, "limit": 3},
				"env":      {"url": envSrv.URL, "timeout": "5s"},
				"llm":      {"base_url": model.URL, "model": "fake-model", "max_retries": 1, "backoff_base": "5ms", "backoff_max": "10ms", "request_max_tokens": 100},
				"generate": {"method": c.method, "format": c.format, "exemplars": promptFile, "shuffle": false, "concurrency": 2, "target_correct": 0, "progress": "off"},
				"export":   {"formats": export.Formats(), "validation_fraction": 0},
			})
			if res.code != 0 {
				t.Fatalf("exit %d: %v\n%s", res.code, res.err, res.stderr)
			}
			eps := outcomes(t, out)
			if len(eps) != 3 {
				t.Fatalf("%d episodes, want 3", len(eps))
			}
			var want []string
			for gi, g := range games {
				ep := eps[fmt.Sprintf("alfworld-%d", gi)]
				if ep.Question != g.Observation || ep.QuestionType != g.TaskType || ep.Format != c.format {
					t.Errorf("game %d: question %q type %q format %q", gi, ep.Question, ep.QuestionType, ep.Format)
				}
				won := gi != 2
				if ep.Correct != won || ep.Reward == nil || (*ep.Reward == 1) != won || ep.Finished != won {
					t.Errorf("game %d: correct %v finished %v reward %v, want won=%v", gi, ep.Correct, ep.Finished, ep.Reward, won)
				}
				if !won && (len(ep.Steps) != 49 || ep.StopReason != pipeline.StopMaxSteps) {
					t.Errorf("game %d: %d steps, stop %s; want the notebook's 49 actions", gi, len(ep.Steps), ep.StopReason)
				}
				if won && ep.Prediction != g.Solution[len(g.Solution)-1].Action {
					t.Errorf("game %d: prediction %q, want the winning action", gi, ep.Prediction)
				}
				for i, st := range ep.Steps {
					want = append(want, st.Action)
					if strings.HasPrefix(st.Action, "think:") && (st.Observation != "OK." || st.ActionType != pipeline.ActionThink) {
						t.Errorf("game %d: think step %+v", gi, st)
					}
					if c.format == "tools" && (st.ToolCall == nil || st.ToolCall.Name != st.ActionType) {
						t.Errorf("game %d step %d: tool call %+v for %s (%s)", gi, i+1, st.ToolCall, st.Action, st.ActionType)
					}
				}
				if c.format != "completion" {
					continue
				}
				// The first two prompts of the game, as alfworld.ipynb builds them.
				typ := map[int]string{0: "put", 1: "clean", 2: "examine"}[gi]
				init := "Interact with a household to solve a task. Here are two examples.\n" + entries[c.method+"_"+typ+"_1"] +
					entries[c.method+"_"+typ+"_0"] + "\nHere is the task.\n" + g.Observation + "\n>"
				first := ep.Steps[0]
				second := init + " " + first.Action + "\n" + first.Observation + "\n>"
				if all := player.sent(); !slices.Contains(all, init) || !slices.Contains(all, second) {
					t.Errorf("game %d: the notebook's prompts were not sent:\n%q\n%q", gi, init, second)
				}
			}
			// Every action the episodes record is one the server received, and no other.
			slices.Sort(want)
			if got := serverActions(envSrv); !slices.Equal(want, got) {
				t.Errorf("the server received %d actions, the episodes record %d", len(got), len(want))
			}
			if kept := logLines(t, filepath.Join(out, pipeline.KeptFile)); len(kept) != 2 {
				t.Fatalf("kept %d, want the 2 won games", len(kept))
			}
			checkExports(t, out, 2)
		})
	}
}

// shopScripts: goal 0 bought as asked (reward 1), goal 1's teapot in the wrong colour
// (reward 0.5).
func shopScripts(goals []agentgymtest.Goal, react bool) map[string][]string {
	start := func(g agentgymtest.Goal) string {
		return "WebShop [SEP] Instruction: [SEP] " + g.Instruction + " [SEP] Search"
	}
	think := func(s string) []string {
		if react {
			return []string{"think[" + s + "]"}
		}
		return nil
	}
	return map[string][]string{
		start(goals[0]): slices.Concat([]string{"search[feather quill pen ink]"}, think("B0QUILL001 has ink and a pack of 3."),
			[]string{"click[B0QUILL001]", "click[pack of 3]", "click[Buy Now]"}),
		start(goals[1]): slices.Concat([]string{"search[stoneware teapot infuser]", "click[B0TEAPOT02]"}, think("Ochre looks nice."),
			[]string{"click[ochre]", "click[Buy Now]"}),
	}
}

func TestWebShopRunThroughAgentGym(t *testing.T) {
	products, goals := agentgymtest.Shop()
	tmp := t.TempDir()
	entries := agentgymtest.WebShopPrompts()
	promptFile := writeJSONFile(t, filepath.Join(tmp, "webshop_prompts.json"), entries)
	for _, c := range []struct {
		method, format string
		minReward      float64
		kept           int
	}{{"react", "completion", 0, 1}, {"act", "completion", 0.5, 2}, {"react", "tools", 0.5, 2}} {
		t.Run(fmt.Sprintf("%s-%s-min%g", c.method, c.format, c.minReward), func(t *testing.T) {
			envSrv := agentgymtest.NewWebShop(t, products, goals)
			player := &gamePlayer{task: pipeline.TaskWebShop, scripts: shopScripts(goals, c.method == "react"), fallback: "click[Back to Search]"}
			model := llmtest.NewServer(t, player.handle)
			res, out := runGame(t, filepath.Join(tmp, fmt.Sprintf("%s-%s", c.method, c.format)), map[string]map[string]any{
				"task":     {"name": "webshop", "offset": 0, "limit": 2},
				"env":      {"url": envSrv.URL, "timeout": "5s"},
				"llm":      {"base_url": model.URL, "model": "fake-model", "max_retries": 1, "backoff_base": "5ms", "backoff_max": "10ms", "request_max_tokens": 100},
				"generate": {"method": c.method, "format": c.format, "exemplars": promptFile, "shuffle": false, "concurrency": 2, "target_correct": 0, "progress": "off"},
				"filter":   {"min_reward": c.minReward},
				"export":   {"formats": export.Formats(), "validation_fraction": 0, "correct_only": c.minReward == 0},
			})
			if res.code != 0 {
				t.Fatalf("exit %d: %v\n%s", res.code, res.err, res.stderr)
			}
			eps := outcomes(t, out)
			var want []string
			for gi, reward := range []float64{1, 0.5} {
				ep := eps[fmt.Sprintf("webshop-%d", gi)]
				if ep.Reward == nil || *ep.Reward != reward || ep.Correct != (reward == 1) || !ep.Finished || ep.Prediction != "click[Buy Now]" {
					t.Errorf("goal %d: reward %v correct %v finished %v prediction %q, want reward %v", gi, ep.Reward, ep.Correct, ep.Finished, ep.Prediction, reward)
				}
				start := "WebShop [SEP] Instruction: [SEP] " + goals[gi].Instruction + " [SEP] Search"
				if ep.Question != start {
					t.Errorf("goal %d: question %q", gi, ep.Question)
				}
				for _, st := range ep.Steps {
					if strings.HasPrefix(st.Action, "think") {
						if st.Observation != "OK." {
							t.Errorf("goal %d: think answered %q", gi, st.Observation)
						}
						continue // the notebook never sends a think to the shop
					}
					want = append(want, st.Action)
				}
				if c.format != "completion" {
					continue
				}
				// The first prompts as WebShop.ipynb builds them (the window does not cut
				// these short ones): the one-shot prompt, the reset's observation and
				// "\n\nAction:", then " action\nObservation: observation\n\nAction:".
				p := entries["webshop_"+c.method+"_1"] + start + "\n\nAction:"
				for _, st := range ep.Steps[:2] {
					if !slices.Contains(player.sent(), p) {
						t.Errorf("goal %d: the notebook's prompt was not sent:\n%q", gi, p)
					}
					p += " " + st.Action + "\nObservation: " + st.Observation + "\n\nAction:"
				}
			}
			slices.Sort(want)
			if got := serverActions(envSrv); !slices.Equal(want, got) {
				t.Errorf("the server received %v, the episodes record %v", got, want)
			}
			if kept := logLines(t, filepath.Join(out, pipeline.KeptFile)); len(kept) != c.kept {
				t.Fatalf("kept %d, want %d (filter.min_reward %g)", len(kept), c.kept, c.minReward)
			}
			checkExports(t, out, c.kept)
		})
	}
}

// A server that stops answering is retried, then stops the run with the reason; every
// record written is whole, and the next run, once the server answers, plays every game.
func TestAgentGymServerDownStopsTheRun(t *testing.T) {
	games, tmp, promptFile, envSrv, player := household(t)
	model := llmtest.NewServer(t, player.handle)
	sections := map[string]map[string]any{
		"task":     {"name": "alfworld", "offset": 0, "limit": 3},
		"env":      {"url": envSrv.URL, "timeout": "5s", "max_consecutive_failures": 2},
		"llm":      {"base_url": model.URL, "model": "fake-model", "max_retries": 2, "backoff_base": "1ms", "backoff_max": "2ms"},
		"generate": {"method": "react", "format": "completion", "exemplars": promptFile, "shuffle": false, "concurrency": 1, "target_correct": 0, "progress": "off"},
		"export":   {"formats": []string{"openai-chat"}, "validation_fraction": 0},
	}
	envSrv.FailNext(1 << 20)
	res, out := runGame(t, filepath.Join(tmp, "down"), sections)
	if res.code != 1 || !strings.Contains(res.stderr, "the environment failed 2 steps in a row") || !strings.Contains(res.stderr, "HTTP 503") {
		t.Fatalf("exit %d, want 1 naming the failing server:\n%s", res.code, res.stderr)
	}
	for _, ep := range logLines(t, filepath.Join(out, pipeline.EpisodesFile)) {
		if ep.StopReason != pipeline.StopError || ep.Error == "" {
			t.Errorf("%s: stop %s error %q, want a recorded error", ep.QuestionID, ep.StopReason, ep.Error)
		}
	}
	if model.Requests() != 0 {
		t.Errorf("%d model requests paid for games whose server never answered", model.Requests())
	}
	envSrv.FailNext(0)
	final := outcomes(t, playGames(t, "rerun", filepath.Join(tmp, "down"), sections))
	for gi := range games {
		ep := final[fmt.Sprintf("alfworld-%d", gi)]
		if ep.Reward == nil || (*ep.Reward == 1) != (gi != 2) {
			t.Errorf("game %d after the rerun: %s, reward %v", gi, ep.StopReason, ep.Reward)
		}
	}
}

// checkExports fails when an export format wrote fewer rows than examples kept (the
// per-step formats write more).
func checkExports(t *testing.T, out string, kept int) {
	t.Helper()
	m := readManifest(t, out)
	rows := map[string]int{}
	for _, o := range m.Outputs {
		if o.Stage == pipeline.StageExport {
			rows[o.Format] += o.Rows
		}
	}
	for _, f := range export.Formats() {
		if _, ok := rows[f]; !ok {
			t.Errorf("export format %s wrote no file (outputs %v)", f, rows)
		}
	}
	for _, f := range []string{"openai-chat", "openai-tools", "hf-tools", "sharegpt", "sharegpt-tools", "agentgym", "parquet", "arrow-file"} {
		if rows[f] != kept {
			t.Errorf("export %s: %d rows, want %d", f, rows[f], kept)
		}
	}
}

// A game config that cannot run is refused with exit 2, naming the key, before any
// request.
func TestGameConfigMistakes(t *testing.T) {
	tmp := t.TempDir()
	promptFile := writeJSONFile(t, filepath.Join(tmp, "alfworld_prompts.json"), agentgymtest.ALFWorldPrompts())
	base := func() map[string]map[string]any {
		return map[string]map[string]any{
			"task":     {"name": "alfworld", "limit": 3},
			"env":      {"url": "http://127.0.0.1:1"},
			"llm":      {"base_url": "http://127.0.0.1:1/v1", "model": "fake-model"},
			"generate": {"method": "react", "format": "completion", "exemplars": promptFile, "progress": "off"},
		}
	}
	for _, c := range []struct {
		name   string
		change func(m map[string]map[string]any)
		want   string
	}{
		{"no url", func(m map[string]map[string]any) { delete(m["env"], "url") }, "config key env.url: is required with task.name alfworld"},
		{"no limit", func(m map[string]map[string]any) { delete(m["task"], "limit") }, "config key task.limit: is required"},
		{"a task file", func(m map[string]map[string]any) { m["task"]["path"] = promptFile }, "config key task.path: does not apply"},
		{"cot", func(m map[string]map[string]any) { m["generate"]["method"] = "cot" }, "config key generate.method"},
		{"rationalize", func(m map[string]map[string]any) { m["generate"]["rationalize"] = true }, "config key generate.rationalize"},
		{"no prompt file", func(m map[string]map[string]any) { delete(m["generate"], "exemplars") }, "config key generate.exemplars: is required"},
		{"wrong prompt file", func(m map[string]map[string]any) {
			m["generate"]["exemplars"] = writeJSONFile(t, filepath.Join(tmp, "other.json"), map[string]string{"webshop_react_1": "x"})
		}, "the prompt file has no react_put_1"},
		{"min_reward exported as correct", func(m map[string]map[string]any) { m["filter"] = map[string]any{"min_reward": 0.5} }, "config key filter.min_reward"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := base()
			c.change(m)
			res, _ := runGame(t, filepath.Join(tmp, strings.ReplaceAll(c.name, " ", "-")), m)
			if res.code != 2 || !strings.Contains(res.stderr, c.want) {
				t.Fatalf("exit %d, want 2 with %q:\n%s", res.code, c.want, res.stderr)
			}
		})
	}
}

// Games go through the same model client as Wikipedia: an endpoint pool serves them, a
// second run over the same response cache pays for nothing and plays the same games, and
// shards split the games between them.
func TestGamesThroughPoolCacheAndShards(t *testing.T) {
	_, tmp, promptFile, envSrv, player := household(t)
	a, b := llmtest.NewServer(t, player.handle), llmtest.NewServer(t, player.handle)
	sections := func(extra map[string]any) map[string]map[string]any {
		m := map[string]map[string]any{
			"task": {"name": "alfworld", "offset": 0, "limit": 3},
			"env":  {"url": envSrv.URL, "timeout": "5s"},
			"llm": {"model": "fake-model", "max_retries": 1, "backoff_base": "5ms", "backoff_max": "10ms", "cache_dir": filepath.Join(tmp, "cache"),
				"endpoints": []map[string]any{{"base_url": a.URL, "concurrency": 1}, {"base_url": b.URL, "concurrency": 1}}},
			"generate": {"method": "react", "format": "completion", "exemplars": promptFile, "shuffle": false, "concurrency": 3, "target_correct": 0, "progress": "off"},
			"export":   {"formats": []string{"openai-chat", "parquet"}, "validation_fraction": 0},
		}
		for k, v := range extra {
			m["task"][k] = v
		}
		return m
	}
	out := playGames(t, "first", filepath.Join(tmp, "first"), sections(nil))
	if a.Requests() == 0 || b.Requests() == 0 {
		t.Errorf("the pool's endpoints served %d and %d requests, want both", a.Requests(), b.Requests())
	}
	first := outcomes(t, out)
	before, stepped := a.Requests()+b.Requests(), len(serverActions(envSrv))
	out = playGames(t, "again", filepath.Join(tmp, "again"), sections(nil))
	if n := a.Requests() + b.Requests() - before; n != 0 {
		t.Errorf("a second run over the cache sent %d model requests, want 0", n)
	}
	if n := len(serverActions(envSrv)) - stepped; n != stepped {
		t.Errorf("the second run stepped the server %d times, want the first run's %d (the games are played again)", n, stepped)
	}
	for id, ep := range outcomes(t, out) {
		f := first[id]
		if !slices.Equal(episodetest.Actions(ep), episodetest.Actions(f)) || ep.Correct != f.Correct || *ep.Reward != *f.Reward {
			t.Errorf("%s: replayed %v reward %v, first %v reward %v", id, episodetest.Actions(ep), *ep.Reward, episodetest.Actions(f), *f.Reward)
		}
	}
	seen := map[string]int{}
	for _, shard := range []string{"0/2", "1/2"} {
		res, out := runGame(t, filepath.Join(tmp, "shard"+shard[:1]), sections(map[string]any{"shard": shard}))
		if res.code != 0 && !strings.Contains(res.stderr, "nothing to keep") {
			t.Fatalf("shard %s: exit %d: %v\n%s", shard, res.code, res.err, res.stderr)
		}
		for _, ep := range logLines(t, filepath.Join(out, pipeline.EpisodesFile)) {
			seen[ep.QuestionID]++
		}
	}
	if len(seen) != 3 || seen["alfworld-0"] != 1 || seen["alfworld-1"] != 1 || seen["alfworld-2"] != 1 {
		t.Errorf("the shards played %v, want each game once", seen)
	}
}
