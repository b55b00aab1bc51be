package llm

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reactgen/reactgen/internal/retry"
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

// WithRetry retries retryable errors (see IsRetryable) with package retry's loop:
// exponential backoff Base*2^k capped at Max, with full jitter when asked. A server's
// Retry-After (up to 5 minutes) is honoured instead when it is longer. The returned
// Response counts the retries made in Retries and the wall time of all tries in Latency.
// It stops as soon as ctx ends. The error after the last try wraps the last error with
// the number of tries and is ErrRetriesExhausted.
func WithRetry(c Client, p RetryPolicy) Client {
	rp := retry.Policy{MaxRetries: p.MaxRetries, Base: p.Base, Max: p.Max, Sleep: p.Sleep}
	if p.Jitter {
		rp.Jitter = retry.FullJitter
	}
	return &retrier{next: c, p: rp, failFast: p.FailFastUntilSuccess}
}

// ErrRetriesExhausted marks the error WithRetry returns after its last retry failed.
var ErrRetriesExhausted = retry.ErrExhausted

type retrier struct {
	next     Client
	p        retry.Policy
	failFast bool
	ok       atomic.Bool // some request has succeeded
}

// unreachable reports a refused connection or an unknown host.
func unreachable(err error) bool {
	var de *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &de)
}

// classify is the retry verdict on err and the server's Retry-After.
func (r *retrier) classify(err error) (retry.Verdict, time.Duration) {
	if !IsRetryable(err) {
		return retry.Permanent, 0
	}
	if r.failFast && !r.ok.Load() && unreachable(err) {
		return retry.GiveUp, 0
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return retry.Again, ae.RetryAfter
	}
	return retry.Again, 0
}

func (r *retrier) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	var resp Response
	tries, err := retry.Do(ctx, r.p, func(ctx context.Context) error {
		var err error
		resp, err = r.next.Complete(ctx, req)
		return err
	}, r.classify)
	if err != nil {
		return Response{}, err
	}
	r.ok.Store(true)
	resp.Retries += tries - 1
	resp.Latency = time.Since(start)
	return resp, nil
}
