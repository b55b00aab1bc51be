package index

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/reactgen/reactgen/generate/index/internal/synth"
)

// benchPages is the synthetic corpus size: REACTGEN_BENCH_PAGES, default 20,000.
func benchPages(b *testing.B) int {
	b.Helper()
	if s := os.Getenv("REACTGEN_BENCH_PAGES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("REACTGEN_BENCH_PAGES=%q: want a positive integer", s)
		}
		return n
	}
	return 20_000
}

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

// openSynth builds and opens the synthetic corpus.
func openSynth(b *testing.B) (*Index, []string) {
	b.Helper()
	n := benchPages(b)
	src, _, titles := synthSource(b, n)
	dir := filepath.Join(b.TempDir(), "ix")
	if _, err := Build(b.Context(), dir, []string{src}, BuildOptions{}); err != nil {
		b.Fatal(err)
	}
	ix, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	return ix, titles
}

// reportLatency reports the p50 and p99 of the recorded calls in microseconds.
func reportLatency(b *testing.B, d []time.Duration) {
	b.Helper()
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

func BenchmarkPageExact(b *testing.B) {
	ix, titles := openSynth(b)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		t := titles[(i*7919)%len(titles)]
		i++
		start := time.Now()
		_, ok, err := ix.Page(b.Context(), t)
		lat = append(lat, time.Since(start))
		if err != nil || !ok {
			b.Fatalf("Page(%q): ok=%v err=%v", t, ok, err)
		}
	}
	reportLatency(b, lat)
}

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
		q := queries[i%len(queries)]
		i++
		start := time.Now()
		_, ok, err := ix.Page(b.Context(), q)
		if err == nil && !ok {
			_, err = ix.Similar(b.Context(), q, 5)
		}
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	reportLatency(b, lat)
}
