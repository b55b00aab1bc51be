package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// batchConfig is testConfig in dir/cfg for 40 questions, all at once, in batch mode (a
// 50 ms window, polled every 5 ms), with key set to v.
func batchConfig(t *testing.T, dir, url, key string, v any) string {
	t.Helper()
	return testConfig(t, filepath.Join(dir, "cfg"), url, map[string]any{
		"task.limit":           40,
		"generate.concurrency": 40,
		"llm.mode":             "batch",
		"llm.batch":            map[string]any{"window": "50ms", "poll": "5ms"},
		key:                    v,
	})
}

// TestBatchModeRunCommand runs `reactgen run` with llm.mode batch against the fake's
// Batch API: the episodes go out in waves, recorded under <run>/batches, and a second run
// of the same directory sends nothing.
func TestBatchModeRunCommand(t *testing.T) {
	model := newFakeModel(t)
	srv := llmtest.NewServer(t, model.handle)
	dir := t.TempDir()
	cfg := batchConfig(t, dir, srv.URL, "llm.prices", map[string]any{"fake-model": map[string]any{"prompt": 1.0, "completion": 2.0}})
	out := filepath.Join(dir, "run")
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	m := readManifest(t, out)
	gen := m.Stages[pipeline.StageGenerate].Counts
	waves := len(srv.Batches())
	if gen["episodes"] != 40 || gen["correct"] == 0 || gen["batch_waves"] != waves || waves == 0 || waves > 9 {
		t.Errorf("generate counts %v, %d batches: want 40 episodes in at most max_steps + 2 waves", gen, waves)
	}
	if _, err := os.Stat(filepath.Join(out, pipeline.BatchDir, llm.BatchStateFile)); err != nil {
		t.Errorf("no batch state: %v", err)
	}
	// Without its episode log the run does every episode again, from the response cache.
	if err := os.Remove(filepath.Join(out, pipeline.EpisodesFile)); err != nil {
		t.Fatal(err)
	}
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("second run: exit %d: %s", res.code, res.stderr)
	}
	if got := len(srv.Batches()); got != waves {
		t.Errorf("batches after the second run: %d, want %d (every line cached)", got, waves)
	}
	m, _ = pipeline.ReadManifest(out)
	if c := m.Stages[pipeline.StageGenerate].Counts; c["episodes"] != 40 || c["cached"] == 0 {
		t.Errorf("second run counts %v: want 40 episodes from the cache", c)
	}
}

// answerBytes is the size of the batch answer store under dir.
func answerBytes(dir string) int64 {
	var n int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestBatchKilledWhileCollectingBuysNoLineTwice SIGKILLs `reactgen run` in batch mode,
// with the response cache off, the moment a wave's answers start reaching the batch
// answer store (after the batch was bought, before its episodes store their steps) or a
// few milliseconds later, again and again, then lets it finish: no custom_id was in two batches, and every question
// has its episode.
func TestBatchKilledWhileCollectingBuysNoLineTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process again and again")
	}
	model := newFakeModel(t)
	srv := llmtest.NewServer(t, model.handle)
	dir := t.TempDir()
	cfg := batchConfig(t, dir, srv.URL, "llm.cache", false)
	out := filepath.Join(dir, "run")
	answers := filepath.Join(out, pipeline.BatchDir, "answers")
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}
	kills := 0
	for cycle := range 4 {
		before := answerBytes(answers)
		c := startChild(t, env, "run", "--config", cfg, "--out", out)
		deadline := time.Now().Add(time.Minute)
	watch:
		for {
			select {
			case <-c.done:
				break watch
			default:
			}
			if answerBytes(answers) > before {
				// At once, or a little later: the wave marked collected, its answers on
				// their way to the episodes.
				time.Sleep(time.Duration(cycle) * 5 * time.Millisecond)
				c.signal(t, syscall.SIGKILL)
				c.wait(t)
				kills++
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no answers stored within a minute; stderr:\n%s", c.stderr.String())
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	if kills == 0 {
		t.Fatal("no run was killed while collecting")
	}
	code, _, stderr := runChild(t, env, "run", "--config", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("final run: exit %d: %s", code, stderr)
	}
	twice := 0
	for id, n := range srv.BatchLineIDs() {
		if n > 1 {
			twice++
			t.Errorf("line %s bought %d times", id, n)
		}
	}
	if got := len(effective(logLines(t, filepath.Join(out, pipeline.EpisodesFile)))); got != 40 {
		t.Errorf("%d questions have an episode, want 40", got)
	}
	t.Logf("%d kills while collecting, %d batches, %d lines bought, %d twice", kills, len(srv.Batches()), len(srv.BatchLineIDs()), twice)
}

// TestBatchDirSharedByTwoRunsIsRefused starts a batch run whose model never answers and a
// second run, in another run directory, on the same llm.batch.dir: the second is refused
// (exit 2) naming the key and the first's process, and writes no wave.
func TestBatchDirSharedByTwoRunsIsRefused(t *testing.T) {
	srv := llmtest.NewServer(t, func(ctx context.Context, _ llmtest.Req) llmtest.Reply {
		<-ctx.Done()
		return llmtest.Reply{}
	})
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared-batches")
	cfg := testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{
		"task.limit": 5,
		"llm.mode":   "batch",
		"llm.batch":  map[string]any{"window": "50ms", "poll": "5ms", "dir": shared},
	})
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}
	first := startChild(t, env, "generate", "--config", cfg, "--out", filepath.Join(dir, "a"))
	waitFor(t, "the first run's wave", func() bool {
		_, err := os.Stat(filepath.Join(shared, llm.BatchStateFile))
		return err == nil
	})
	// The first run is live: wait until it stops adding files (its upload hangs on the
	// server), so that a change below is the refused run's.
	names := func() string {
		ents, _ := os.ReadDir(shared)
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return strings.Join(n, " ")
	}
	before := names()
	for settled := 0; settled < 3; {
		time.Sleep(100 * time.Millisecond)
		if now := names(); now != before {
			before, settled = now, 0
		} else {
			settled++
		}
	}
	res := invoke(t, "", env.vars, "generate", "--config", cfg, "--out", filepath.Join(dir, "b"))
	if res.code != exitUsage || !strings.Contains(res.stderr, "llm.batch.dir") || !strings.Contains(res.stderr, "in use by pid") {
		t.Errorf("second run: exit %d, stderr:\n%s\nwant %d naming llm.batch.dir and the holder", res.code, res.stderr, exitUsage)
	}
	if after := names(); after != before {
		t.Errorf("the refused run changed the shared directory: %q, then %q", before, after)
	}
	first.signal(t, syscall.SIGKILL)
	first.wait(t)
}

// TestBatchResumeWithoutBatchListCommand: a server with no GET /v1/batches, and a run
// killed between a wave's upload and its batch's creation (batches.json says uploaded,
// with no batch id). Every later run used to fail with exit 2 labelled llm.base_url; the
// next run now creates the batch from the recorded upload and finishes.
func TestBatchResumeWithoutBatchListCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process")
	}
	model := newFakeModel(t)
	hold := make(chan struct{})
	srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		select { // the first batch does not finish while the first process runs
		case <-hold:
		case <-ctx.Done():
		}
		return model.handle(ctx, r)
	})
	srv.NoBatchList()
	dir := t.TempDir()
	cfg := testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{
		"task.limit": 10,
		"llm.mode":   "batch",
		"llm.batch":  map[string]any{"window": "50ms", "poll": "5ms"},
	})
	out := filepath.Join(dir, "run")
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}
	first := startChild(t, env, "generate", "--config", cfg, "--out", out)
	waitFor(t, "the first batch", func() bool { return len(srv.Batches()) > 0 })
	first.signal(t, syscall.SIGKILL)
	first.wait(t)
	// As if the kill had come after the upload, before the batch was created.
	llmtest.ForgetBatchID(t, filepath.Join(out, pipeline.BatchDir))
	close(hold)
	code, _, stderr := runChild(t, env, "generate", "--config", cfg, "--out", out)
	if code != 0 || !strings.Contains(stderr, "creating it from the recorded upload") {
		t.Fatalf("resumed run: exit %d, stderr:\n%s\nwant 0, creating the batch from the upload", code, stderr)
	}
	if got := len(effective(logLines(t, filepath.Join(out, pipeline.EpisodesFile)))); got != 10 {
		t.Errorf("%d questions have an episode, want 10", got)
	}
	bs := srv.Batches()
	again := 0
	for _, x := range bs[1:] {
		if x.InputFileID == bs[0].InputFileID {
			again++
		}
	}
	if again != 1 {
		t.Errorf("batches %+v: want one created again from the first run's upload %s", bs, bs[0].InputFileID)
	}
}

// defaultBatchRun writes the config of a run of limit questions in llm.mode batch with
// llm.batch's defaults, against a fake model; it returns the model's server, the
// config's path and the run directory.
func defaultBatchRun(t *testing.T, limit int) (srv *llmtest.Server, cfg, out string) {
	t.Helper()
	srv = llmtest.NewServer(t, newFakeModel(t).handle)
	dir := t.TempDir()
	cfg = testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{"task.limit": limit, "llm.mode": "batch"})
	return srv, cfg, filepath.Join(dir, "run")
}

// TestBatchModeDefaultsTakeAFewWaves runs the README's batch example as shipped: 100
// questions with llm.batch's defaults (a 2 s window, status polls that start at 250 ms
// and back off to 30 s) and generate.concurrency left low. Every question's episode is in
// flight at once, so each wave carries every pending step: at most max_steps + 2 waves.
func TestBatchModeDefaultsTakeAFewWaves(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the batch window of every wave")
	}
	srv, cfg, out := defaultBatchRun(t, 100)
	if res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "sk-test"}, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	m := readManifest(t, out)
	gen := m.Stages[pipeline.StageGenerate].Counts
	waves, maxSteps := len(srv.Batches()), 7
	if gen["episodes"] != 100 || gen["correct"] == 0 || waves == 0 || waves > maxSteps+2 {
		t.Errorf("generate counts %v in %d batches: want 100 episodes in at most %d waves", gen, waves, maxSteps+2)
	}
	t.Logf("100 questions in %d waves", waves)
}

// TestBatchModeStopsSubmittingOnSIGTERM sends SIGTERM to `reactgen run` in batch mode
// once its first wave is out: the process exits 143 at once, with no grace period in
// which the wave could finish and its episodes submit another; the next run attaches to
// the batch and finishes every episode.
func TestBatchModeStopsSubmittingOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in batch mode")
	}
	srv, cfg, out := defaultBatchRun(t, 20)
	c := startChild(t, childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}, "run", "--config", cfg, "--out", out)
	waitFor(t, "a batch", func() bool { return len(srv.Batches()) > 0 })
	c.signal(t, syscall.SIGTERM)
	if code := c.wait(t); code != 143 {
		t.Fatalf("after SIGTERM: exit %d, want 143\n%s", code, c.stderr.String())
	}
	time.Sleep(3 * time.Second) // longer than a wave takes to finish and the next to form
	if n := len(srv.Batches()); n != 1 {
		t.Errorf("%d batches after SIGTERM, want the 1 that was out", n)
	}
	if res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "sk-test"}, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("the next run: exit %d: %s", res.code, res.stderr)
	}
	m, _ := pipeline.ReadManifest(out)
	if c := m.Stages[pipeline.StageGenerate].Counts; c["episodes"] != 20 || c["batch_attached"] == 0 {
		t.Errorf("the next run's counts %v: want 20 episodes, attached to the batch that was out", c)
	}
}
