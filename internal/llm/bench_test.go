package llm_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

// BenchmarkOpenAIRoundTrip measures the adapter's overhead per request against the fake.
func BenchmarkOpenAIRoundTrip(b *testing.B) {
	s := llmtest.NewServer(b, llmtest.Text("Thought: x\nAction: Search[y]"))
	c, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: s.URL, APIKey: "k"})
	if err != nil {
		b.Fatal(err)
	}
	req := chatReq("question")
	for b.Loop() {
		if _, err := c.Complete(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// benchExemplars stands in for the few-shot exemplars that open every ReAct prompt:
// about 10 KB, the same in every request.
var benchExemplars = strings.Repeat("Question: Which magazine was started first, Arthur's Magazine or First for Women?\n"+
	"Thought 1: I need to search Arthur's Magazine and First for Women, and find which was started first.\n"+
	"Action 1: Search[Arthur's Magazine]\n"+
	"Observation 1: Arthur's Magazine (1844-1846) was an American literary periodical published in Philadelphia.\n", 30)

// benchReq is the i-th distinct request of a benchmark: the exemplars, then a question.
func benchReq(i int) llm.Request {
	return llm.Request{Model: "fake-chat", MaxTokens: 256, Stop: []string{"\nObservation"}, Messages: []llm.Message{
		{Role: "system", Content: "Solve a question answering task with interleaving Thought, Action, Observation steps."},
		{Role: "user", Content: benchExemplars + fmt.Sprintf("Question: benchmark question number %d?\n", i)},
	}}
}

// instant answers every request at once with one typical ReAct step, so that the
// cache benchmarks measure the cache alone.
type instant struct{}

func (instant) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{
		Choices: []llm.Choice{{Text: "Thought 2: Arthur's Magazine was started in 1844. I need to search First for Women next.\nAction 2: Search[First for Women]", FinishReason: "stop"}},
		Usage:   llm.Usage{PromptTokens: 2600, CompletionTokens: 30, TotalTokens: 2630}, Model: "fake-chat", Latency: 800 * time.Millisecond,
	}, nil
}

// BenchmarkCacheStore measures a miss that stores its response: one new request per op.
func BenchmarkCacheStore(b *testing.B) {
	c := llm.WithCache(instant{}, b.TempDir())
	i := 0
	for b.Loop() {
		if _, err := c.Complete(b.Context(), benchReq(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkCacheStoreParallel is BenchmarkCacheStore from GOMAXPROCS goroutines at once.
func BenchmarkCacheStoreParallel(b *testing.B) {
	c := llm.WithCache(instant{}, b.TempDir())
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Complete(b.Context(), benchReq(int(n.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCacheHit measures a replayed request, in a cache reopened after 1,024 were stored.
func BenchmarkCacheHit(b *testing.B) {
	dir := b.TempDir()
	reqs := make([]llm.Request, 1024)
	fill := llm.WithCache(instant{}, dir)
	for i := range reqs {
		reqs[i] = benchReq(i)
		if _, err := fill.Complete(b.Context(), reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
	c := llm.WithCache(instant{}, dir)
	i := 0
	for b.Loop() {
		resp, err := c.Complete(b.Context(), reqs[i%len(reqs)])
		if err != nil || !resp.Cached {
			b.Fatalf("request %d: cached=%v err=%v", i, resp.Cached, err)
		}
		i++
	}
}

// BenchmarkCacheOpen measures opening a cache of 100,000 entries: the time to read and
// index them, and the heap the open cache holds per entry.
func BenchmarkCacheOpen(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	fill := llm.WithCache(instant{}, dir)
	for i := range n {
		if _, err := fill.Complete(b.Context(), benchReq(i)); err != nil {
			b.Fatal(err)
		}
	}
	var c llm.Client
	var before, after runtime.MemStats
	for b.Loop() {
		c = nil
		runtime.GC()
		runtime.ReadMemStats(&before)
		c = llm.WithCache(instant{}, dir)
		runtime.GC()
		runtime.ReadMemStats(&after)
	}
	if resp, err := c.Complete(b.Context(), benchReq(n-1)); err != nil || !resp.Cached {
		b.Fatalf("last entry: cached=%v err=%v", resp.Cached, err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entry")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/entry")
}

// BenchmarkPool sends requests through a pool of four fake endpoints of different
// latencies, more callers than all their slots, and reports the throughput as a fraction
// of the sum of the endpoints' capacities (concurrency / latency each). Run it with
// -benchtime 1x; REACTGEN_BENCH_POOL_REQUESTS sets the requests per op (default 3,000).
func BenchmarkPool(b *testing.B) {
	latencies := []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
	const conc = 8
	total := 3000
	if v := os.Getenv("REACTGEN_BENCH_POOL_REQUESTS"); v != "" {
		fmt.Sscan(v, &total)
	}
	var eps []llm.Endpoint
	capacity := 0.0
	for _, lat := range latencies {
		s := llmtest.NewServer(b, llmtest.Script(llmtest.Reply{Texts: []string{"Thought: x\nAction: Search[y]"}, Delay: lat}))
		s.DropLog()
		c, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: s.URL, APIKey: "k",
			HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * conc}}})
		if err != nil {
			b.Fatal(err)
		}
		eps = append(eps, llm.Endpoint{Name: lat.String(), Client: c, Concurrency: conc, Weight: 1})
		capacity += conc / lat.Seconds()
	}
	p, err := llm.NewPool(eps, llm.PoolPolicy{})
	if err != nil {
		b.Fatal(err)
	}
	callers := 2 * conc * len(latencies)
	var elapsed time.Duration
	for b.Loop() {
		var next atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for i := next.Add(1); i <= int64(total); i = next.Add(1) {
					if _, err := p.Complete(b.Context(), chatReq(fmt.Sprint(i))); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
	}
	perSec := float64(total*b.N) / elapsed.Seconds()
	b.ReportMetric(perSec, "req/s")
	b.ReportMetric(capacity, "capacity-req/s")
	b.ReportMetric(perSec/capacity, "of-capacity")
	for _, st := range p.Stats() {
		b.Logf("endpoint %s: served %d (%.1f%%), failed %d", st.Name, st.Served, 100*st.Share, st.Failed)
	}
}
