package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestBatchModeRunCommand runs `reactgen run` with llm.mode batch against the fake's
// Batch API: the episodes go out in waves, recorded under <run>/batches, and a second run
// of the same directory sends nothing.
func TestBatchModeRunCommand(t *testing.T) {
	model := newFakeModel(t)
	srv := llmtest.NewServer(t, model.handle)
	dir := t.TempDir()
	cfg := testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{
		"task.limit":           40,
		"generate.concurrency": 40,
		"llm.mode":             "batch",
		"llm.batch":            map[string]any{"window": "50ms", "poll": "5ms"},
		"llm.prices":           map[string]any{"fake-model": map[string]any{"prompt": 1.0, "completion": 2.0}},
	})
	out := filepath.Join(dir, "run")
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	m, err := pipeline.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
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
