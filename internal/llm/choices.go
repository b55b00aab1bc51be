package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync"
)

// ErrNUnsupported is returned for a request with N > 1 once the server has shown that it
// does not honour n: it answered with fewer choices than asked, or rejected the parameter.
// The caller sends the samples as separate requests instead.
var ErrNUnsupported = errors.New("the model server does not honour n > 1")

// WithChoices learns, once, whether the server behind c honours n (several choices in
// one response, so that the prompt is billed once). The first request with N > 1 goes
// alone while later ones wait for its verdict: with n honoured they all go through; with
// fewer choices returned than asked, or a 400 or 422 that names n, that request and every
// later one with N > 1 fail at once with ErrNUnsupported and nothing sent. Requests with
// N <= 1 pass untouched. The short response is returned with the error, so that the
// budget still counts what it cost. It is safe for concurrent use.
func WithChoices(c Client) *Choices {
	return &Choices{next: c, decided: make(chan struct{})}
}

// Choices is WithChoices's client. Supported reports the verdict.
type Choices struct {
	next Client

	mu      sync.Mutex
	probing chan struct{} // non-nil while the first request with N > 1 is out; closed when it ends
	decided chan struct{} // closed once the verdict is known
	ok      bool          // the verdict: n is honoured
}

var _ Client = (*Choices)(nil)

// Supported reports whether the verdict is known and, if so, whether n is honoured.
func (c *Choices) Supported() (known, ok bool) {
	select {
	case <-c.decided:
		return true, c.ok
	default:
		return false, false
	}
}

// nParamRE finds n named as the parameter at fault in an error message.
var nParamRE = regexp.MustCompile(`(?i)(^|[^a-z_])['"\x60]?n['"\x60]?([^a-z_]|$)|best_of|num_return_sequences`)

// rejectsN reports an error that refuses n > 1.
func rejectsN(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || (ae.Status != http.StatusBadRequest && ae.Status != http.StatusUnprocessableEntity) {
		return false
	}
	return nParamRE.MatchString(ae.Message)
}

// Complete sends req, or fails with ErrNUnsupported once n is known not to be honoured.
func (c *Choices) Complete(ctx context.Context, req Request) (Response, error) {
	if req.N <= 1 {
		return c.next.Complete(ctx, req)
	}
	for {
		c.mu.Lock()
		select {
		case <-c.decided:
			c.mu.Unlock()
			if !c.ok {
				return Response{}, ErrNUnsupported
			}
			return c.next.Complete(ctx, req)
		default:
		}
		wait := c.probing
		if wait == nil {
			c.probing = make(chan struct{})
			c.mu.Unlock()
			return c.probe(ctx, req)
		}
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return Response{}, ctx.Err()
		}
	}
}

// probe sends the first request with N > 1 and records the verdict. A failure that says
// nothing about n (a 5xx after retries, a cancelled ctx) leaves the question open for the
// next request.
func (c *Choices) probe(ctx context.Context, req Request) (Response, error) {
	resp, err := c.next.Complete(ctx, req)
	end := func(decided, ok bool) {
		c.mu.Lock()
		if decided {
			c.ok = ok
			close(c.decided)
		}
		close(c.probing)
		c.probing = nil
		c.mu.Unlock()
	}
	verdict := func(ok bool) { end(true, ok) }
	switch {
	case err == nil && len(resp.Choices) >= req.N:
		verdict(true)
		return resp, nil
	case err == nil:
		verdict(false)
		return resp, fmt.Errorf("%w: asked for %d choices, got %d", ErrNUnsupported, req.N, len(resp.Choices))
	case rejectsN(err):
		verdict(false)
		return Response{}, fmt.Errorf("%w: %w", ErrNUnsupported, err)
	}
	end(false, false)
	return resp, err
}
