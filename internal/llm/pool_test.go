package llm_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/internal/retry"
	"github.com/reactgen/reactgen/pipeline"
)

// poolOf builds a pool over the servers' URLs with concurrency conc each and no sleeps.
func poolOf(t *testing.T, conc int, weights []float64, urls ...string) *llm.Pool {
	t.Helper()
	eps := make([]llm.Endpoint, len(urls))
	for i, u := range urls {
		w := 1.0
		if weights != nil {
			w = weights[i]
		}
		eps[i] = llm.Endpoint{Name: u, Client: newClient(t, u, 5*time.Second), Concurrency: conc, Weight: w}
	}
	p, err := llm.NewPool(eps, llm.PoolPolicy{
		Retry:     retry.Policy{MaxRetries: 6, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }},
		ProbeBase: 20 * time.Millisecond, ProbeMax: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func served(p *llm.Pool) []int64 {
	var out []int64
	for _, s := range p.Stats() {
		out = append(out, s.Served)
	}
	return out
}

func TestPoolSpreadsByWeightAndFillsFreeCapacity(t *testing.T) {
	a := llmtest.NewServer(t, llmtest.Text("ok"))
	b := llmtest.NewServer(t, llmtest.Text("ok"))
	// One at a time: every request finds both endpoints free, so the weights decide.
	p := poolOf(t, 4, []float64{3, 1}, a.URL, b.URL)
	for i := range 40 {
		if _, err := p.Complete(t.Context(), chatReq(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := served(p); got[0] != 30 || got[1] != 10 {
		t.Errorf("served %v, want [30 10] by weights 3:1", got)
	}
	// Many at once against a slow endpoint a: b takes what a has no room for.
	slow := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Texts: []string{"ok"}, Delay: 50 * time.Millisecond}))
	p = poolOf(t, 2, []float64{100, 1}, slow.URL, b.URL)
	for _, err := range fanOut(t, p, 40, func(i int) llm.Request { return chatReq(fmt.Sprint(i)) }) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := served(p); got[1] <= got[0] {
		t.Errorf("served %v: the fast endpoint with weight 1 should take more than the slow one whose 2 slots are full", got)
	}
}

func TestPoolTakesOutFailingEndpointAndProbesItBack(t *testing.T) {
	tests := []struct {
		name  string
		fault llmtest.Reply
	}{
		{"5xx storm", llmtest.Reply{Fault: llmtest.Fault503}},
		{"429 with a long Retry-After", llmtest.Reply{Fault: llmtest.Fault429, RetryAfter: "0.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var broken atomic.Bool
			broken.Store(true)
			bad := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply {
				if broken.Load() {
					return tt.fault
				}
				return llmtest.Reply{Texts: []string{"ok"}}
			})
			good := llmtest.NewServer(t, llmtest.Text("ok"))
			eps := []llm.Endpoint{
				{Name: "bad", Client: newClient(t, bad.URL, 0), Concurrency: 4, Weight: 1},
				{Name: "good", Client: newClient(t, good.URL, 0), Concurrency: 4, Weight: 1},
			}
			p, err := llm.NewPool(eps, llm.PoolPolicy{
				Retry:          retry.Policy{MaxRetries: 3},
				LongRetryAfter: 100 * time.Millisecond, ProbeBase: 20 * time.Millisecond, ProbeMax: 40 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 30 {
				if _, err := p.Complete(t.Context(), chatReq(fmt.Sprint(i))); err != nil {
					t.Fatalf("request %d: %v (the good endpoint should have served it)", i, err)
				}
			}
			st := p.Stats()
			if st[0].Served != 0 || st[1].Served != 30 || st[0].Ejections == 0 {
				t.Fatalf("stats %+v: want everything served by good and bad taken out", st)
			}
			if bad.Requests() >= 30 {
				t.Errorf("bad saw %d requests: it should have been out most of the time", bad.Requests())
			}
			// It recovers: a probe finds it working and it takes its share again.
			broken.Store(false)
			for i := 0; p.Stats()[0].Served == 0; i++ {
				if _, err := p.Complete(t.Context(), chatReq(fmt.Sprint("again", i))); err != nil {
					t.Fatal(err)
				}
				if i > 10000 {
					t.Fatal("the recovered endpoint was never probed back")
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

func TestPoolMovesInFlightRequestsOffAKilledEndpoint(t *testing.T) {
	var victim *llmtest.Server
	var started atomic.Int64
	victim = llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		if started.Add(1) == 5 {
			go victim.Kill()
		}
		return llmtest.Reply{Texts: []string{"ok"}, Delay: 20 * time.Millisecond}
	})
	others := []*llmtest.Server{
		llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Texts: []string{"ok"}, Delay: 5 * time.Millisecond})),
		llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Texts: []string{"ok"}, Delay: 5 * time.Millisecond})),
	}
	p := poolOf(t, 4, nil, victim.URL, others[0].URL, others[1].URL)
	const n = 200
	for i, err := range fanOut(t, p, n, func(i int) llm.Request { return chatReq(fmt.Sprint(i)) }) {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	st := p.Stats()
	if total := st[0].Served + st[1].Served + st[2].Served; total != n {
		t.Errorf("served %d in all, want %d: %+v", total, n, st)
	}
	if st[0].Ejections == 0 {
		t.Errorf("the killed endpoint was never taken out: %+v", st[0])
	}
}

func TestPoolAllUnreachableFailsFast(t *testing.T) {
	eps := []llm.Endpoint{
		{Name: "a", Client: newClient(t, closedPortURL(t), 0), Weight: 1},
		{Name: "b", Client: newClient(t, closedPortURL(t), 0), Weight: 1},
	}
	p, err := llm.NewPool(eps, llm.PoolPolicy{Retry: retry.Policy{MaxRetries: 50}, FailFastUntilSuccess: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(t.Context(), chatReq("q"))
	if !errors.Is(err, llm.ErrRetriesExhausted) {
		t.Fatalf("got %v, want retries exhausted at once", err)
	}
	var ex *retry.Exhausted
	if errors.As(err, &ex) && ex.Tries != 2 {
		t.Errorf("tries: got %d, want 2 (one per endpoint)", ex.Tries)
	}
}

// TestPoolCacheKeyHasNoURL fills the cache through one endpoint and replays it through a
// pool of another: the cache keys on the request, not the server.
func TestPoolCacheKeyHasNoURL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	first := llmtest.NewServer(t, llmtest.Text("from first"))
	second := llmtest.NewServer(t, llmtest.Text("from second"))
	for i, url := range []string{first.URL, second.URL} {
		cfg := pipeline.Default().LLM
		cfg.Model = "fake-chat"
		cfg.Endpoints = []pipeline.EndpointConfig{{BaseURL: url}}
		cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg, CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 10 {
			resp, err := cs.Client.Complete(t.Context(), chatReq(fmt.Sprint(j)))
			if err != nil || resp.Choices[0].Text != "from first" || resp.Cached != (i == 1) {
				t.Fatalf("pool %d request %d: %+v, %v", i, j, resp, err)
			}
		}
	}
	if second.Requests() != 0 {
		t.Errorf("second endpoint saw %d requests, want 0 (all cached)", second.Requests())
	}
}

func TestPoolEndpointsFallBackToLLMKeys(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Texts: []string{"ok"}, PromptTokens: 1000, CompletionTokens: 0}))
	cfg := pipeline.Default().LLM
	cfg.BaseURL, cfg.Model, cfg.Cache, cfg.APIKeyEnv = s.URL, "served-name", false, "MAIN_KEY"
	cfg.Headers = map[string]string{"X-Team": "main"}
	cfg.Prices = map[string]pipeline.Price{"served-name": {Prompt: 1}}
	two := 2.0
	cfg.Endpoints = []pipeline.EndpointConfig{
		{}, // everything from llm.*
		{APIKeyEnv: "OTHER_KEY", Headers: map[string]string{"X-Team": "other"}, Prices: map[string]pipeline.Price{"served-name": {Prompt: 3}}, Weight: &two},
	}
	keys := map[string]string{"MAIN_KEY": "sk-main", "OTHER_KEY": "sk-other"}
	cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg, Getenv: func(k string) string { return keys[k] }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := cs.Client.Complete(t.Context(), llm.Request{Model: "served-name", Messages: []llm.Message{{Role: "user", Content: fmt.Sprint(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Weights 1:2 over three sequential requests: one to the first, two to the second.
	auth := map[string]string{}
	for _, rec := range s.Log() {
		auth[rec.Header.Get("Authorization")] = rec.Header.Get("X-Team")
	}
	if auth["Bearer sk-main"] != "main" || auth["Bearer sk-other"] != "other" {
		t.Errorf("keys and headers per endpoint: got %v", auth)
	}
	if got := cs.Budget.Spent().Usage.CostUSD; got < 0.007-1e-9 || got > 0.007+1e-9 {
		t.Errorf("cost: got %v, want 0.001 + 2 * 0.003 by each endpoint's prices", got)
	}
}
