// Package retry is reactgen's one retry loop, shared by the LLM client and the MediaWiki
// corpus: it consumes an operation and a classification of its errors, and produces the
// operation's first success, its first permanent error, or an *Exhausted error after the
// last retry. Waits grow exponentially (Base*2^k capped at Max) with the jitter a Policy
// asks for, honour a server's Retry-After (ParseAfter, capped at MaxAfter) when it asks
// for longer, and end as soon as the context does.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxAfter caps a server's Retry-After, so that a broken header cannot stall a run.
const MaxAfter = 5 * time.Minute

// Jitter says how a Policy spreads its waits, so that many callers failing together do
// not retry in step.
type Jitter int

const (
	NoJitter     Jitter = iota // wait exactly the backoff
	FullJitter                 // a uniform random time in [0, backoff]
	QuarterAdded               // the backoff plus a uniform random time in [0, backoff/4]
)

// Policy says how often and how long Do backs off. The zero Policy makes one try.
type Policy struct {
	MaxRetries int           // retries after the first try; 0 or less means none
	Base       time.Duration // the first backoff; 0 means 500ms
	Max        time.Duration // the largest backoff before jitter; 0 means 30s
	Jitter     Jitter
	// Sleep waits d or until ctx ends, returning ctx's error then; nil means a timer.
	// Tests inject one to observe the waits without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p Policy) withDefaults() Policy {
	if p.Base <= 0 {
		p.Base = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	p.Max = max(p.Max, p.Base)
	if p.Sleep == nil {
		p.Sleep = Sleep
	}
	return p
}

// Backoff is the wait before retry k (0-based) when the server named none: Base*2^k
// capped at Max, then jittered.
func (p Policy) Backoff(k int) time.Duration {
	p = p.withDefaults()
	d := p.Max
	if k < 62 {
		if b := p.Base << k; b > 0 && b < p.Max {
			d = b
		}
	}
	switch p.Jitter {
	case FullJitter:
		d = time.Duration(rand.Int64N(int64(d) + 1))
	case QuarterAdded:
		d += time.Duration(rand.Int64N(int64(d)/4 + 1))
	}
	return d
}

// Verdict is what a failed try means.
type Verdict int

const (
	// Permanent: trying again cannot help; Do returns the error as it is.
	Permanent Verdict = iota
	// Again: try again after the backoff, or the server's Retry-After when longer.
	Again
	// GiveUp: the failure is of a retryable kind but retrying now would not help (for
	// example a refused connection before anything ever succeeded); Do returns it as
	// *Exhausted at once.
	GiveUp
)

// ErrExhausted marks the error Do returns when it stopped retrying an error it could
// have retried.
var ErrExhausted = errors.New("retries exhausted")

// Exhausted is the last error after the last try. It is ErrExhausted and unwraps to the
// last error too, so errors.As still finds the server's error.
type Exhausted struct {
	Tries int
	Err   error
}

func (e *Exhausted) Error() string { return fmt.Sprintf("gave up after %d tries: %v", e.Tries, e.Err) }

// Unwrap returns ErrExhausted and the last error.
func (e *Exhausted) Unwrap() []error { return []error{ErrExhausted, e.Err} }

// Do calls try until it succeeds. After each failure, classify says what the error means
// and how long the server asked to wait before the next try (0 when it did not say;
// capped at MaxAfter). Do returns the number of tries made and:
//   - nil after a success;
//   - the error itself when it is Permanent, or when ctx had ended by the time try
//     returned;
//   - an *Exhausted after MaxRetries retries, or at once for GiveUp;
//   - "waiting to retry after <err>: <ctx error>" when ctx ends during a wait.
//
// Do blocks while it waits; it is safe for concurrent use when try and classify are.
func Do(ctx context.Context, p Policy, try func(ctx context.Context) error, classify func(err error) (Verdict, time.Duration)) (int, error) {
	p = p.withDefaults()
	for k := 0; ; k++ {
		err := try(ctx)
		if err == nil {
			return k + 1, nil
		}
		if ctx.Err() != nil {
			return k + 1, err
		}
		v, after := classify(err)
		switch {
		case v == Permanent:
			return k + 1, err
		case v == GiveUp || k >= p.MaxRetries:
			return k + 1, &Exhausted{Tries: k + 1, Err: err}
		}
		wait := p.Backoff(k)
		if after > wait {
			wait = min(after, MaxAfter)
		}
		if serr := p.Sleep(ctx, wait); serr != nil {
			return k + 1, fmt.Errorf("waiting to retry after %w: %w", err, serr)
		}
	}
}

// TransientStatus reports whether an HTTP status says that the same request may succeed
// later: 408 (timeout), 409 (conflict), 429 (rate limit) and every 5xx.
func TransientStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// Sleep waits d, or until ctx ends and then returns its error.
func Sleep(ctx context.Context, d time.Duration) error {
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

// ParseAfter reads a Retry-After header: delay-seconds (a decimal fraction is accepted)
// or an HTTP date, relative to now. Zero means absent, unreadable, "now" or already past;
// the result is capped at MaxAfter.
func ParseAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case !(secs > 0): // zero, negative or NaN
			return 0
		case secs >= MaxAfter.Seconds():
			return MaxAfter
		}
		return time.Duration(secs * float64(time.Second))
	}
	t, err := http.ParseTime(v)
	if err != nil || !t.After(now) {
		return 0
	}
	d := t.Sub(now)
	return min(d, MaxAfter)
}
