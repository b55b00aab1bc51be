package llm

import (
	"context"
	"errors"

	"github.com/reactgen/reactgen/internal/breaker"
)

// WithBreaker stops a run that cannot work: if the first n requests through it all fail
// with errors that retrying cannot fix (non-retryable ones, or retries exhausted) and none
// has ever succeeded, that request and every later one fail fast with ErrUnusable
// wrapping the last error, without calling c. A wrong base URL, model or key thus ends a
// run after n requests with one clear message. Any success disarms the breaker for good.
// Cancelled requests, ErrBudget and ErrNUnsupported do not count. n <= 0 returns c unchanged.
func WithBreaker(c Client, n int) Client {
	if n <= 0 {
		return c
	}
	return &breakerClient{next: c, b: &breaker.Breaker{Limit: n, Err: ErrUnusable,
		Proof: "the first %d requests all failed and none succeeded"}}
}

type breakerClient struct {
	next Client
	b    *breaker.Breaker
}

func (c *breakerClient) Complete(ctx context.Context, req Request) (Response, error) {
	if err := c.b.Check(); err != nil {
		return Response{}, err
	}
	resp, err := c.next.Complete(ctx, req)
	switch {
	case err == nil:
		c.b.Succeed()
		return resp, nil
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil ||
		errors.Is(err, ErrBudget) || errors.Is(err, ErrNUnsupported):
		return resp, err
	case IsRetryable(err) && !errors.Is(err, ErrRetriesExhausted):
		return resp, err
	}
	if open := c.b.Fail(err); open != nil {
		return Response{}, open
	}
	return resp, err
}
