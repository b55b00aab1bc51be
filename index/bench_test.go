package index

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/index/synth"
	"github.com/reactgen/reactgen/internal/benchmeter"
)

// benchPages is the synthetic corpus size: REACTGEN_BENCH_PAGES, default 20,000.
func benchPages(b *testing.B) int { return benchmeter.Size(b, "REACTGEN_BENCH_PAGES", 20_000) }

// synthSource writes the synthetic corpus and returns its path, its text bytes and the
// titles written.
func synthSource(b *testing.B, n int) (string, int64, []string) {
	b.Helper()
	p := filepath.Join(b.TempDir(), "synth.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	titles := make([]string, 0, n)
	text, err := synth.New(1, 200_000).WriteJSONL(f, n, func(t string) { titles = append(titles, t) })
	if err != nil {
		b.Fatal(err)
	}
	return p, text, titles
}

// BenchmarkBuild times Build of a synthetic JSONL corpus.
func BenchmarkBuild(b *testing.B) {
	n := benchPages(b)
	src, text, _ := synthSource(b, n)
	var info Info
	var elapsed time.Duration
	for b.Loop() {
		dir := filepath.Join(b.TempDir(), "ix")
		start := time.Now()
		var err error
		if info, err = Build(b.Context(), dir, []string{src}, BuildOptions{}); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		os.RemoveAll(dir)
	}
	b.ReportMetric(float64(n)*float64(b.N)/elapsed.Seconds(), "pages/s")
	b.ReportMetric(float64(info.IndexBytes)/float64(text), "index/text")
}

// shared is the synthetic index the latency benchmarks share, built once per process
// (at a million pages a build takes minutes) and removed by TestMain.
var shared struct {
	once   sync.Once
	root   string
	dir    string
	titles []string
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.root != "" {
		os.RemoveAll(shared.root)
	}
	os.Exit(code)
}

// openSynth opens the shared synthetic index, building it on first use.
func openSynth(b *testing.B) (*Index, []string) {
	b.Helper()
	n := benchPages(b)
	shared.once.Do(func() {
		if shared.root, shared.err = os.MkdirTemp("", "index-bench-"); shared.err != nil {
			return
		}
		src := filepath.Join(shared.root, "synth.jsonl")
		f, err := os.Create(src)
		if err != nil {
			shared.err = err
			return
		}
		_, err = synth.New(1, 200_000).WriteJSONL(f, n, func(t string) { shared.titles = append(shared.titles, t) })
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = filepath.Join(shared.root, "ix")
		_, shared.err = Build(b.Context(), shared.dir, []string{src}, BuildOptions{})
	})
	if shared.err != nil {
		b.Fatal(shared.err)
	}
	ix, err := Open(shared.dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	return ix, shared.titles
}

// callsPerOp makes each benchmark op a batch of calls, so -benchtime 1x still yields
// enough samples for a p99.
const callsPerOp = 1000

// reportLatency reports the p50 and p99 of the recorded calls in microseconds.
func reportLatency(b *testing.B, d []time.Duration) {
	b.Helper()
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// BenchmarkPageExact times Page on titles that exist; an op is callsPerOp calls.
func BenchmarkPageExact(b *testing.B) {
	ix, titles := openSynth(b)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		for range callsPerOp {
			t := titles[(i*7919)%len(titles)]
			i++
			start := time.Now()
			_, ok, err := ix.Page(b.Context(), t, env.MatchPaper)
			lat = append(lat, time.Since(start))
			if err != nil || !ok {
				b.Fatalf("Page(%q): ok=%v err=%v", t, ok, err)
			}
		}
	}
	reportLatency(b, lat)
}

// BenchmarkSimilarMiss times a Search that misses: Page, then Similar(5); an op is
// callsPerOp calls.
func BenchmarkSimilarMiss(b *testing.B) {
	ix, _ := openSynth(b)
	g := synth.New(2, 200_000)
	queries := make([]string, 1000)
	for i := range queries {
		queries[i] = g.Query()
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		for range callsPerOp {
			q := queries[i%len(queries)]
			i++
			start := time.Now()
			_, ok, err := ix.Page(b.Context(), q, env.MatchPaper)
			if err == nil && !ok {
				_, err = ix.Similar(b.Context(), q, 5)
			}
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	reportLatency(b, lat)
}
