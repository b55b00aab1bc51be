package envserver_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
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

// BenchmarkStepsOverWSClientApart plays the same episodes over /ws with the client in a
// child process, as a trainer's client runs: server-cpu-µs/step is the server's CPU
// alone (this process), client-cpu-µs/step the child's, and steps/s and the p99 are the
// client's.
func BenchmarkStepsOverWSClientApart(b *testing.B) {
	for _, w := range benchWorlds(b) {
		for _, n := range []int{64, 256} {
			b.Run(w.name+"/sessions="+strconv.Itoa(n), func(b *testing.B) { benchStepsApart(b, w, n) })
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

// benchMessages are the reset and step messages of each question, encoded once as a
// client would.
func benchMessages(w benchWorld) (resets [][]byte, msgs [][][]byte) {
	msgs, resets = make([][][]byte, len(w.qs)), make([][]byte, len(w.qs))
	for i := range w.qs {
		for _, a := range w.scripts[i] {
			m, _ := fastjson.Marshal(map[string]any{"type": "step", "data": map[string]any{"action": a}})
			msgs[i] = append(msgs[i], m)
		}
		resets[i], _ = fastjson.Marshal(map[string]any{"type": "reset", "data": map[string]any{"seed": i}})
	}
	return resets, msgs
}

// playSessions plays n steps in all over sessions at once: session s plays episodes s,
// s+sessions, … of the questions (reset, then each step of its script), and stops at the
// n-th step overall. It returns the wall time and every step's latency, sorted.
func playSessions(sessions, n int, scripts [][][]byte, reset func(s, qi int) error, step func(s, qi, j int) error) (time.Duration, []time.Duration, error) {
	var (
		left    atomic.Int64
		mu      sync.Mutex
		latency []time.Duration
		first   error
	)
	left.Store(int64(n))
	start := time.Now()
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Go(func() {
			lat := make([]time.Duration, 0, n/sessions+16)
			defer func() {
				mu.Lock()
				latency = append(latency, lat...)
				mu.Unlock()
			}()
			fail := func(err error) {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
				left.Store(0)
			}
			for ep := s; ; ep += sessions {
				qi := ep % len(scripts)
				if err := reset(s, qi); err != nil {
					fail(err)
					return
				}
				for j := range scripts[qi] {
					if left.Add(-1) < 0 {
						return
					}
					t0 := time.Now()
					if err := step(s, qi, j); err != nil {
						fail(err)
						return
					}
					lat = append(lat, time.Since(t0))
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	slices.Sort(latency)
	return wall, latency, first
}

// benchSteps plays b.N steps in all, over sessions at once.
func benchSteps(b *testing.B, w benchWorld, sessions int, overWS bool) {
	ix, qs, scripts := w.corpus, w.qs, w.scripts
	opts := env.Options{Task: pipeline.TaskHotpotQA}
	resets, msgs := benchMessages(w)
	var base string
	if overWS {
		srv := newServer(b, envserver.Options{Corpus: ix, Env: opts, Questions: qs, TaskPath: "demo"})
		base, _ = serve(b, srv)
	}
	clients := make([]*benchConn, sessions)
	wikis := make([]*env.Wiki, sessions)
	for i := range clients {
		if overWS {
			c, err := dialBench(b.Context(), base)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.conn.CloseNow() })
			clients[i] = c
		}
	}
	reset := func(s, qi int) error {
		if overWS {
			return clients[s].call(b.Context(), resets[qi])
		}
		o := opts
		o.Gold = qs[qi].Answer
		wikis[s] = env.New(ix, o)
		return nil
	}
	step := func(s, qi, j int) error {
		if overWS {
			return clients[s].call(b.Context(), msgs[qi][j])
		}
		_, err := wikis[s].Step(b.Context(), scripts[qi][j])
		return err
	}
	load0 := benchmeter.LoadAverage()
	cpu0 := benchmeter.CPUSeconds()
	b.ResetTimer()
	wall, latency, err := playSessions(sessions, b.N, msgs, reset, step)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	cpu := benchmeter.CPUSeconds() - cpu0
	p99 := latency[len(latency)*99/100]
	b.ReportMetric(float64(b.N)/wall.Seconds(), "steps/s")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.ReportMetric(cpu/float64(b.N)*1e6, "cpu-µs/step")
	b.ReportMetric(cpu/wall.Seconds(), "cores")
	b.ReportMetric(load0, "load-before")
	b.ReportMetric(benchmeter.LoadAverage(), "load-after")
}

// benchClientEnv names the job file of a client process (benchClient).
const benchClientEnv = "REACTGEN_BENCH_WS_CLIENT"

// benchJob is what a client process plays, and benchResult what it reports.
type benchJob struct {
	Base     string     `json:"base"`
	Sessions int        `json:"sessions"`
	Steps    int        `json:"steps"`
	Resets   [][]byte   `json:"resets"`
	Msgs     [][][]byte `json:"msgs"`
}

type benchResult struct {
	WallNS int64 `json:"wall_ns"`
	P99NS  int64 `json:"p99_ns"`
}

// benchStepsApart is benchSteps over /ws with the client in a child process (this test
// binary, run as benchClient).
func benchStepsApart(b *testing.B, w benchWorld, sessions int) {
	resets, msgs := benchMessages(w)
	srv := newServer(b, envserver.Options{Corpus: w.corpus, Env: env.Options{Task: pipeline.TaskHotpotQA}, Questions: w.qs, TaskPath: "demo"})
	base, _ := serve(b, srv)
	job, err := json.Marshal(benchJob{Base: base, Sessions: sessions, Steps: b.N, Resets: resets, Msgs: msgs})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "job.json")
	if err := os.WriteFile(path, job, 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.CommandContext(b.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchClientEnv+"="+path)
	cmd.Stderr = os.Stderr
	load0 := benchmeter.LoadAverage()
	cpu0 := benchmeter.CPUSeconds()
	b.ResetTimer()
	out, err := cmd.Output()
	b.StopTimer()
	if err != nil {
		b.Fatalf("client process: %v", err)
	}
	server := benchmeter.CPUSeconds() - cpu0 // the dialling and the process start are in it, once per run
	var res benchResult
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("client process said %q: %v", out, err)
	}
	client := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	wall := time.Duration(res.WallNS)
	b.ReportMetric(float64(b.N)/wall.Seconds(), "steps/s")
	b.ReportMetric(float64(res.P99NS)/1e3, "p99-µs")
	b.ReportMetric(server/float64(b.N)*1e6, "server-cpu-µs/step")
	b.ReportMetric(client/float64(b.N)*1e6, "client-cpu-µs/step")
	b.ReportMetric(load0, "load-before")
	b.ReportMetric(benchmeter.LoadAverage(), "load-after")
}

// benchClient is the client process: it plays the job's steps over /ws and prints its
// wall time and p99 as JSON. It returns the exit code.
func benchClient(path string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "bench client:", err)
		return 1
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fail(err)
	}
	var job benchJob
	if err := json.Unmarshal(data, &job); err != nil {
		return fail(err)
	}
	ctx := context.Background()
	clients := make([]*benchConn, job.Sessions)
	for i := range clients {
		if clients[i], err = dialBench(ctx, job.Base); err != nil {
			return fail(err)
		}
	}
	wall, latency, err := playSessions(job.Sessions, job.Steps, job.Msgs,
		func(s, qi int) error { return clients[s].call(ctx, job.Resets[qi]) },
		func(s, qi, j int) error { return clients[s].call(ctx, job.Msgs[qi][j]) })
	if err != nil {
		return fail(err)
	}
	for _, c := range clients {
		c.conn.Close(websocket.StatusNormalClosure, "")
	}
	out, _ := json.Marshal(benchResult{WallNS: int64(wall), P99NS: int64(latency[len(latency)*99/100])})
	fmt.Println(string(out))
	return 0
}

// benchConn is a lean /ws client: one connection, its read buffer reused.
type benchConn struct {
	conn *websocket.Conn
	buf  []byte
}

func dialBench(ctx context.Context, base string) (*benchConn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(base, "http://", "ws://", 1)+"/ws", nil)
	if err != nil {
		return nil, fmt.Errorf("dial /ws: %w", err)
	}
	return &benchConn{conn: conn, buf: make([]byte, 0, 4096)}, nil
}

// call sends one encoded message and reads its observation reply, as a lean client
// does (the tests' client decodes strictly; this one decodes what a trainer reads).
func (c *benchConn) call(ctx context.Context, msg []byte) error {
	if err := c.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return err
	}
	_, r, err := c.conn.Reader(ctx)
	if err != nil {
		return err
	}
	buf := bytes.NewBuffer(c.buf[:0])
	if _, err := buf.ReadFrom(r); err != nil {
		return err
	}
	c.buf = buf.Bytes()
	var reply struct {
		Type string `json:"type"`
		Data struct {
			Observation struct {
				Text string `json:"text"`
			} `json:"observation"`
			Reward *float64 `json:"reward"`
			Done   bool     `json:"done"`
		} `json:"data"`
	}
	if err := fastjson.Unmarshal(c.buf, &reply); err != nil || reply.Type != "observation" {
		return fmt.Errorf("reply %s: %v", c.buf, err)
	}
	return nil
}
