package llm_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

func TestChoicesLearnsOnce(t *testing.T) {
	tests := []struct {
		name      string
		mode      func(*llmtest.Server)
		supported bool
		requests  int64 // of 20 concurrent requests with n = 5
		spent     int   // requests the budget counts
	}{
		{"honours n", func(*llmtest.Server) {}, true, 20, 20},
		{"ignores n", (*llmtest.Server).IgnoreN, false, 1, 1}, // the short answer was paid for
		{"rejects n", (*llmtest.Server).RejectN, false, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewServer(t, llmtest.Text("Answer: x"))
			tt.mode(s)
			cfg := pipeline.Default().LLM
			cfg.BaseURL, cfg.Cache = s.URL, false
			c, _, budget, err := llm.New(t.Context(), cfg, "", "")
			if err != nil {
				t.Fatal(err)
			}
			errs := fanOut(t, c, 20, func(int) llm.Request {
				r := chatReq("q")
				r.N = 5
				return r
			})
			for _, err := range errs {
				if tt.supported && err != nil || !tt.supported && !errors.Is(err, llm.ErrNUnsupported) {
					t.Fatalf("got %v, want ErrNUnsupported only when n is not honoured", err)
				}
			}
			if got := s.Requests(); got != tt.requests {
				t.Errorf("server requests: got %d, want %d", got, tt.requests)
			}
			if got := budget.Spent().Requests; got != tt.spent {
				t.Errorf("budget requests: got %d, want %d", got, tt.spent)
			}
			// Single requests are untouched, and the breaker did not count the verdict.
			if _, err := c.Complete(t.Context(), chatReq("one")); err != nil {
				t.Errorf("request without n: %v", err)
			}
		})
	}
}

func TestChoicesCached(t *testing.T) {
	s := llmtest.NewServer(t, func(_ context.Context, r llmtest.Req) llmtest.Reply {
		return llmtest.Reply{Texts: []string{"a", "b", "c"}}
	})
	cfg := pipeline.Default().LLM
	cfg.BaseURL = s.URL
	dir := t.TempDir()
	for range 2 {
		c, _, _, err := llm.New(t.Context(), cfg, "", dir)
		if err != nil {
			t.Fatal(err)
		}
		r := chatReq("q")
		r.N = 3
		resp, err := c.Complete(t.Context(), r)
		if err != nil || len(resp.Choices) != 3 || resp.Choices[2].Text != "c" {
			t.Fatalf("got %+v, %v: want the three choices", resp, err)
		}
	}
	if got := s.Requests(); got != 1 {
		t.Errorf("server requests: got %d, want 1 (the second client replays the cache)", got)
	}
}

func TestCachedPromptTokensPriced(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Texts: []string{"ok"}, PromptTokens: 1000, CachedTokens: 600, CompletionTokens: 100}))
	prices := map[string]pipeline.Price{
		"fake-chat": {Prompt: 2, CachedPrompt: 0.5, Completion: 8},
		"fake-base": {Prompt: 2, Completion: 8}, // no cached price: cached tokens cost the prompt price
	}
	tests := []struct {
		req        llm.Request
		cost, save float64
	}{
		{chatReq("q"), (400*2 + 600*0.5 + 100*8) / 1e6, 600 * 1.5 / 1e6},
		{promptReq("q"), (1000*2 + 100*8) / 1e6, 0},
	}
	for _, tt := range tests {
		b := llm.WithBudget(newClient(t, s.URL, 0), llm.Budget{}, prices)
		resp, err := b.Complete(t.Context(), tt.req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage.CachedPromptTokens != 600 {
			t.Errorf("%s: cached prompt tokens: got %d, want 600", tt.req.Model, resp.Usage.CachedPromptTokens)
		}
		if math.Abs(resp.CostUSD-tt.cost) > 1e-12 || math.Abs(resp.CacheSavingUSD-tt.save) > 1e-12 {
			t.Errorf("%s: cost %v saving %v, want %v and %v", tt.req.Model, resp.CostUSD, resp.CacheSavingUSD, tt.cost, tt.save)
		}
		if sp := b.Spent().Usage; sp.CachedTokens != 600 || math.Abs(sp.CostWithoutCacheUSD()-(2000+800)/1e6) > 1e-12 {
			t.Errorf("%s: spent %+v", tt.req.Model, sp)
		}
	}
}
