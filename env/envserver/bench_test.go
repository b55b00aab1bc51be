package envserver_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envserver"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/index/synth"
	"github.com/reactgen/reactgen/internal/benchmeter"
	"github.com/reactgen/reactgen/internal/fastjson"
	"github.com/reactgen/reactgen/pipeline"
)

// The step-rate benchmarks play the demo world's HotpotQA episodes (demoScript: each
// supporting page searched, its sentence looked up twice, a miss, Finish; about 8 steps),
// and a synthetic world's when asked (benchWorlds), at 64 and 256 concurrent sessions, in-process (each session its own env.Wiki over the
// shared index) and over /ws (each session a WebSocket connection to a server on
// 127.0.0.1 in the same process, the client's work included). They report steps per
// second, the p99 step latency, CPU time (user+sys) per step and the 1-minute load
// before and after: the machine is shared, and wall time alone says little.
//
//	go test -run '^$' -bench 'Steps' -benchtime 20000x ./env/envserver/
//	REACTGEN_BENCH_SERVE_PAGES=100000 go test -run '^$' -bench 'Steps' -benchtime 20000x -timeout 30m ./env/envserver/

func BenchmarkStepsInProcess(b *testing.B) {
	for _, w := range benchWorlds(b) {
		for _, n := range []int{64, 256} {
			b.Run(w.name+"/sessions="+strconv.Itoa(n), func(b *testing.B) { benchSteps(b, w, n, false) })
		}
	}
}

func BenchmarkStepsOverWS(b *testing.B) {
	for _, w := range benchWorlds(b) {
		for _, n := range []int{64, 256} {
			b.Run(w.name+"/sessions="+strconv.Itoa(n), func(b *testing.B) { benchSteps(b, w, n, true) })
		}
	}
}

// benchWorld is a corpus, its questions and an episode's actions per question.
type benchWorld struct {
	name    string
	corpus  env.Corpus
	qs      []pipeline.Question
	scripts [][]string
}

var (
	synthOnce  sync.Once
	synthWorld benchWorld
	synthErr   error
)

// benchWorlds are the demo world and, with REACTGEN_BENCH_SERVE_PAGES=n, a synthetic
// encyclopedia of n pages (index/synth, as the index benchmarks use), whose episodes
// search a page, look a word up, search a title that is missing (a full-text Similar,
// as agents' misspelt searches cost) and finish: the cost of a step on an index of
// Wikipedia's shape rather than the demo's 295 pages.
func benchWorlds(b *testing.B) []benchWorld {
	qs := loadDemo(b, pipeline.TaskHotpotQA)
	demo := benchWorld{name: "demo", corpus: openDemo(b), qs: qs, scripts: make([][]string, len(qs))}
	for i, q := range qs {
		demo.scripts[i] = demoScript(q, i)
	}
	worlds := []benchWorld{demo}
	n, _ := strconv.Atoi(os.Getenv("REACTGEN_BENCH_SERVE_PAGES"))
	if n <= 0 {
		return worlds
	}
	synthOnce.Do(func() { synthWorld, synthErr = buildSynth(b, n) })
	if synthErr != nil {
		b.Fatal(synthErr)
	}
	return append(worlds, synthWorld)
}

func buildSynth(b *testing.B, n int) (benchWorld, error) {
	dir, err := os.MkdirTemp("", "envserver-synth-*")
	if err != nil {
		return benchWorld{}, err
	}
	tempDirs = append(tempDirs, dir) // shared by the benchmarks; TestMain removes it
	f, err := os.Create(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		return benchWorld{}, err
	}
	g := synth.New(1, 50000)
	var titles []string
	if _, err := g.WriteJSONL(f, n, func(t string) {
		if len(titles) < 1000 {
			titles = append(titles, t)
		}
	}); err != nil {
		return benchWorld{}, err
	}
	f.Close()
	ixDir := filepath.Join(dir, "index")
	if _, err := index.Build(b.Context(), ixDir, []string{f.Name()}, index.BuildOptions{}); err != nil {
		return benchWorld{}, err
	}
	ix, err := index.Open(ixDir)
	if err != nil {
		return benchWorld{}, err
	}
	w := benchWorld{name: "synth-" + strconv.Itoa(n)}
	w.corpus = ix
	for i, t := range titles {
		w.qs = append(w.qs, pipeline.Question{ID: "s" + strconv.Itoa(i), Question: "What is " + t + "?", Answer: t})
		w.scripts = append(w.scripts, []string{"Search[" + t + "]", "Lookup[" + strings.ToLower(strings.Fields(t)[0]) + "]",
			"Search[" + g.Query() + "]", "Finish[" + t + "]"})
	}
	return w, nil
}

// benchSteps plays b.N steps in all, over sessions at once.
func benchSteps(b *testing.B, w benchWorld, sessions int, overWS bool) {
	ix, qs, scripts := w.corpus, w.qs, w.scripts
	opts := env.Options{Task: pipeline.TaskHotpotQA}
	msgs := make([][][]byte, len(qs)) // the step messages, encoded once as a client would
	resets := make([][]byte, len(qs))
	for i := range qs {
		for _, a := range scripts[i] {
			m, _ := fastjson.Marshal(map[string]any{"type": "step", "data": map[string]any{"action": a}})
			msgs[i] = append(msgs[i], m)
		}
		resets[i], _ = fastjson.Marshal(map[string]any{"type": "reset", "data": map[string]any{"seed": i}})
	}
	var base string
	if overWS {
		srv := newServer(b, envserver.Options{Corpus: ix, Env: opts, Questions: qs, TaskPath: "demo"})
		base, _ = serve(b, srv)
	}
	clients := make([]*wsClient, sessions)
	for i := range clients {
		if overWS {
			clients[i] = dialWS(b, base)
		}
	}
	var (
		left    atomic.Int64
		mu      sync.Mutex
		latency []time.Duration
	)
	left.Store(int64(b.N))
	load0 := benchmeter.LoadAverage()
	cpu0 := benchmeter.CPUSeconds()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Go(func() {
			lat := make([]time.Duration, 0, b.N/sessions+16)
			for ep := s; ; ep += sessions {
				qi := ep % len(qs)
				var w *env.Wiki
				if overWS {
					benchCall(b, clients[s], resets[qi])
				} else {
					o := opts
					o.Gold = qs[qi].Answer
					w = env.New(ix, o)
				}
				for j, a := range scripts[qi] {
					if left.Add(-1) < 0 {
						mu.Lock()
						latency = append(latency, lat...)
						mu.Unlock()
						return
					}
					t0 := time.Now()
					if overWS {
						benchCall(b, clients[s], msgs[qi][j])
					} else if _, err := w.Step(b.Context(), a); err != nil {
						b.Error(err)
						return
					}
					lat = append(lat, time.Since(t0))
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	b.StopTimer()
	cpu := benchmeter.CPUSeconds() - cpu0
	slices.Sort(latency)
	p99 := latency[len(latency)*99/100]
	b.ReportMetric(float64(b.N)/wall.Seconds(), "steps/s")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.ReportMetric(cpu/float64(b.N)*1e6, "cpu-µs/step")
	b.ReportMetric(cpu/wall.Seconds(), "cores")
	b.ReportMetric(load0, "load-before")
	b.ReportMetric(benchmeter.LoadAverage(), "load-after")
}

// benchCall sends one encoded message and reads its observation reply, as a lean client
// does (the tests' client decodes strictly; this one decodes what a trainer reads).
func benchCall(b *testing.B, c *wsClient, msg []byte) {
	ctx := b.Context()
	if err := c.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		b.Fatal(err)
	}
	_, reply, err := c.conn.Read(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var r struct {
		Type string `json:"type"`
		Data struct {
			Observation struct {
				Text string `json:"text"`
			} `json:"observation"`
			Reward *float64 `json:"reward"`
			Done   bool     `json:"done"`
		} `json:"data"`
	}
	if err := fastjson.Unmarshal(reply, &r); err != nil || r.Type != "observation" {
		b.Fatalf("reply %s: %v", reply, err)
	}
}
