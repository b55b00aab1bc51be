package export

import (
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

// benchEpisodes is the episode count of BenchmarkExport: EXPORT_BENCH_EPISODES, or 2000.
func benchEpisodes(b *testing.B) int {
	b.Helper()
	if s := os.Getenv("EXPORT_BENCH_EPISODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("EXPORT_BENCH_EPISODES=%q: want a positive integer", s)
		}
		return n
	}
	return 2000
}

// peakRSSMB reads the process's peak resident set (VmHWM) from /proc/self/status.
func peakRSSMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// benchStream yields n episodes cycled from a pool of 1024 distinct ones, each with its own
// id and question id, so the benchmark measures the export and not the fixture (decoding
// kept.jsonl is the pipeline's cost, not measured here).
func benchStream(n int) func() iter.Seq2[pipeline.Episode, error] {
	pool := make([]pipeline.Episode, 1024)
	for i := range pool {
		pool[i] = synthEpisode(i)
	}
	return func() iter.Seq2[pipeline.Episode, error] {
		return func(yield func(pipeline.Episode, error) bool) {
			for i := range n {
				ep := pool[i%len(pool)]
				ep.QuestionID = "q" + strconv.Itoa(i/2)
				ep.ID = pipeline.EpisodeID(ep.Task, ep.QuestionID, ep.Method, i%2, false)
				if !yield(ep, nil) {
					return
				}
			}
		}
	}
}

// BenchmarkExport streams synthetic episodes of realistic size (about 2 KB of JSON, 3 to
// 7 steps) through Run into every format at once. Run it at full size with
//
//	EXPORT_BENCH_EPISODES=100000 go test -run '^$' -bench Export -benchtime 1x ./export
func BenchmarkExport(b *testing.B) {
	n := benchEpisodes(b)
	sample, err := json.Marshal(synthEpisode(1))
	if err != nil {
		b.Fatal(err)
	}
	cfg := pipeline.ExportConfig{
		Formats:     []string{"openai-chat", "completion", "alpaca", "sharegpt", "agentgym", "arrow", "arrow-file", "parquet"},
		Compression: "none", Weights: true, ValidationFraction: 0.05, SplitSeed: 1,
		Views: []string{ViewReAct}, CorrectOnly: true,
	}
	kept := benchStream(n)
	var written int64
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for i := range b.N {
		dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
		res, err := Run(b.Context(), RunOptions{Config: cfg, Dir: dir, Kept: kept})
		if err != nil {
			b.Fatal(err)
		}
		written = 0
		for _, f := range res.Files {
			written += f.Bytes
		}
		b.StopTimer()
		os.RemoveAll(dir)
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(written)/(1<<20), "MB-written")
	b.ReportMetric(float64(len(sample)), "episode-bytes")
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
}

// BenchmarkExportFormat exports the same stream to one format at a time, to show where
// the time of BenchmarkExport goes.
func BenchmarkExportFormat(b *testing.B) {
	n := benchEpisodes(b)
	for _, format := range []string{"openai-chat", "completion", "alpaca", "sharegpt", "agentgym", "arrow", "arrow-file", "parquet"} {
		b.Run(format, func(b *testing.B) {
			cfg := pipeline.ExportConfig{Formats: []string{format}, Weights: true, ValidationFraction: 0.05, SplitSeed: 1, CorrectOnly: true}
			kept := benchStream(n)
			cpu0 := cpuSeconds()
			b.ResetTimer()
			for i := range b.N {
				dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
				if _, err := Run(b.Context(), RunOptions{Config: cfg, Dir: dir, Kept: kept}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
			b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
		})
	}
}
