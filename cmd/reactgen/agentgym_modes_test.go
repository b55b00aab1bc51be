package main

// ALFWorld and WebShop through reactgen's other ways of running: batch mode, a kill and
// resume, and a request budget, each against fake AgentGym servers and a fake model
// that plays their games (agentgym_test.go).

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/reactgen/reactgen/env/agentgym/agentgymtest"
	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// gameSetup is a game task's fake server, its player and the run config's sections.
type gameSetup struct {
	task     string
	player   *gamePlayer
	games    int
	sections func(modelURL string) map[string]map[string]any
}

// newGameSetup starts the fake server of task (alfworld: 3 games, two won; webshop: 2
// goals, one bought as asked and one at reward 0.5) and returns the run config's
// sections for a model at modelURL.
func newGameSetup(t *testing.T, task string) gameSetup {
	t.Helper()
	tmp := t.TempDir()
	var (
		url, prompts string
		player       *gamePlayer
		games        int
	)
	switch task {
	case pipeline.TaskALFWorld:
		household := agentgymtest.Household()
		url = agentgymtest.NewALFWorld(t, household).URL
		prompts = writeJSONFile(t, filepath.Join(tmp, "alfworld_prompts.json"), agentgymtest.ALFWorldPrompts())
		player = &gamePlayer{task: task, scripts: householdScripts(household, true), fallback: "look"}
		games = len(household)
	default:
		products, goals := agentgymtest.Shop()
		url = agentgymtest.NewWebShop(t, products, goals).URL
		prompts = writeJSONFile(t, filepath.Join(tmp, "webshop_prompts.json"), agentgymtest.WebShopPrompts())
		player = &gamePlayer{task: task, scripts: shopScripts(goals, true), fallback: "click[Back to Search]"}
		games = 2
	}
	return gameSetup{task: task, player: player, games: games, sections: func(modelURL string) map[string]map[string]any {
		return map[string]map[string]any{
			"task":     {"name": task, "offset": 0, "limit": games},
			"env":      {"url": url, "timeout": "5s"},
			"llm":      {"base_url": modelURL, "model": "fake-model", "max_retries": 1, "backoff_base": "5ms", "backoff_max": "10ms", "request_max_tokens": 100},
			"generate": {"method": "react", "format": "completion", "exemplars": prompts, "shuffle": false, "concurrency": 3, "target_correct": 0, "progress": "off"},
			"filter":   {"min_reward": 0.5},
			"export":   {"formats": export.Formats(), "validation_fraction": 0, "correct_only": false},
		}
	}}
}

// forEachGameTask runs test as a subtest for each game task (ALFWorld, WebShop), with
// the task's fake server and player and a temporary directory.
func forEachGameTask(t *testing.T, test func(t *testing.T, g gameSetup, tmp string)) {
	for _, task := range []string{pipeline.TaskALFWorld, pipeline.TaskWebShop} {
		t.Run(task, func(t *testing.T) { test(t, newGameSetup(t, task), t.TempDir()) })
	}
}

// playOnline plays g's games in dir with a model server of their own and no other
// settings, the run a test compares its own with; what names the run in a failure. It
// returns the server and the run directory.
func (g gameSetup) playOnline(t *testing.T, what, dir string) (*llmtest.Server, string) {
	t.Helper()
	srv := llmtest.NewServer(t, g.player.handle)
	return srv, playGames(t, what, dir, g.sections(srv.URL))
}

// sameGames fails when two runs' episodes of the games differ in anything the game
// decided: the id, the actions and observations, the reward and the verdict.
func sameGames(t *testing.T, what string, got, want map[string]pipeline.Episode, games int) {
	t.Helper()
	if len(want) != games || len(got) != len(want) {
		t.Fatalf("%s: %d games played, want %d (reference: %d)", what, len(got), games, len(want))
	}
	for id, w := range want {
		g := got[id]
		type play struct{ Action, Observation string }
		plays := func(ep pipeline.Episode) (out []play) {
			for _, s := range ep.Steps {
				out = append(out, play{s.Action, s.Observation})
			}
			return out
		}
		if g.ID != w.ID || !reflect.DeepEqual(plays(g), plays(w)) || g.Reward == nil || w.Reward == nil || *g.Reward != *w.Reward ||
			g.Correct != w.Correct || g.StopReason != w.StopReason || g.Question != w.Question {
			t.Errorf("%s: %s: %s %v reward %v %s, want %s %v reward %v %s", what, id, g.ID, episodetest.Actions(g), deref(g.Reward), g.StopReason,
				w.ID, episodetest.Actions(w), deref(w.Reward), w.StopReason)
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestGamesInBatchMode plays ALFWorld and WebShop with llm.mode batch (the OpenAI Batch
// API, one batch per wave of steps): the same episodes as online, every export, and a
// second run without the episode log buys no batch (every line from the cache).
func TestGamesInBatchMode(t *testing.T) {
	forEachGameTask(t, func(t *testing.T, g gameSetup, tmp string) {
		online, onlineOut := g.playOnline(t, "online", filepath.Join(tmp, "online"))
		batch := llmtest.NewServer(t, g.player.handle)
		sections := g.sections(batch.URL)
		sections["llm"]["mode"] = "batch"
		sections["llm"]["batch"] = map[string]any{"window": "50ms", "poll": "5ms"}
		out := playGames(t, "batch", filepath.Join(tmp, "batch"), sections)
		want := outcomes(t, onlineOut)
		sameGames(t, "batch", outcomes(t, out), want, g.games)
		waves := len(batch.Batches())
		if c := readManifest(t, out).Stages[pipeline.StageGenerate].Counts; waves == 0 || c["batch_waves"] != waves {
			t.Errorf("%d batches, manifest counts %v: want the waves as batches", waves, c)
		}
		if n := len(online.Batches()); n != 0 {
			t.Errorf("the online run made %d batches", n)
		}
		kept := len(logLines(t, filepath.Join(onlineOut, pipeline.KeptFile)))
		if n := len(logLines(t, filepath.Join(out, pipeline.KeptFile))); n != kept || kept == 0 {
			t.Errorf("batch kept %d, online %d", n, kept)
		}
		checkExports(t, out, kept)
		// Without its episode log the run plays every game again, from the cache.
		if err := os.Remove(filepath.Join(out, pipeline.EpisodesFile)); err != nil {
			t.Fatal(err)
		}
		playGames(t, "second batch run", filepath.Join(tmp, "batch"), sections)
		if n := len(batch.Batches()); n != waves {
			t.Errorf("the second run bought %d batches, want none", n-waves)
		}
		sameGames(t, "batch from the cache", outcomes(t, out), want, g.games)
	})
}

// slowPlayer answers as p does after a delay, so that a kill finds games in flight.
func slowPlayer(p *gamePlayer, d time.Duration) llmtest.Handler {
	return func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		time.Sleep(d)
		return p.handle(ctx, r)
	}
}

// TestGameRunKilledResumes SIGKILLs `reactgen generate` on ALFWorld games in flight,
// twice, then lets it finish: the episode log holds only whole records, and each game's
// episode is the one an uninterrupted run plays.
func TestGameRunKilledResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process")
	}
	g := newGameSetup(t, pipeline.TaskALFWorld)
	model := llmtest.NewServer(t, slowPlayer(g.player, 3*time.Millisecond))
	tmp := t.TempDir()
	sections := g.sections(model.URL)
	sections["generate"]["concurrency"] = 2
	cfg := writeSections(t, filepath.Join(tmp, "cfg"), sections)
	killed, whole := filepath.Join(tmp, "killed"), filepath.Join(tmp, "whole")
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}
	killThenResume(t, env, cfg, killed, whole, 2, func(i int) func() bool {
		before := model.Requests()
		return func() bool { return model.Requests() >= before+int64(8*(i+1)) }
	})
	sameGames(t, "killed and resumed", outcomes(t, killed), outcomes(t, whole), g.games)
	if m := readManifest(t, killed); m.Resumes < 1 {
		t.Errorf("resumes %d, want at least 1", m.Resumes)
	}
}

// TestGameBudgetStopsAndResumes plays ALFWorld and WebShop under llm.max_requests: the
// model gets exactly the budget's requests, the run ends cleanly, and the next run with
// more budget finishes every game as a run without a budget plays it.
func TestGameBudgetStopsAndResumes(t *testing.T) {
	forEachGameTask(t, func(t *testing.T, g gameSetup, tmp string) {
		free, freeOut := g.playOnline(t, "without a budget", filepath.Join(tmp, "free"))
		model := llmtest.NewServer(t, g.player.handle)
		sections := g.sections(model.URL)
		sections["generate"]["concurrency"] = 1
		budget := int(free.Requests()) / 2
		sections["llm"]["max_requests"] = budget
		out := playGames(t, "with a budget", filepath.Join(tmp, "budget"), sections)
		if n := int(model.Requests()); n != budget {
			t.Errorf("the model got %d requests, want the budget's %d", n, budget)
		}
		if c := readManifest(t, out).Stages[pipeline.StageGenerate].Counts; c["requests"] != budget {
			t.Errorf("manifest counts %v: want requests %d", c, budget)
		}
		sections["llm"]["max_requests"] = 0
		out = playGames(t, "resumed without the budget", filepath.Join(tmp, "budget"), sections)
		sameGames(t, "after the budget", outcomes(t, out), outcomes(t, freeOut), g.games)
		if n := int(model.Requests()); n > int(free.Requests())+1 {
			t.Errorf("the two runs sent %d requests, one run without a budget %d (the first run's answers are cached)", n, free.Requests())
		}
	})
}
