package generate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/generate/prompt"
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
