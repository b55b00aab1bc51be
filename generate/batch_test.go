package generate

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// batchVsOnline runs the same ReAct questions online and in llm.mode batch against one
// fake server (one of the world's questions always omits its action first, so that its
// episodes re-ask at every step), and returns both runs' summaries, correct episode ids,
// the batches made and the priced cost of each run.
type batchRun struct {
	online, batch         Summary
	onlineOK, batchOK     []string
	waves                 int
	onlineCost, batchCost float64
}

func runBatchVsOnline(t testing.TB, questions int) batchRun {
	t.Helper()
	prices := map[string]pipeline.Price{"fake-model": {Prompt: 0.15, Completion: 0.60}}
	fm := &fakeModel{noAction: map[string]bool{worldQuestions[1].Question: true}}
	srv := llmtest.NewServer(t, fm.handle)
	srv.DropLog()
	qs := manyQuestions(questions)
	var out batchRun
	for _, mode := range []string{"online", "batch"} {
		fm.mu.Lock()
		fm.seenBad = nil // the same re-asks in both runs
		fm.mu.Unlock()
		cfg := pipeline.Default().LLM
		cfg.BaseURL, cfg.Model, cfg.Cache, cfg.Prices, cfg.Mode = srv.URL, "fake-model", false, prices, mode
		cfg.Batch.Window, cfg.Batch.Poll, cfg.Batch.Dir = 50*time.Millisecond, 2*time.Millisecond, filepath.Join(t.TempDir(), "batches")
		cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		g, _ := testConfig("react", "chat")
		sink := &memSink{}
		o := RunOptions{Config: g, LLM: cfg, Task: "hotpotqa", RunID: "run", Questions: qs, Prompts: worldSet("hotpotqa"),
			NewEnv: worldEnv("hotpotqa"), Client: cs.Client, Sink: sink}
		o.Config.Concurrency = 64
		if mode == "batch" {
			o.Config.Concurrency = questions // every episode in flight: one wave per step
		}
		sum, err := Run(t.Context(), o)
		cs.Close()
		if err != nil {
			t.Fatal(err)
		}
		var ok []string
		for _, ep := range sink.eps {
			if ep.Correct {
				ok = append(ok, ep.ID+"="+ep.Prediction)
			}
		}
		sort.Strings(ok)
		if mode == "online" {
			out.online, out.onlineOK, out.onlineCost = sum, ok, cs.Budget.Spent().Usage.CostUSD
		} else {
			out.batch, out.batchOK, out.batchCost = sum, ok, cs.Budget.Spent().Usage.CostUSD
			out.waves = len(srv.Batches())
		}
	}
	return out
}

// TestBatchModeRun: 100 ReAct questions in batch mode take at most max_steps + 2 waves,
// reach the same correct episodes as online, and cost at most 55% of the online run.
func TestBatchModeRun(t *testing.T) {
	r := runBatchVsOnline(t, 100)
	maxSteps := pipeline.Default().Generate.MaxStepsFor(pipeline.TaskHotpotQA)
	if r.batch.Episodes != 100 || r.waves > maxSteps+2 || r.waves < 3 {
		t.Errorf("batch run: %d episodes in %d waves, want 100 in at most %d", r.batch.Episodes, r.waves, maxSteps+2)
	}
	if len(r.batchOK) != len(r.onlineOK) || len(r.batchOK) == 0 {
		t.Fatalf("correct episodes: %d in batch, %d online", len(r.batchOK), len(r.onlineOK))
	}
	for i := range r.batchOK {
		if r.batchOK[i] != r.onlineOK[i] {
			t.Fatalf("correct episode %d: %s in batch, %s online", i, r.batchOK[i], r.onlineOK[i])
		}
	}
	if r.onlineCost == 0 || r.batchCost > 0.55*r.onlineCost {
		t.Errorf("cost: batch $%v, online $%v: want at most 55%%", r.batchCost, r.onlineCost)
	}
}

// BenchmarkBatchMode is TestBatchModeRun at 1,000 questions (REACTGEN_BENCH_BATCH sets
// another number), reporting the waves and the batch run's cost as a fraction of the
// online run's. Run it with -benchtime 1x.
func BenchmarkBatchMode(b *testing.B) {
	n := envInt("REACTGEN_BENCH_BATCH", 1000)
	var r batchRun
	for b.Loop() {
		r = runBatchVsOnline(b, n)
	}
	b.ReportMetric(float64(r.waves), "waves")
	b.ReportMetric(r.batchCost/r.onlineCost, "cost-of-online")
	b.ReportMetric(float64(r.online.Requests), "online-requests")
	b.ReportMetric(float64(r.batch.Requests), "batch-requests")
	b.Logf("%d questions: online %d correct, $%.6f; batch %d correct, $%.6f in %d waves; same correct episodes: %v",
		n, len(r.onlineOK), r.onlineCost, len(r.batchOK), r.batchCost, r.waves, slices.Equal(r.onlineOK, r.batchOK))
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}
