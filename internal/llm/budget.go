package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/reactgen/reactgen/pipeline"
)

// Budget limits a run's spending; a zero field means no limit on that measure.
type Budget struct {
	MaxRequests int     // requests sent (a request and its retries count once)
	MaxTokens   int     // total tokens (prompt + completion)
	MaxCostUSD  float64 // priced with the per-model table
}

// Spend is what a Budgeted client has spent so far.
type Spend struct {
	Requests int
	Usage    pipeline.Usage // CostUSD included
}

// Budgeted is a Client that refuses requests once its Budget is spent. It is safe for
// concurrent use.
//
// MaxRequests is exact under concurrency: a slot is taken before a request is sent, so no
// more than MaxRequests ever reach the server. Tokens and cost are only known afterwards:
// once they reach their limit, new requests get ErrBudget, while requests already in
// flight complete and are counted (so those two limits can be exceeded by what was in
// flight). Cached responses cost nothing and are not counted.
type Budgeted struct {
	next   Client
	b      Budget
	prices map[string]pipeline.Price

	mu       sync.Mutex
	reserved int // requests sent or in flight
	spent    pipeline.Usage
}

var _ Client = (*Budgeted)(nil)

// WithBudget wraps c with b, pricing responses with prices (USD per 1M tokens, by model;
// see Cost). It fills Response.CostUSD.
func WithBudget(c Client, b Budget, prices map[string]pipeline.Price) *Budgeted {
	return &Budgeted{next: c, b: b, prices: prices}
}

// Spent returns what has been spent so far.
func (bc *Budgeted) Spent() Spend {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return Spend{Requests: bc.reserved, Usage: bc.spent}
}

// Exhausted reports whether a new request would get ErrBudget.
func (bc *Budgeted) Exhausted() bool {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return bc.reason() != ""
}

// reason names the limit reached, or is empty. bc.mu is held.
func (bc *Budgeted) reason() string {
	switch {
	case bc.b.MaxRequests > 0 && bc.reserved >= bc.b.MaxRequests:
		return fmt.Sprintf("%d of %d requests (llm.max_requests)", bc.reserved, bc.b.MaxRequests)
	case bc.b.MaxTokens > 0 && bc.spent.TotalTokens >= bc.b.MaxTokens:
		return fmt.Sprintf("%d of %d tokens (llm.max_tokens)", bc.spent.TotalTokens, bc.b.MaxTokens)
	case bc.b.MaxCostUSD > 0 && bc.spent.CostUSD >= bc.b.MaxCostUSD:
		return fmt.Sprintf("$%.4f of $%.4f (llm.max_cost_usd)", bc.spent.CostUSD, bc.b.MaxCostUSD)
	}
	return ""
}

// Complete sends req unless the budget is spent, in which case it returns ErrBudget
// without calling the server.
func (bc *Budgeted) Complete(ctx context.Context, req Request) (Response, error) {
	bc.mu.Lock()
	if r := bc.reason(); r != "" {
		bc.mu.Unlock()
		return Response{}, markNotSent(fmt.Errorf("%w: spent %s", ErrBudget, r))
	}
	bc.reserved++
	bc.mu.Unlock()

	resp, err := bc.next.Complete(ctx, req)
	if err != nil {
		// Failed fast below: nothing reached the server.
		if errors.Is(err, ErrUnusable) || errors.Is(err, ErrNUnsupported) && len(resp.Choices) == 0 {
			bc.mu.Lock()
			bc.reserved--
			bc.mu.Unlock()
		}
		if !errors.Is(err, ErrNUnsupported) || len(resp.Choices) == 0 {
			return resp, err
		}
		// A server that ignored n answered, and the answer is paid for: count it.
	}
	if resp.Cached {
		bc.mu.Lock()
		bc.reserved--
		bc.mu.Unlock()
		resp.CostUSD = 0
		return resp, nil
	}
	if !resp.Priced {
		resp.CostUSD, resp.CacheSavingUSD, resp.Unpriced = price(resp, req.Model, bc.prices)
	}
	total := resp.Usage.TotalTokens
	if total == 0 {
		total = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	}
	bc.mu.Lock()
	bc.spent = bc.spent.Add(pipeline.Usage{
		PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens,
		TotalTokens: total, CostUSD: resp.CostUSD, CachedTokens: resp.Usage.CachedPromptTokens,
		CacheSavingUSD: resp.CacheSavingUSD, UnpricedCalls: resp.UnpricedCalls(),
	})
	bc.mu.Unlock()
	return resp, err
}

// price is what resp costs by prices, and what the server's prompt cache saved on it. The
// server's name for the model is looked up first (it may be more specific), then the
// requested one.
func price(resp Response, requested string, prices map[string]pipeline.Price) (cost, saving float64, unpriced bool) {
	model := resp.Model
	if _, ok := lookupPrice(model, prices); !ok {
		model = requested
	}
	if _, ok := lookupPrice(model, prices); !ok {
		return 0, 0, true
	}
	cost = Cost(model, resp.Usage, prices)
	return cost, CostWithoutCache(model, resp.Usage, prices) - cost, false
}

// Cost prices u for model in USD, with prices in USD per 1M prompt and completion tokens;
// the prompt tokens served from the server's prompt cache are priced at CachedPrompt
// when it is set. A model missing from the table is priced by the longest key that is a
// prefix of its name (so "gpt-4o-mini" prices "gpt-4o-mini-2024-07-18"), then by
// pipeline.DefaultPrices; with none, it costs 0 (Response.Unpriced says so).
func Cost(model string, u Usage, prices map[string]pipeline.Price) float64 {
	p, ok := lookupPrice(model, prices)
	if !ok {
		return 0
	}
	cached := float64(min(u.CachedPromptTokens, u.PromptTokens))
	cp := p.CachedPrompt
	if cp == 0 {
		cp = p.Prompt
	}
	return ((float64(u.PromptTokens)-cached)*p.Prompt + cached*cp + float64(u.CompletionTokens)*p.Completion) / 1e6
}

// CostWithoutCache is Cost with every prompt token at the full prompt price: what u
// would have cost had the server cached nothing.
func CostWithoutCache(model string, u Usage, prices map[string]pipeline.Price) float64 {
	u.CachedPromptTokens = 0
	return Cost(model, u, prices)
}

func lookupPrice(model string, prices map[string]pipeline.Price) (pipeline.Price, bool) {
	return pipeline.LookupPrice(prices, model)
}
