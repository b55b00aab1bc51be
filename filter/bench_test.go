package filter

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"testing"

	"github.com/reactgen/reactgen/internal/benchmeter"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

func BenchmarkChainRun(b *testing.B) {
	eps := make([]pipeline.Episode, 10000)
	for i := range eps {
		eps[i] = episodetest.Episode(fmt.Sprint(i), fmt.Sprint(i%3000), fmt.Sprintf("Search[%d]", i%5), "Lookup[river]", "Finish[Aldbrook]")
	}
	cfg := pipeline.Default().Filter
	cfg.Rules = append(cfg.Rules, "max_tokens", "balance")
	cfg.MaxTokens = 4096
	cfg.BalanceBy = "type"
	c, err := New(cfg, pipeline.TaskHotpotQA, Options{Reopen: func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(eps) }})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.Run(b.Context(), episodetest.Seq(eps), nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(eps)*b.N)/b.Elapsed().Seconds(), "episodes/s")
}

// BenchmarkRunLog filters an episode log the way the filter stage does (the default
// rules, kept.jsonl and rejected.jsonl copied from the log's lines): n distinct synthetic
// HotpotQA episodes of about 2 KB, one per question, as BenchmarkExport's filter phase
// (FILTER_BENCH_EPISODES, or 2000; FILTER_BENCH_OBS_WORDS, the words kept of each
// observation, or 18: 50 keeps them whole, the 3 KB episodes, as BenchmarkExport's
// EXPORT_BENCH_OBS_WORDS; FILTER_BENCH_LOG names a log to write once and reuse, which
// keeps the set-up out of a CPU profile). It reports CPU time (user + sys) beside wall
// time and the load.
func BenchmarkRunLog(b *testing.B) {
	n := benchmeter.Size(b, "FILTER_BENCH_EPISODES", 2000)
	words := benchmeter.Size(b, "FILTER_BENCH_OBS_WORDS", 18)
	dir := b.TempDir()
	episodes := filepath.Join(dir, pipeline.EpisodesFile)
	if p := os.Getenv("FILTER_BENCH_LOG"); p != "" {
		episodes = p // written once, then reused: the set-up out of a profile
	}
	if _, err := os.Stat(episodes); err != nil {
		episodetest.WriteLog(b, episodes, n, words)
	}
	st, err := os.Stat(episodes)
	if err != nil {
		b.Fatal(err)
	}
	load, cpu0 := benchmeter.LoadAverage(), benchmeter.CPUSeconds()
	kept := 0
	for i := 0; b.Loop(); i++ {
		chain, err := New(pipeline.Default().Filter, pipeline.TaskHotpotQA, Options{})
		if err != nil {
			b.Fatal(err)
		}
		kw, err := pipeline.CreateJSONL(filepath.Join(dir, fmt.Sprint("kept", i)))
		if err != nil {
			b.Fatal(err)
		}
		rw, err := pipeline.CreateJSONL(filepath.Join(dir, fmt.Sprint("rejected", i)))
		if err != nil {
			b.Fatal(err)
		}
		stats, err := chain.RunLog(b.Context(), episodes, kw.WriteLine, rw.WriteRejected)
		if err != nil {
			b.Fatal(err)
		}
		if err := kw.Commit(); err != nil {
			b.Fatal(err)
		}
		if err := rw.Commit(); err != nil {
			b.Fatal(err)
		}
		kept = stats.Kept
	}
	b.ReportMetric((benchmeter.CPUSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(kept), "kept")
	b.ReportMetric(float64(st.Size())/float64(n), "episode-bytes")
	b.ReportMetric((load+benchmeter.LoadAverage())/2, "load")
}
