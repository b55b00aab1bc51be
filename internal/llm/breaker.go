package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	return &breaker{next: c, n: n}
}

type breaker struct {
	next Client
	n    int

	mu        sync.Mutex
	succeeded bool
	failures  int
	last      error
}

// unusableError is ErrUnusable with the error that proved it.
type unusableError struct {
	failures int
	last     error
}

func (e *unusableError) Error() string {
	return fmt.Sprintf("%v: the first %d requests all failed and none succeeded; last error: %v", ErrUnusable, e.failures, e.last)
}

func (e *unusableError) Unwrap() []error { return []error{ErrUnusable, e.last} }

func (b *breaker) tripped() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.succeeded && b.failures >= b.n {
		return &unusableError{failures: b.failures, last: b.last}
	}
	return nil
}

func (b *breaker) Complete(ctx context.Context, req Request) (Response, error) {
	if err := b.tripped(); err != nil {
		return Response{}, err
	}
	resp, err := b.next.Complete(ctx, req)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		b.succeeded = true
		return resp, nil
	}
	if b.succeeded || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil ||
		errors.Is(err, ErrBudget) || errors.Is(err, ErrNUnsupported) {
		return resp, err
	}
	if IsRetryable(err) && !errors.Is(err, ErrRetriesExhausted) {
		return resp, err
	}
	b.failures++
	b.last = err
	if b.failures >= b.n {
		return Response{}, &unusableError{failures: b.failures, last: err}
	}
	return resp, err
}
