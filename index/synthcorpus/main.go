// Command synthcorpus writes a seeded synthetic JSONL corpus for the index benchmarks and,
// with -index, builds an index from it and measures the figures of docs/bench-index.md:
// build pages/s, peak RSS (VmHWM), index bytes against text bytes, and p50/p99 of exact
// Page and of a missed Page followed by Similar(5).
//
//	go run ./index/synthcorpus -pages 1000000 -out /tmp/synth.jsonl -index /tmp/synth-index
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/index/synth"
	"github.com/reactgen/reactgen/index/wikidump"
	"github.com/reactgen/reactgen/internal/jsonl"
)

func main() {
	pages := flag.Int("pages", 20000, "pages to write")
	out := flag.String("out", "synth.jsonl", "JSONL file to write (skipped when it exists and -reuse)")
	reuse := flag.Bool("reuse", false, "reuse -out when it exists")
	dir := flag.String("index", "", "build an index here from -out and measure it (replaced if it exists)")
	queries := flag.Int("queries", 5000, "queries of each kind to time")
	ftsChars := flag.Int("fts-chars", 0, "BuildOptions.FTSChars (0 = default)")
	batch := flag.Int("batch", 0, "BuildOptions.BatchPages (0 = default)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the build here")
	similar := flag.String("similar-out", "", "write each miss query and its Similar(5) titles here, one JSON line each (to compare the ranking of two builds)")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *pages, *out, *reuse, *dir, *queries, *ftsChars, *batch, *similar); err != nil {
		fmt.Fprintln(os.Stderr, "synthcorpus:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, pages int, out string, reuse bool, dir string, queries, ftsChars, batch int, similarOut string) error {
	if _, err := os.Stat(out); !reuse || err != nil {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		text, err := synth.New(1, 200_000).WriteJSONL(f, pages, nil)
		if err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Printf("wrote %s: %d pages, %d text bytes\n", out, pages, text)
	}
	if dir == "" {
		return nil
	}
	os.RemoveAll(dir)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	start, cpu0 := time.Now(), cpuTime()
	info, err := index.Build(ctx, dir, []string{out}, index.BuildOptions{Logger: log, Progress: progress(), FTSChars: ftsChars, BatchPages: batch})
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	cpu := cpuTime() - cpu0
	fmt.Printf("build: %d pages in %.1fs = %.0f pages/s; peak RSS (VmHWM) %s\n", info.Pages, secs, float64(info.Pages)/secs, vmHWM())
	fmt.Printf("build CPU: %.1fs user+sys = %.1f µs/page, %.2f cores busy\n", cpu.Seconds(), float64(cpu.Microseconds())/float64(info.Pages), cpu.Seconds()/secs)
	st, _ := os.Stat(out)
	fmt.Printf("size: index %d bytes, stored text %d bytes (index/text %.2f), source file %d bytes (index/source %.2f)\n",
		info.IndexBytes, info.TextBytes, float64(info.IndexBytes)/float64(info.TextBytes), st.Size(), float64(info.IndexBytes)/float64(st.Size()))

	titles, err := sampleTitles(out, queries)
	if err != nil {
		return err
	}
	ix, err := index.Open(dir)
	if err != nil {
		return err
	}
	defer ix.Close()
	var exact []time.Duration
	for _, t := range titles {
		s := time.Now()
		if _, ok, err := ix.Page(ctx, t, env.MatchPaper); err != nil || !ok {
			return fmt.Errorf("page %q: ok=%v err=%v", t, ok, err)
		}
		exact = append(exact, time.Since(s))
	}
	fmt.Printf("exact Page: %s\n", quantiles(exact))
	g := synth.New(2, 200_000)
	var miss []time.Duration
	var similar []byte
	for range queries {
		q := g.Query()
		s := time.Now()
		var got []string
		_, ok, err := ix.Page(ctx, q, env.MatchPaper)
		if err == nil && !ok {
			got, err = ix.Similar(ctx, q, 5)
		}
		if err != nil {
			return err
		}
		miss = append(miss, time.Since(s))
		if similarOut != "" {
			b, _ := json.Marshal(map[string]any{"query": q, "similar": got})
			similar = append(append(similar, b...), '\n')
		}
	}
	if similarOut != "" {
		if err := os.WriteFile(similarOut, similar, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("miss Page+Similar(5): %s\n", quantiles(miss))
	return nil
}

// sampleTitles reads every step-th title of the corpus.
func sampleTitles(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lines := jsonl.NewReader(bufio.NewReaderSize(f, 1<<20), wikidump.MaxLineBytes)
	var all []string
	for {
		line, err := lines.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, lines.Line(), err)
		}
		if len(line) > 0 {
			var rec struct{ Title string }
			if err := json.Unmarshal(line, &rec); err != nil {
				return nil, err
			}
			all = append(all, rec.Title)
		}
	}
	step := max(1, len(all)/n)
	var out []string
	for i := 0; i < len(all) && len(out) < n; i += step {
		out = append(out, all[i])
	}
	return out, nil
}

func quantiles(d []time.Duration) string {
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))] }
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v", len(d), q(0.5), q(0.99), d[len(d)-1])
}

func progress() func(int) {
	last := time.Now()
	return func(n int) {
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "  %d pages\n", n)
		}
	}
}

// cpuTime is this process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// vmHWM reads this process's peak resident set from /proc.
func vmHWM() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "unknown"
}
