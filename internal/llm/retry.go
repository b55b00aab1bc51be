package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// RetryPolicy says how WithRetry backs off.
type RetryPolicy struct {
	MaxRetries int           // retries after the first try; 0 means none
	Base       time.Duration // the first backoff; 0 means 500ms
	Max        time.Duration // the largest computed backoff; 0 means 30s
	Jitter     bool          // full jitter: sleep a uniform random time in [0, backoff]
	// Sleep waits d or until ctx ends; nil means a timer. Tests inject one to observe
	// the backoffs without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	// FailFastUntilSuccess does not retry refused connections and unknown hosts until
	// some request through this client has succeeded: before that they mean a wrong
	// base URL, not a server restarting, and a run should say so at once.
	FailFastUntilSuccess bool
}

// WithRetry retries retryable errors (see IsRetryable) with exponential backoff:
// Base*2^k capped at Max, with full jitter when asked. A server's Retry-After (up to 5
// minutes) is honoured instead when it is longer. The returned Response counts the retries
// made in Retries and the wall time of all tries in Latency. It stops as soon as ctx ends.
// The error after the last try wraps the last error with the number of tries.
func WithRetry(c Client, p RetryPolicy) Client {
	if p.Base <= 0 {
		p.Base = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	if p.Max < p.Base {
		p.Max = p.Base
	}
	if p.Sleep == nil {
		p.Sleep = sleepCtx
	}
	return &retrier{next: c, p: p}
}

// ErrRetriesExhausted marks the error WithRetry returns after its last retry failed.
var ErrRetriesExhausted = errors.New("retries exhausted")

type retrier struct {
	next Client
	p    RetryPolicy
	ok   atomic.Bool // some request has succeeded
}

// unreachable reports a refused connection or an unknown host.
func unreachable(err error) bool {
	var de *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &de)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff is the wait before retry k (0-based).
func (r *retrier) backoff(k int, err error) time.Duration {
	d := r.p.Max
	if k < 62 {
		if b := r.p.Base << k; b > 0 && b < r.p.Max {
			d = b
		}
	}
	if r.p.Jitter {
		d = time.Duration(rand.Int64N(int64(d) + 1))
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > d {
		d = min(ae.RetryAfter, maxRetryAfter)
	}
	return d
}

func (r *retrier) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	var err error
	for k := 0; ; k++ {
		var resp Response
		resp, err = r.next.Complete(ctx, req)
		if err == nil {
			r.ok.Store(true)
			resp.Retries += k
			resp.Latency = time.Since(start)
			return resp, nil
		}
		if !IsRetryable(err) || ctx.Err() != nil {
			return Response{}, err
		}
		if k >= r.p.MaxRetries || r.p.FailFastUntilSuccess && !r.ok.Load() && unreachable(err) {
			return Response{}, &retriesError{tries: k + 1, err: err}
		}
		if serr := r.p.Sleep(ctx, r.backoff(k, err)); serr != nil {
			return Response{}, fmt.Errorf("waiting to retry after %w: %w", err, serr)
		}
	}
}

// retriesError is the last error after all retries; it is ErrRetriesExhausted and
// unwraps to the last error too.
type retriesError struct {
	tries int
	err   error
}

func (e *retriesError) Error() string {
	return fmt.Sprintf("gave up after %d tries: %v", e.tries, e.err)
}

func (e *retriesError) Unwrap() []error { return []error{ErrRetriesExhausted, e.err} }
