package llm

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/reactgen/reactgen/pipeline"
)

// MeterStats is a snapshot of a Meter's counters.
type MeterStats struct {
	Requests int64 // calls made through the meter, cached ones included
	Cached   int64
	Failed   int64
	Retries  int64
	Usage    pipeline.Usage // tokens and cost of the calls that were not cached
}

// Meter counts the requests that pass through it, for progress lines. It is a Client and
// safe for concurrent use.
type Meter struct {
	next                                 Client
	requests, cached, failed, retries    atomic.Int64
	prompt, completion, total, microUS   atomic.Int64
	cachedTokens, savedMicroUS, unpriced atomic.Int64
}

var _ Client = (*Meter)(nil)

// WithMeter wraps c with counters.
func WithMeter(c Client) *Meter { return &Meter{next: c} }

// Complete forwards req and counts the outcome.
func (m *Meter) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := m.next.Complete(ctx, req)
	if errors.Is(err, ErrNotSent) {
		return resp, err // no request left: nothing to count
	}
	m.requests.Add(1)
	if err != nil {
		m.failed.Add(1)
		if !errors.Is(err, ErrNUnsupported) || len(resp.Choices) == 0 {
			return resp, err
		}
		// A server that ignored n answered: its tokens were spent.
	}
	m.retries.Add(int64(resp.Retries))
	if resp.Cached {
		m.cached.Add(1)
		return resp, nil
	}
	m.prompt.Add(int64(resp.Usage.PromptTokens))
	m.completion.Add(int64(resp.Usage.CompletionTokens))
	m.total.Add(int64(resp.Usage.TotalTokens))
	m.microUS.Add(int64(resp.CostUSD*1e6 + 0.5))
	m.cachedTokens.Add(int64(resp.Usage.CachedPromptTokens))
	m.savedMicroUS.Add(int64(resp.CacheSavingUSD*1e6 + 0.5))
	m.unpriced.Add(int64(resp.UnpricedCalls()))
	return resp, err
}

// Snapshot returns the counters now. Each field is read atomically; the fields together
// are not one instant.
func (m *Meter) Snapshot() MeterStats {
	return MeterStats{
		Requests: m.requests.Load(), Cached: m.cached.Load(), Failed: m.failed.Load(), Retries: m.retries.Load(),
		Usage: pipeline.Usage{
			PromptTokens: int(m.prompt.Load()), CompletionTokens: int(m.completion.Load()),
			TotalTokens: int(m.total.Load()), CostUSD: float64(m.microUS.Load()) / 1e6,
			CachedTokens: int(m.cachedTokens.Load()), CacheSavingUSD: float64(m.savedMicroUS.Load()) / 1e6,
			UnpricedCalls: int(m.unpriced.Load()),
		},
	}
}
