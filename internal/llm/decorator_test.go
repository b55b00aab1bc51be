package llm_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// fanOut sends n requests from n goroutines and returns their errors.
func fanOut(t *testing.T, c llm.Client, n int, req func(i int) llm.Request) []error {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = c.Complete(t.Context(), req(i))
		})
	}
	wg.Wait()
	return errs
}

func TestBudgetRequestsExactUnderConcurrency(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Texts: []string{"ok"}, Delay: 5 * time.Millisecond, PromptTokens: 10, CompletionTokens: 2}))
	b := llm.WithBudget(newClient(t, s.URL, 0), llm.Budget{MaxRequests: 10}, nil)
	errs := fanOut(t, b, 50, func(int) llm.Request { return chatReq("q") })
	var budget, other int
	for _, err := range errs {
		switch {
		case errors.Is(err, llm.ErrBudget):
			budget++
		case err != nil:
			other++
			t.Errorf("unexpected error: %v", err)
		}
	}
	if s.Requests() != 10 || budget != 40 {
		t.Errorf("server requests %d, budget errors %d: want 10 and 40", s.Requests(), budget)
	}
	sp := b.Spent()
	if sp.Requests != 10 || sp.Usage.TotalTokens != 120 {
		t.Errorf("spent: got %+v, want 10 requests, 120 tokens", sp)
	}
	if !b.Exhausted() {
		t.Errorf("exhausted: got false")
	}
	if llm.IsRetryable(fmt.Errorf("wrapped: %w", llm.ErrBudget)) {
		t.Errorf("ErrBudget must not be retryable")
	}
}

func TestBudgetTokensAndCost(t *testing.T) {
	prices := map[string]pipeline.Price{"fake-chat": {Prompt: 1000, Completion: 2000}} // USD per 1M tokens
	tests := []struct {
		name   string
		budget llm.Budget
		want   int64 // server requests before ErrBudget
	}{
		// Each response: 100 prompt + 50 completion tokens = 150 tokens, $0.1 + $0.1 = $0.2.
		{"tokens", llm.Budget{MaxTokens: 450}, 3},
		{"tokens not a multiple", llm.Budget{MaxTokens: 451}, 4},
		{"cost", llm.Budget{MaxCostUSD: 0.5}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Texts: []string{"ok"}, PromptTokens: 100, CompletionTokens: 50}))
			b := llm.WithBudget(newClient(t, s.URL, 0), tt.budget, prices)
			var err error
			for range 10 {
				var resp llm.Response
				resp, err = b.Complete(t.Context(), chatReq("q"))
				if err != nil {
					break
				}
				if math.Abs(resp.CostUSD-0.2) > 1e-9 {
					t.Errorf("cost: got %v, want 0.2", resp.CostUSD)
				}
			}
			if !errors.Is(err, llm.ErrBudget) {
				t.Fatalf("got %v, want ErrBudget", err)
			}
			if s.Requests() != tt.want {
				t.Errorf("server requests: got %d, want %d", s.Requests(), tt.want)
			}
		})
	}
}

func TestCost(t *testing.T) {
	prices := map[string]pipeline.Price{"gpt-4o": {Prompt: 2.5, Completion: 10}, "gpt-4o-mini": {Prompt: 0.15, Completion: 0.6}}
	u := llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 500_000}
	tests := []struct {
		model string
		want  float64
	}{
		{"gpt-4o", 7.5},
		{"gpt-4o-mini", 0.45},
		{"gpt-4o-mini-2024-07-18", 0.45}, // the longest prefix, not gpt-4o
		{"llama-3-8b", 0},
	}
	for _, tt := range tests {
		if got := llm.Cost(tt.model, u, prices); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Cost(%s): got %v, want %v", tt.model, got, tt.want)
		}
	}
}

func TestBreakerStopsFast(t *testing.T) {
	tests := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"closed port", closedPortURL},
		{"unauthorized", func(t *testing.T) string {
			return llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.FaultUnauthorized})).URL
		}},
		{"model not found", func(t *testing.T) string {
			return llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.FaultModelNotFound})).URL
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := pipeline.Default().LLM
			cfg.BaseURL = tt.url(t)
			cfg.Cache = false
			c, meter, _, err := llm.New(t.Context(), cfg, canaryKey, "")
			if err != nil {
				t.Fatal(err)
			}
			var last error
			for i := range 10 {
				_, last = c.Complete(t.Context(), chatReq(fmt.Sprint(i)))
				if last == nil {
					t.Fatal("got no error")
				}
			}
			if !errors.Is(last, llm.ErrUnusable) {
				t.Errorf("got %v, want ErrUnusable", last)
			}
			if llm.IsRetryable(last) {
				t.Errorf("ErrUnusable must not be retryable")
			}
			if got := meter.Snapshot(); got.Failed != 10 || got.Retries != 0 {
				t.Errorf("meter: got %+v, want 10 failed, no retries", got)
			}
			if strings.Contains(last.Error(), canaryKey) {
				t.Errorf("key in error: %v", last)
			}
		})
	}
}

func TestBreakerDisarmedBySuccess(t *testing.T) {
	var fail atomic.Bool
	s := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply {
		if fail.Load() {
			return llmtest.Reply{Fault: llmtest.FaultUnauthorized}
		}
		return llmtest.Reply{Texts: []string{"ok"}}
	})
	c := llm.WithBreaker(newClient(t, s.URL, 0), 2)
	if _, err := c.Complete(t.Context(), chatReq("q")); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	for range 5 {
		_, err := c.Complete(t.Context(), chatReq("q"))
		if err == nil || errors.Is(err, llm.ErrUnusable) {
			t.Errorf("got %v, want the 401 itself once a request has succeeded", err)
		}
	}
	if s.Requests() != 6 {
		t.Errorf("requests: got %d, want 6", s.Requests())
	}
}

func TestBreakerIgnoresTransientFailures(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Faulty(5, llmtest.Fault503, llmtest.Text("ok")))
	c := llm.WithBreaker(newClient(t, s.URL, 0), 2)
	for i := range 6 {
		_, err := c.Complete(t.Context(), chatReq("q"))
		if errors.Is(err, llm.ErrUnusable) {
			t.Fatalf("request %d: a 503 that retries could fix tripped the breaker", i)
		}
	}
}

func TestMeterCounts(t *testing.T) {
	dir := t.TempDir()
	s := llmtest.NewServer(t, llmtest.Faulty(1, llmtest.Fault500, llmtest.Script(llmtest.Reply{Texts: []string{"ok"}, PromptTokens: 3, CompletionTokens: 4})))
	inner := llm.WithRetry(newClient(t, s.URL, 0), llm.RetryPolicy{MaxRetries: 2, Sleep: noSleep})
	m := llm.WithMeter(llm.WithCache(llm.WithBudget(inner, llm.Budget{}, map[string]pipeline.Price{"fake-chat": {Prompt: 1e6, Completion: 0}}), dir))
	errs := fanOut(t, m, 8, func(i int) llm.Request { return chatReq(fmt.Sprint(i % 4)) })
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Complete(t.Context(), llm.Request{Model: "fake-chat"}); err == nil {
		t.Fatal("invalid request: got no error")
	}
	got := m.Snapshot()
	if got.Requests != 9 || got.Failed != 1 || got.Retries != 1 {
		t.Errorf("snapshot: got %+v, want 9 requests, 1 failed, 1 retry", got)
	}
	misses := got.Requests - got.Failed - got.Cached
	if misses != s.Requests()-1 {
		t.Errorf("misses %d, server successes %d", misses, s.Requests()-1)
	}
	if got.Usage.TotalTokens != int(misses)*7 || math.Abs(got.Usage.CostUSD-float64(misses)*3) > 1e-6 {
		t.Errorf("usage: got %+v for %d uncached requests", got.Usage, misses)
	}
}

// peak is a Client that records how many calls overlap.
type peak struct {
	mu       sync.Mutex
	cur, max int
	calls    int
}

func (p *peak) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	p.mu.Lock()
	p.cur++
	p.calls++
	p.max = max(p.max, p.cur)
	p.mu.Unlock()
	time.Sleep(2 * time.Millisecond)
	p.mu.Lock()
	p.cur--
	p.mu.Unlock()
	return llm.Response{Choices: []llm.Choice{{Text: "ok"}}, Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}}, nil
}

func TestConcurrencyBounded(t *testing.T) {
	p := &peak{}
	c := llm.WithConcurrency(p, 3)
	for _, err := range fanOut(t, c, 30, func(int) llm.Request { return chatReq("q") }) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p.max > 3 || p.calls != 30 {
		t.Errorf("peak %d calls %d: want at most 3 and 30", p.max, p.calls)
	}
	// A waiter whose ctx ends gives up.
	block := make(chan struct{})
	one := llm.WithConcurrency(blocking(block), 1)
	go func() { _, _ = one.Complete(t.Context(), chatReq("q")) }()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	for {
		_, err := one.Complete(ctx, chatReq("q"))
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
	}
	close(block)
}

// blocking answers only once its channel is closed.
type blocking chan struct{}

func (b blocking) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	select {
	case <-b:
		return llm.Response{Choices: []llm.Choice{{}}}, nil
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
}

func TestRateLimit(t *testing.T) {
	t.Run("requests", func(t *testing.T) {
		p := &peak{}
		c := llm.WithRateLimit(p, 60, 0) // one a second, burst one
		if _, err := c.Complete(t.Context(), chatReq("q")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		if _, err := c.Complete(ctx, chatReq("q")); err == nil {
			t.Errorf("second request within the same second: got no wait")
		}
		if p.calls != 1 {
			t.Errorf("calls: got %d, want 1", p.calls)
		}
	})
	t.Run("tokens", func(t *testing.T) {
		p := &peak{}
		c := llm.WithRateLimit(p, 0, 600)        // 10 tokens a second, burst 600
		req := chatReq(strings.Repeat("x", 400)) // about 100 + 64 tokens
		if got := llm.EstimateTokens(req); got < 160 || got > 170 {
			t.Errorf("estimate: got %d, want about 165", got)
		}
		// The peak client reports 2 tokens per call: the estimate is credited back, so
		// far more than 600/165 requests fit in the first burst.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		for i := range 20 {
			if _, err := c.Complete(ctx, req); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		big := chatReq("q")
		big.MaxTokens = 10_000 // more than a minute's tokens: capped at the burst, not refused
		if _, err := c.Complete(ctx, big); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("big request: %v", err)
		}
	})
}

func TestNewComposes(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Faulty(1, llmtest.Fault429, llmtest.Script(llmtest.Reply{Texts: []string{"Finish[x]"}, PromptTokens: 10, CompletionTokens: 5})))
	cfg := pipeline.Default().LLM
	cfg.BaseURL = s.URL
	cfg.BackoffBase = time.Millisecond
	cfg.BackoffMax = 2 * time.Millisecond
	cfg.MaxRequests = 3
	cfg.Prices = map[string]pipeline.Price{"fake-chat": {Prompt: 1, Completion: 1}}
	dir := filepath.Join(t.TempDir(), "llm-cache")
	c, meter, budget, err := llm.New(t.Context(), cfg, canaryKey, dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		resp, err := c.Complete(t.Context(), chatReq(fmt.Sprint(i)))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if i == 0 && resp.Retries != 1 {
			t.Errorf("retries: got %d, want 1", resp.Retries)
		}
	}
	if _, err := c.Complete(t.Context(), chatReq("new")); !errors.Is(err, llm.ErrBudget) || !errors.Is(err, llm.ErrNotSent) {
		t.Errorf("fourth: got %v, want ErrBudget, not sent", err)
	}
	// Cache hits are free and pass the exhausted budget.
	resp, err := c.Complete(t.Context(), chatReq("1"))
	if err != nil || !resp.Cached {
		t.Errorf("cached after budget: got cached=%v err=%v", resp.Cached, err)
	}
	if got := budget.Spent(); got.Requests != 3 || got.Usage.TotalTokens != 45 {
		t.Errorf("spent: got %+v, want 3 requests, 45 tokens", got)
	}
	// The fourth request, refused by the budget, never left: the meter counts the three
	// sent and the cache hit, and no failure.
	if got := meter.Snapshot(); got.Requests != 4 || got.Cached != 1 || got.Failed != 0 || got.Retries != 1 || got.Usage.TotalTokens != 45 {
		t.Errorf("meter: got %+v", got)
	}
	cfg.Cache, cfg.CacheDir = true, ""
	if _, _, _, err := llm.New(t.Context(), cfg, "", ""); err == nil {
		t.Errorf("cache on without a dir: got no error")
	}
}

// heavy reports far more tokens than any estimate.
type heavy struct{ calls atomic.Int64 }

func (h *heavy) Complete(context.Context, llm.Request) (llm.Response, error) {
	h.calls.Add(1)
	return llm.Response{Choices: []llm.Choice{{Text: "ok"}}, Usage: llm.Usage{PromptTokens: 5000, CompletionTokens: 1000, TotalTokens: 6000}}, nil
}

func TestRateLimitChargesActualUsage(t *testing.T) {
	h := &heavy{}
	c := llm.WithRateLimit(h, 0, 6000) // 100 tokens a second
	if _, err := c.Complete(t.Context(), chatReq("q")); err != nil {
		t.Fatal(err)
	}
	// The first response used the whole minute's tokens: the next request must wait
	// about a minute, so a short deadline refuses it without calling the client.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Complete(ctx, chatReq("q"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want a deadline error", err)
	}
	if h.calls.Load() != 1 {
		t.Errorf("calls: got %d, want 1", h.calls.Load())
	}
}

func TestBudgetTokensInFlightComplete(t *testing.T) {
	release := make(chan struct{})
	s := llmtest.NewServer(t, func(ctx context.Context, _ llmtest.Req) llmtest.Reply {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return llmtest.Reply{Texts: []string{"ok"}, PromptTokens: 60, CompletionTokens: 40}
	})
	b := llm.WithBudget(newClient(t, s.URL, 0), llm.Budget{MaxTokens: 100}, nil)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := b.Complete(t.Context(), chatReq("q"))
			errs <- err
		}()
	}
	for s.Requests() < 4 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("in-flight request: got %v, want it to complete", err)
		}
	}
	if _, err := b.Complete(t.Context(), chatReq("q")); !errors.Is(err, llm.ErrBudget) {
		t.Errorf("after: got %v, want ErrBudget", err)
	}
	if got := b.Spent().Usage.TotalTokens; got != 400 {
		t.Errorf("spent tokens: got %d, want 400", got)
	}
}

func TestNotFoundPathHint(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Text("x"))
	c := newClient(t, strings.TrimSuffix(s.URL, "/v1"), 0) // the /v1 forgotten
	_, err := c.Complete(t.Context(), chatReq("q"))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Status != 404 || !strings.Contains(err.Error(), "check llm.base_url") {
		t.Errorf("got %v, want a 404 that points at llm.base_url", err)
	}
	if llm.IsRetryable(err) {
		t.Errorf("a wrong path must not be retryable")
	}
}
