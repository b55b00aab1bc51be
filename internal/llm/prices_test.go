package llm_test

import (
	"math"
	"testing"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestDefaultPricesAndUnpricedModels prices responses with no llm.prices: well-known
// models by the dated built-in table, fine-tuned ones at their base's fine-tuned price,
// a table entry over the built-in one, and a model no table names as unpriced (its cost
// unknown, counted apart), never as free.
func TestDefaultPricesAndUnpricedModels(t *testing.T) {
	// 1,000,000 prompt and 1,000,000 completion tokens: the cost is the two prices' sum.
	reply := llmtest.Reply{Texts: []string{"ok"}, PromptTokens: 1_000_000, CompletionTokens: 1_000_000}
	tests := []struct {
		model    string
		prices   map[string]pipeline.Price
		want     float64
		unpriced bool
	}{
		{"gpt-4o-mini-2024-07-18", nil, 0.15 + 0.60, false},
		{"ft:gpt-4o-mini-2024-07-18:acme::9xYz", nil, 0.30 + 1.20, false},
		{"ft:gpt-4.1-mini-2025-04-14:acme:run:abc", nil, 0.80 + 3.20, false},
		{"gpt-4o-mini", map[string]pipeline.Price{"gpt-4o-mini": {Prompt: 1, Completion: 1}}, 2, false},
		{"meta-llama/Llama-3.1-8B-Instruct", nil, 0, true},
		{"ft:davinci-002:acme::x", map[string]pipeline.Price{"gpt-4o": {Prompt: 1, Completion: 1}}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			s := llmtest.NewServer(t, llmtest.Script(reply))
			b := llm.WithBudget(newClient(t, s.URL, 0), llm.Budget{}, tt.prices)
			req := chatReq("q")
			req.Model = tt.model
			resp, err := b.Complete(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(resp.CostUSD-tt.want) > 1e-9 || resp.Unpriced != tt.unpriced {
				t.Errorf("cost %v, unpriced %v; want %v, %v", resp.CostUSD, resp.Unpriced, tt.want, tt.unpriced)
			}
			u := b.Spent().Usage
			wantCalls := 0
			if tt.unpriced {
				wantCalls = 1
			}
			if u.UnpricedCalls != wantCalls {
				t.Errorf("spent %d unpriced calls, want %d", u.UnpricedCalls, wantCalls)
			}
			if text := u.CostText(); tt.unpriced != (text == "unpriced") || text == "$0.0000" {
				t.Errorf("cost text %q", text)
			}
		})
	}
}

func TestCostTexts(t *testing.T) {
	for _, tt := range []struct {
		u        pipeline.Usage
		kept     int
		cost     string
		perKept  string
		noCached string
	}{
		{pipeline.Usage{CostUSD: 0.5}, 4, "$0.5000", "$0.125000", "$0.5000"},
		{pipeline.Usage{CostUSD: 0.5, CacheSavingUSD: 0.25}, 0, "$0.5000", "-", "$0.7500"},
		{pipeline.Usage{UnpricedCalls: 7}, 2, "unpriced", "unpriced", "unpriced"},
		{pipeline.Usage{CostUSD: 0.5, UnpricedCalls: 1}, 1, "$0.5000 + 1 unpriced call", "$0.500000 + 1 unpriced call", "$0.5000 + 1 unpriced call"},
		{pipeline.Usage{CostUSD: 0.5, UnpricedCalls: 3}, 1, "$0.5000 + 3 unpriced calls", "$0.500000 + 3 unpriced calls", "$0.5000 + 3 unpriced calls"},
	} {
		if got := tt.u.CostText(); got != tt.cost {
			t.Errorf("%+v: CostText = %q, want %q", tt.u, got, tt.cost)
		}
		if got := tt.u.CostPerText(tt.kept); got != tt.perKept {
			t.Errorf("%+v: CostPerText(%d) = %q, want %q", tt.u, tt.kept, got, tt.perKept)
		}
		if got := tt.u.WithoutCache().CostText(); got != tt.noCached {
			t.Errorf("%+v: without cache = %q, want %q", tt.u, got, tt.noCached)
		}
	}
}
