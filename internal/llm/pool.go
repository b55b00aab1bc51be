package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/reactgen/reactgen/internal/retry"
	"github.com/reactgen/reactgen/pipeline"
)

// Endpoint is one server of a Pool.
type Endpoint struct {
	Name string // how the manifest and the logs name it: its base URL
	// Client sends to this server alone, without retries (the pool retries, elsewhere
	// when it can): the OpenAI adapter, under the endpoint's rate limits.
	Client      Client
	Model       string  // sent in place of the request's model when set
	Concurrency int     // requests in flight at once; at least 1
	Weight      float64 // share of the traffic while several have room; 0 = only when none other has
	// Prices prices this endpoint's responses (CostUSD, CacheSavingUSD, Priced); nil
	// leaves pricing to the budget.
	Prices map[string]pipeline.Price
}

// PoolPolicy says how a Pool retries and when it takes an endpoint out.
type PoolPolicy struct {
	Retry retry.Policy // tries per request, and the backoff when no other endpoint is up
	// EjectAfter consecutive retryable failures (5xx, timeouts, resets) take an endpoint
	// out; 0 means 3. A refused connection or an unknown host takes it out at once.
	EjectAfter int
	// LongRetryAfter: a 429 asking to wait at least this long takes the endpoint out for
	// that long; 0 means 10s. Shorter ones are retried, elsewhere when possible.
	LongRetryAfter time.Duration
	// ProbeBase is how long an endpoint stays out before one request probes it, doubling
	// after each failed probe up to ProbeMax; 0 means 1s and 30s.
	ProbeBase, ProbeMax time.Duration
	// FailFastUntilSuccess gives up at once when, before any request has succeeded, every
	// endpoint refused the connection or has no such host: the URLs are wrong.
	FailFastUntilSuccess bool
	// StallAfter moves a request that has had no answer for this long to another endpoint
	// while one is up (llm.stall_timeout), cancelling it on the stalled one, which counts
	// a failure; 0 leaves a request where it is until its own timeout.
	StallAfter time.Duration
	// Logger reports endpoints taken out for good (a refused key); nil: none.
	Logger *slog.Logger
}

// EndpointStats is what one endpoint of a Pool did.
type EndpointStats struct {
	Name      string
	Served    int64 // successful requests
	Failed    int64 // failed tries (each retried elsewhere or given up)
	Moved     int64 // in-flight requests retried elsewhere when the endpoint was taken out
	Ejections int64
	Share     float64 // Served over all endpoints' Served
	Stalled   int64   // requests moved elsewhere after StallAfter without an answer
	// Disabled is why the endpoint was taken out for good (it refused the key); empty
	// while it serves.
	Disabled string
}

// Pool sends each request to the endpoint with free capacity, preferring by weight, and
// retries failures elsewhere. An endpoint that fails (a refused connection, EjectAfter
// failures in a row, a 429 with a long Retry-After) is taken out, its in-flight requests
// are cancelled and retried on the others, and after a pause one request probes it: a
// success brings it back. It is a Client and safe for concurrent use.
//
// Results do not depend on the endpoint when the endpoints serve the same model: the
// request is the same apart from Endpoint.Model, and the response cache outside the pool
// keys on the request, not the URL.
type Pool struct {
	p   PoolPolicy
	eps []*poolEndpoint

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced when a slot frees or an endpoint changes state
	succeeded bool
}

var _ Client = (*Pool)(nil)

type endpointState int

const (
	stateUp       endpointState = iota
	stateOut                    // taken out until outUntil
	stateProbing                // back on trial: one request at a time until it succeeds
	stateDisabled               // out for good: it refused the key (401, 403)
)

type poolEndpoint struct {
	Endpoint
	// guarded by Pool.mu
	state       endpointState
	outUntil    time.Time
	pause       time.Duration // the next time out
	failures    int           // consecutive
	unreachable bool          // taken out by a refused connection or unknown host
	why         error         // why it is disabled
	inflight    int
	calls       map[*inflightCall]struct{}
	st          EndpointStats
}

type inflightCall struct{ cancel context.CancelCauseFunc }

// errTakenOut cancels the requests in flight on an endpoint that was taken out.
var errTakenOut = errors.New("endpoint taken out of the pool")

// errStalled cancels a request that had no answer for StallAfter, to send it elsewhere.
var errStalled = errors.New("no answer within llm.stall_timeout")

// EndpointError is the answer of one endpoint of a pool, naming it.
type EndpointError struct {
	Endpoint string // its base URL, as Endpoint.Name
	Err      error
}

func (e *EndpointError) Error() string { return "endpoint " + e.Endpoint + ": " + e.Err.Error() }
func (e *EndpointError) Unwrap() error { return e.Err }

// authFailure reports an answer that no retry fixes on that endpoint, and that another
// endpoint, with its own key, may not give: the key was refused.
func authFailure(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden)
}

// NewPool builds a pool over eps; it sends nothing.
func NewPool(eps []Endpoint, p PoolPolicy) (*Pool, error) {
	if len(eps) == 0 {
		return nil, errors.New("llm pool: no endpoints")
	}
	if p.EjectAfter <= 0 {
		p.EjectAfter = 3
	}
	if p.LongRetryAfter <= 0 {
		p.LongRetryAfter = 10 * time.Second
	}
	if p.ProbeBase <= 0 {
		p.ProbeBase = time.Second
	}
	if p.ProbeMax <= 0 {
		p.ProbeMax = 30 * time.Second
	}
	p.ProbeMax = max(p.ProbeMax, p.ProbeBase)
	if p.Retry.Sleep == nil {
		p.Retry.Sleep = retry.Sleep
	}
	pl := &Pool{p: p, changed: make(chan struct{})}
	for i, e := range eps {
		if e.Client == nil {
			return nil, fmt.Errorf("llm pool: endpoint %d (%s) has no client", i, e.Name)
		}
		if e.Weight < 0 || math.IsNaN(e.Weight) {
			return nil, fmt.Errorf("llm pool: endpoint %d (%s): weight %v must not be negative", i, e.Name, e.Weight)
		}
		e.Concurrency = max(e.Concurrency, 1)
		pl.eps = append(pl.eps, &poolEndpoint{Endpoint: e, pause: p.ProbeBase, calls: map[*inflightCall]struct{}{},
			st: EndpointStats{Name: e.Name}})
	}
	return pl, nil
}

// Stats returns each endpoint's counts, in the order the endpoints were given.
func (pl *Pool) Stats() []EndpointStats {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	var total int64
	for _, e := range pl.eps {
		total += e.st.Served
	}
	out := make([]EndpointStats, len(pl.eps))
	for i, e := range pl.eps {
		out[i] = e.st
		if total > 0 {
			out[i].Share = float64(e.st.Served) / float64(total)
		}
	}
	return out
}

// notify wakes the requests waiting for a slot. pl.mu is held.
func (pl *Pool) notify() {
	close(pl.changed)
	pl.changed = make(chan struct{})
}

// pick returns the endpoint a request goes to now, or nil and when to look again (zero:
// when something changes). avoid is the endpoint the request last failed on: another is
// taken when one has room. pl.mu is held.
func (pl *Pool) pick(now time.Time, avoid *poolEndpoint) (*poolEndpoint, time.Time) {
	var next time.Time
	var best *poolEndpoint
	bestLoad := math.Inf(1)
	better := func(e *poolEndpoint) bool {
		load := math.Inf(1)
		if e.Weight > 0 {
			load = float64(e.st.Served+int64(e.inflight)) / e.Weight
		}
		switch {
		case best == nil:
		case (best == avoid) != (e == avoid):
			return best == avoid
		case load >= bestLoad:
			return false
		}
		bestLoad = load
		return true
	}
	for _, e := range pl.eps {
		if e.state == stateOut && !now.Before(e.outUntil) {
			e.state = stateProbing
		}
		switch {
		case e.state == stateDisabled:
		case e.state == stateOut:
			if next.IsZero() || e.outUntil.Before(next) {
				next = e.outUntil
			}
		case e.state == stateProbing && e.inflight > 0, e.inflight >= e.Concurrency:
		default:
			if better(e) {
				best = e
			}
		}
	}
	return best, next
}

// acquire waits for a slot on some endpoint. With every endpoint disabled it fails at
// once with the last one's refusal.
func (pl *Pool) acquire(ctx context.Context, avoid *poolEndpoint) (*poolEndpoint, *inflightCall, context.Context, error) {
	for {
		pl.mu.Lock()
		if err := pl.allDisabled(); err != nil {
			pl.mu.Unlock()
			return nil, nil, nil, err
		}
		e, next := pl.pick(time.Now(), avoid)
		if e != nil {
			e.inflight++
			call := &inflightCall{}
			cctx, cancel := context.WithCancelCause(ctx)
			call.cancel = cancel
			e.calls[call] = struct{}{}
			pl.mu.Unlock()
			return e, call, cctx, nil
		}
		changed := pl.changed
		pl.mu.Unlock()
		var timer *time.Timer
		var fired <-chan time.Time
		if !next.IsZero() {
			timer = time.NewTimer(time.Until(next))
			fired = timer.C
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-fired:
		}
		if timer != nil {
			timer.Stop()
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
	}
}

// allDisabled returns an error naming every endpoint and why when all are disabled, nil
// otherwise. pl.mu is held.
func (pl *Pool) allDisabled() error {
	var errs []error
	for _, e := range pl.eps {
		if e.state != stateDisabled {
			return nil
		}
		errs = append(errs, e.why)
	}
	return fmt.Errorf("every endpoint of the pool refused its key: %w", errors.Join(errs...))
}

// release frees a slot and records the try's outcome: err is nil for a success; moved
// marks a request cancelled because e was taken out or stalled, gone for one whose
// caller left.
func (pl *Pool) release(e *poolEndpoint, call *inflightCall, err error, moved, stalled, gone bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	call.cancel(nil)
	delete(e.calls, call)
	e.inflight--
	defer pl.notify()
	switch {
	case gone:
		if e.state == stateProbing {
			e.state = stateOut // probe again at once: nothing was learnt
		}
	case stalled:
		e.st.Stalled++
		e.st.Failed++
		if e.failures++; e.state != stateDisabled && (e.state == stateProbing || e.failures >= pl.p.EjectAfter) {
			pl.takeOut(e, 0, false)
		}
	case moved:
		e.st.Moved++
	case authFailure(err):
		e.st.Failed++
		if e.state != stateDisabled {
			pl.disable(e, err)
		}
	case err == nil:
		e.st.Served++
		e.failures, e.unreachable, e.pause = 0, false, pl.p.ProbeBase
		e.state = stateUp
		pl.succeeded = true
	case !IsRetryable(err):
		// The request's fault (a 400), not the server's; a 401 or 404 is left to the
		// breaker, which sees it.
		if e.state == stateProbing {
			e.state = stateUp
		}
	default:
		e.st.Failed++
		e.failures++
		var ae *APIError
		switch {
		case unreachable(err):
			pl.takeOut(e, 0, true)
		case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests && ae.RetryAfter >= pl.p.LongRetryAfter:
			pl.takeOut(e, ae.RetryAfter, false)
		case e.state == stateProbing || e.failures >= pl.p.EjectAfter:
			pl.takeOut(e, 0, false)
		}
	}
}

// disable takes e out of the pool for good: it refused the key, and no wait will change
// that. Its requests in flight go elsewhere. pl.mu is held.
func (pl *Pool) disable(e *poolEndpoint, err error) {
	e.state, e.why = stateDisabled, &EndpointError{Endpoint: e.Name, Err: err}
	e.st.Ejections++
	e.st.Disabled = err.Error()
	for c := range e.calls {
		c.cancel(errTakenOut)
	}
	others := 0
	for _, o := range pl.eps {
		if o.state != stateDisabled {
			others++
		}
	}
	if pl.p.Logger != nil {
		pl.p.Logger.Error("endpoint refused the API key: taken out of the pool for this run", "endpoint", e.Name,
			"err", err, "endpoints_left", others)
	}
}

// takeOut takes e out of the pool for d (0: its probe pause, which then doubles) and
// cancels its requests in flight, which the pool sends elsewhere. pl.mu is held.
func (pl *Pool) takeOut(e *poolEndpoint, d time.Duration, unreachable bool) {
	if d <= 0 {
		d = e.pause
		e.pause = min(2*e.pause, pl.p.ProbeMax)
	}
	e.state, e.outUntil, e.unreachable = stateOut, time.Now().Add(d), unreachable
	e.st.Ejections++
	for c := range e.calls {
		c.cancel(errTakenOut)
	}
}

// othersUp reports whether an endpoint other than e could take a request now.
func (pl *Pool) othersUp(e *poolEndpoint) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, o := range pl.eps {
		if o != e && o.state != stateOut && o.state != stateDisabled {
			return true
		}
	}
	return false
}

// watchStall cancels call with errStalled once it has waited StallAfter and another
// endpoint is up to take it; it returns when done is closed.
func (pl *Pool) watchStall(e *poolEndpoint, call *inflightCall, done <-chan struct{}) {
	t := time.NewTicker(pl.p.StallAfter)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if pl.othersUp(e) {
				call.cancel(errStalled)
				return
			}
		}
	}
}

// allUnreachable reports whether, with nothing ever succeeded, every endpoint was taken
// out for a refused connection or an unknown host.
func (pl *Pool) allUnreachable() bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.succeeded {
		return false
	}
	for _, e := range pl.eps {
		if !e.unreachable {
			return false
		}
	}
	return true
}

// Complete sends req to an endpoint with room and retries retryable failures, on another
// endpoint when one is up, else after the policy's backoff (or the server's
// Retry-After). Requests cancelled because their endpoint was taken out are sent again
// elsewhere and do not count as tries.
func (pl *Pool) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	var avoid *poolEndpoint
	tries, moves := 0, 0
	for {
		e, call, cctx, err := pl.acquire(ctx, avoid)
		if err != nil {
			return Response{}, err
		}
		r := req
		if e.Model != "" {
			r.Model = e.Model
		}
		var done chan struct{}
		if pl.p.StallAfter > 0 {
			done = make(chan struct{})
			go pl.watchStall(e, call, done)
		}
		resp, err := e.Client.Complete(cctx, r)
		if done != nil {
			close(done)
		}
		cause := context.Cause(cctx)
		moved := err != nil && ctx.Err() == nil && errors.Is(cause, errTakenOut)
		stalled := err != nil && ctx.Err() == nil && errors.Is(cause, errStalled)
		pl.release(e, call, err, moved, stalled, err != nil && ctx.Err() != nil)
		if err == nil {
			resp.Retries += tries
			resp.Latency = time.Since(start)
			resp.Endpoint = e.Name
			if e.Prices != nil {
				resp.CostUSD, resp.CacheSavingUSD, resp.Unpriced = price(resp, req.Model, e.Prices)
				resp.Priced = true
			}
			return resp, nil
		}
		if ctx.Err() != nil {
			return Response{}, err
		}
		avoid = e
		if authFailure(err) {
			continue // elsewhere, not a try: this endpoint is out for good (acquire fails once all are)
		}
		if moved || stalled {
			// Bounded, so that endpoints taken out in turn cannot pass a request forever.
			if moves++; moves <= 4*len(pl.eps) {
				continue
			}
		}
		if !IsRetryable(err) {
			return Response{}, err
		}
		tries++
		if tries > pl.p.Retry.MaxRetries || pl.p.FailFastUntilSuccess && pl.allUnreachable() {
			return Response{}, &retry.Exhausted{Tries: tries, Err: err}
		}
		if pl.othersUp(e) {
			continue
		}
		wait := pl.p.Retry.Backoff(tries - 1)
		var ae *APIError
		if errors.As(err, &ae) && ae.RetryAfter > wait {
			wait = min(ae.RetryAfter, retry.MaxAfter)
		}
		if serr := pl.p.Retry.Sleep(ctx, wait); serr != nil {
			return Response{}, fmt.Errorf("waiting to retry after %w: %w", err, serr)
		}
	}
}
