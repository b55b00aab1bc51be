package export

import (
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reactgen/reactgen/filter"
	"github.com/reactgen/reactgen/internal/benchmeter"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

// benchEpisodes is the episode count of the export benchmarks: EXPORT_BENCH_EPISODES, or
// 2000.
func benchEpisodes(b *testing.B) int { return benchmeter.Size(b, "EXPORT_BENCH_EPISODES", 2000) }

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

// resetPeakRSS sets the process's peak resident set (VmHWM) to its resident set now, so
// that the next peakRSSMB is the peak of what runs in between (Linux; elsewhere a no-op).
func resetPeakRSS() {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// benchStream yields n episodes cycled from a pool of 1024 distinct ones, each with its own
// id and question id, so the in-memory benchmarks measure the export and not the fixture.
func benchStream(n int) func() iter.Seq2[pipeline.Episode, error] {
	pool := make([]pipeline.Episode, 1024)
	for i := range pool {
		pool[i] = episodetest.Synth(i)
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

// benchConfig is every format at once, react view, no compression, weights on.
// benchFormats is the formats the export benchmarks write: EXPORT_BENCH_FORMATS, a comma
// list or "all" (every format export.formats accepts), or the eight of issue 5's target
// (openai-chat, completion, alpaca, sharegpt, agentgym, arrow, arrow-file, parquet), so
// that the figure stays comparable with the earlier runs in docs/bench-export.md.
func benchFormats() []string {
	switch s := os.Getenv("EXPORT_BENCH_FORMATS"); s {
	case "":
		return []string{"openai-chat", "completion", "alpaca", "sharegpt", "agentgym", "arrow", "arrow-file", "parquet"}
	case "all":
		return Formats()
	default:
		return strings.Split(s, ",")
	}
}

func benchConfig() pipeline.ExportConfig {
	return pipeline.ExportConfig{
		Formats:     benchFormats(),
		Compression: "none", Weights: true, ValidationFraction: 0.05, SplitSeed: 1,
		Views: []string{ViewReAct}, CorrectOnly: true,
	}
}

// benchObsWords is the words kept of each synthetic observation in BenchmarkExport:
// EXPORT_BENCH_OBS_WORDS, or 18, which makes the episodes of about 2 KB of JSON
// (50, the fixture's whole observations, makes about 3 KB).
func benchObsWords(b *testing.B) int { return benchmeter.Size(b, "EXPORT_BENCH_OBS_WORDS", 18) }

// writeBenchLog writes n distinct synthetic HotpotQA episodes, one per question, as the
// generate stage's episode log, and returns its path and size.
func writeBenchLog(b *testing.B, dir string, n int) (string, int64) {
	b.Helper()
	path := filepath.Join(dir, pipeline.EpisodesFile)
	return path, episodetest.WriteLog(b, path, n, benchObsWords(b))
}

// BenchmarkExport is the figure: filter and export n synthetic episodes of
// realistic size (about 2 KB of JSON, 3 to 7 steps) to every format, through the same
// files and readers as `reactgen run`: episodes.jsonl is filtered with the default rules
// into kept.jsonl and rejected.jsonl (as cmd/reactgen's filter stage does), then Run
// exports kept.jsonl read with pipeline.ReadKept. Writing episodes.jsonl is set-up and
// not timed. Run it at full size with
//
//	EXPORT_BENCH_EPISODES=100000 go test -run '^$' -bench 'Export$' -benchtime 1x ./export
func BenchmarkExport(b *testing.B) {
	n := benchEpisodes(b)
	root := b.TempDir()
	episodes, logBytes := writeBenchLog(b, root, n)
	fcfg := pipeline.Default().Filter
	cfg := benchConfig()
	var written int64
	var filterWall, exportWall time.Duration
	var filterCPU, exportCPU float64
	kept := 0
	load := 0.0
	var filterPeak, exportPeak float64 // MB: set-up and filter, then export
	b.ResetTimer()
	for i := range b.N {
		load += benchmeter.LoadAverage()
		dir := filepath.Join(root, strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		t0, c0 := time.Now(), benchmeter.CPUSeconds()

		chain, err := filter.New(fcfg, pipeline.TaskHotpotQA, filter.Options{})
		if err != nil {
			b.Fatal(err)
		}
		kw, err := pipeline.CreateJSONL(filepath.Join(dir, pipeline.KeptFile))
		if err != nil {
			b.Fatal(err)
		}
		rw, err := pipeline.CreateJSONL(filepath.Join(dir, pipeline.RejectedFile))
		if err != nil {
			b.Fatal(err)
		}
		st, err := chain.RunLog(b.Context(), episodes, kw.WriteLine, rw.WriteRejected) // as filter.Stage
		if err != nil {
			b.Fatal(err)
		}
		if err := kw.Commit(); err != nil {
			b.Fatal(err)
		}
		if err := rw.Commit(); err != nil {
			b.Fatal(err)
		}
		kept = st.Kept
		filterPeak = max(filterPeak, peakRSSMB())
		resetPeakRSS()
		t1, c1 := time.Now(), benchmeter.CPUSeconds()

		keptPath := filepath.Join(dir, pipeline.KeptFile)
		res, err := Run(b.Context(), RunOptions{
			Config: cfg, Dir: filepath.Join(dir, pipeline.ExportDir),
			Kept: func() iter.Seq2[pipeline.Episode, error] { return pipeline.ReadKept(keptPath) },
		})
		if err != nil {
			b.Fatal(err)
		}
		t2, c2 := time.Now(), benchmeter.CPUSeconds()
		exportPeak = max(exportPeak, peakRSSMB())
		filterWall += t1.Sub(t0)
		exportWall += t2.Sub(t1)
		filterCPU += c1 - c0
		exportCPU += c2 - c1
		if res.Examples != kept {
			b.Fatalf("exported %d examples, the filter kept %d", res.Examples, kept)
		}
		written = discard(b, dir, res)
	}
	per := float64(b.N)
	b.ReportMetric(float64(n)*per/b.Elapsed().Seconds(), "episodes/s")
	b.ReportMetric(filterWall.Seconds()/per, "filter-s/op")
	b.ReportMetric(exportWall.Seconds()/per, "export-s/op")
	b.ReportMetric(filterCPU/per, "filter-cpu-s/op")
	b.ReportMetric(exportCPU/per, "export-cpu-s/op")
	b.ReportMetric((filterCPU+exportCPU)/per, "cpu-s/op")
	b.ReportMetric(float64(kept), "kept")
	b.ReportMetric(float64(logBytes)/float64(n), "episode-bytes")
	b.ReportMetric(float64(written)/(1<<20), "MB-written")
	b.ReportMetric(max(filterPeak, exportPeak), "peak-RSS-MB")
	b.ReportMetric(filterPeak, "filter-peak-RSS-MB")
	b.ReportMetric(exportPeak, "export-peak-RSS-MB")
	b.ReportMetric(load/per, "load")
}

// discard removes an op's directory with the timer stopped, so that every op starts on
// the same disk, and returns the bytes the export's files took.
func discard(b *testing.B, dir string, res Result) int64 {
	var n int64
	for _, f := range res.Files {
		n += f.Bytes
	}
	b.StopTimer()
	os.RemoveAll(dir)
	b.StartTimer()
	return n
}

// BenchmarkExportInMemory streams episodes from memory through Run into every format at
// once: the export's own cost, without reading kept.jsonl and without the filter.
func BenchmarkExportInMemory(b *testing.B) {
	n := benchEpisodes(b)
	var jsonBytes int
	for i := range 1024 { // benchStream's pool
		data, err := json.Marshal(episodetest.Synth(i))
		if err != nil {
			b.Fatal(err)
		}
		jsonBytes += len(data)
	}
	cfg := benchConfig()
	kept := benchStream(n)
	var written int64
	cpu0 := benchmeter.CPUSeconds()
	b.ResetTimer()
	for i := range b.N {
		dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
		res, err := Run(b.Context(), RunOptions{Config: cfg, Dir: dir, Kept: kept})
		if err != nil {
			b.Fatal(err)
		}
		written = discard(b, dir, res)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
	b.ReportMetric((benchmeter.CPUSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(written)/(1<<20), "MB-written")
	b.ReportMetric(float64(jsonBytes)/1024, "episode-bytes")
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
}

// BenchmarkExportFormat exports the in-memory stream to one format at a time, to show
// where the time of BenchmarkExportInMemory goes.
func BenchmarkExportFormat(b *testing.B) {
	n := benchEpisodes(b)
	for _, format := range benchConfig().Formats {
		b.Run(format, func(b *testing.B) {
			cfg := pipeline.ExportConfig{Formats: []string{format}, Weights: true, ValidationFraction: 0.05, SplitSeed: 1, CorrectOnly: true}
			kept := benchStream(n)
			cpu0 := benchmeter.CPUSeconds()
			b.ResetTimer()
			for i := range b.N {
				dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
				if _, err := Run(b.Context(), RunOptions{Config: cfg, Dir: dir, Kept: kept}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
			b.ReportMetric((benchmeter.CPUSeconds()-cpu0)/float64(b.N), "cpu-s/op")
		})
	}
}
