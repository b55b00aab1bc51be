package generate

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/data"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/benchmeter"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// benchLatency is the fake server's mean reply time; each reply takes it +/- 20 ms.
const benchLatency = 50 * time.Millisecond

func benchServer(b *testing.B) llm.Client {
	b.Helper()
	fm := &fakeModel{delay: func() time.Duration { return benchLatency - 20*time.Millisecond + rand.N(40*time.Millisecond+1) }}
	srv := llmtest.NewServer(b, fm.handle)
	srv.DropLog() // a remote server's memory is not the client's
	// 256 requests in flight need as many idle connections, or the transport closes and
	// redials most of them after each reply.
	c, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024}}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// warmUp opens the connections a run at conc keeps open, so that the timed run measures
// the steady state of a long run rather than the one-off dialling of conc connections
// at its start. REACTGEN_BENCH_COLD=1 skips it.
func warmUp(b *testing.B, c llm.Client, conc int) {
	b.Helper()
	if os.Getenv("REACTGEN_BENCH_COLD") == "1" {
		return
	}
	if _, err := Run(b.Context(), benchOptions(c, conc, conc, &countSink{})); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
}

// benchOptions runs n ReAct episodes in chat format, conc at a time, in question order.
func benchOptions(c llm.Client, conc, n int, sink pipeline.Sink) RunOptions {
	o := RunOptions{Task: "hotpotqa", Questions: manyQuestions(n), Prompts: worldSet("hotpotqa"), NewEnv: worldEnv("hotpotqa"), Client: c, Sink: sink}
	o.Config, o.LLM = testConfig("react", "chat")
	o.Config.Concurrency, o.Config.Shuffle = conc, false
	return o
}

func benchEpisodes(conc int) int {
	if conc == 1 {
		return 50 // 50 episodes x 3 calls x 50 ms is already 7.5 s
	}
	return 1000
}

// BenchmarkScheduler runs ReAct episodes (3 model calls each) through Run against a
// loopback fake that answers after 50 ms +/- 20 ms, and reports episodes/s and its ratio
// to the ideal concurrency / (mean latency x mean calls per episode).
func BenchmarkScheduler(b *testing.B) {
	for _, conc := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("pool/c%d", conc), func(b *testing.B) {
			c := benchServer(b)
			n := benchEpisodes(conc)
			warmUp(b, c, conc)
			for b.Loop() {
				sink := &countSink{}
				o := benchOptions(c, conc, n, sink)
				start := time.Now()
				sum, err := Run(b.Context(), o)
				if err != nil || sum.Correct != n {
					b.Fatalf("run: %v, %d of %d correct", err, sum.Correct, n)
				}
				report(b, conc, n, sum.Requests, time.Since(start))
				// The same ratio against the measured call latency, which on a loaded machine
				// includes the client's and the fake server's CPU time.
				ms := float64(sink.latMS) / float64(sink.calls)
				b.ReportMetric(ms, "ms/call")
				b.ReportMetric(float64(n)/time.Since(start).Seconds()/(float64(conc)/(ms/1000*float64(sum.Requests)/float64(n))), "of-ideal-measured")
			}
		})
		b.Run(fmt.Sprintf("lockstep/c%d", conc), func(b *testing.B) {
			c := benchServer(b)
			n := benchEpisodes(conc)
			warmUp(b, c, conc)
			for b.Loop() {
				start := time.Now()
				calls := lockStep(b, c, manyQuestions(n), conc)
				report(b, conc, n, calls, time.Since(start))
			}
		})
	}
}

func report(b *testing.B, conc, episodes, calls int, el time.Duration) {
	b.Helper()
	rate := float64(episodes) / el.Seconds()
	perEpisode := float64(calls) / float64(episodes)
	ideal := float64(conc) / (benchLatency.Seconds() * perEpisode)
	b.ReportMetric(rate, "episodes/s")
	b.ReportMetric(rate/ideal, "of-ideal")
	b.ReportMetric(perEpisode, "calls/episode")
}

type countSink struct {
	mu    sync.Mutex
	n     int
	calls int
	latMS int64
}

func (s *countSink) Write(ctx context.Context, ep pipeline.Episode) error {
	s.mu.Lock()
	s.n++
	for _, st := range ep.Steps {
		for _, c := range st.Calls {
			s.calls++
			s.latMS += c.LatencyMS
		}
	}
	s.mu.Unlock()
	return nil
}

// lockStep runs the episodes in rounds of conc: every episode of a round takes step k,
// and the round waits for the slowest reply before any takes step k+1. It returns the
// number of model calls.
func lockStep(b *testing.B, c llm.Client, qs []pipeline.Question, conc int) int {
	b.Helper()
	set, _ := worldSet("hotpotqa").For("react")
	l, _ := prompt.NewLayout(set, "chat")
	newEnv := worldEnv("hotpotqa")
	calls := 0
	for lo := 0; lo < len(qs); lo += conc {
		round := qs[lo:min(lo+conc, len(qs))]
		type state struct {
			env   Environment
			steps []pipeline.Step
			done  bool
		}
		states := make([]state, len(round))
		for i := range states {
			states[i].env = newEnv(round[i])
		}
		actor := &LLMActor{Client: c, Layout: l, Model: "fake-model"}
		for range 7 {
			var wg sync.WaitGroup
			moves := make([]Move, len(round))
			for i := range round {
				if states[i].done {
					continue
				}
				calls++
				wg.Go(func() {
					mv, err := actor.Act(b.Context(), round[i], states[i].steps)
					if err != nil {
						b.Error(err)
					}
					moves[i] = mv
				})
			}
			wg.Wait()
			alive := false
			for i := range round {
				if states[i].done {
					continue
				}
				res, err := states[i].env.Step(b.Context(), moves[i].Action)
				if err != nil {
					b.Fatal(err)
				}
				states[i].steps = append(states[i].steps, pipeline.Step{Thought: moves[i].Thought, Action: res.Action.String(), Observation: res.Observation})
				states[i].done = res.Done
				alive = alive || !res.Done
			}
			if !alive {
				break
			}
		}
	}
	return calls
}

// The fake server of BenchmarkCallCPU runs in a child process (this test binary run
// again with benchServerEnv set), so that the parent's CPU time is the client's alone.
const benchServerEnv = "REACTGEN_BENCH_FAKE_SERVER"

// TestBenchFakeServerProcess is the child: it serves the benchmark's fake model on
// 127.0.0.1, prints its URL and serves until its stdin closes. It skips unless
// BenchmarkCallCPU started it.
func TestBenchFakeServerProcess(t *testing.T) {
	if os.Getenv(benchServerEnv) != "1" {
		t.Skip("the child process of BenchmarkCallCPU")
	}
	fm := &fakeModel{delay: func() time.Duration { return benchLatency - 20*time.Millisecond + rand.N(40*time.Millisecond+1) }}
	srv := llmtest.NewServer(t, fm.handle)
	srv.DropLog()
	fmt.Println(srv.URL)
	io.Copy(io.Discard, os.Stdin)
}

// childServer starts TestBenchFakeServerProcess and returns its URL.
func childServer(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestBenchFakeServerProcess$", "-test.count", "1")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("fake server process: %v", err)
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(url)
}

// BenchmarkCallCPU is the client's CPU time per model call: 1,000 ReAct episodes in
// completion format with the bundled hotpotqa exemplars at 16, 64 and 256 in flight, with the response cache on (every call
// a miss, so each is stored) and the episode log (fsynced as pipeline.Default
// says: every record), against the fake model in a child process, so that the process's
// user+sys CPU time is the client's alone. It reports CPU-µs/call beside the wall time
// and the load average.
func BenchmarkCallCPU(b *testing.B) {
	for _, conc := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) {
			url := childServer(b)
			dir := b.TempDir()
			// The client the command builds (llm.New: meter, cache, budget, breaker, choices,
			// rate limit, concurrency, retries, its transport), warmed up without the cache.
			cfg := pipeline.Default().LLM
			cfg.BaseURL, cfg.Model, cfg.Concurrency, cfg.Cache = url, "fake-model", conc, false
			base, _, _, err := llm.New(b.Context(), cfg, "", "")
			if err != nil {
				b.Fatal(err)
			}
			warmUp(b, base, conc)
			cfg.Cache = true
			// The bundled six exemplars: a request of the size a real run sends.
			prompts, err := prompt.Load("", "hotpotqa", data.FS)
			if err != nil {
				b.Fatal(err)
			}
			round, calls := 0, 0
			var cpu, wall, load float64
			for b.Loop() {
				round++
				c, _, _, err := llm.New(b.Context(), cfg, "", filepath.Join(dir, fmt.Sprintf("cache%d", round)))
				if err != nil {
					b.Fatal(err)
				}
				lg, _, _, err := pipeline.OpenEpisodeLog(filepath.Join(dir, fmt.Sprintf("episodes%d.jsonl", round)), pipeline.Default().Run.FsyncEvery, pipeline.Default().Run.FsyncInterval)
				if err != nil {
					b.Fatal(err)
				}
				n := 1000
				o := benchOptions(c, conc, n, lg)
				o.Config.Format, o.LLM, o.Prompts = "completion", cfg, prompts
				load += benchmeter.LoadAverage()
				cpu0, start := benchmeter.CPUSeconds(), time.Now()
				sum, err := Run(b.Context(), o)
				cpu, wall = cpu+benchmeter.CPUSeconds()-cpu0, wall+time.Since(start).Seconds()
				calls += sum.Requests
				if err != nil || sum.Correct != n {
					b.Fatalf("run: %v, %d of %d correct", err, sum.Correct, n)
				}
				if err := lg.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(cpu/float64(calls)*1e6, "CPU-µs/call")
			b.ReportMetric(cpu/float64(round), "CPU-s")
			b.ReportMetric(wall/float64(round), "wall-s")
			b.ReportMetric(load/float64(round), "load")
		})
	}
}
