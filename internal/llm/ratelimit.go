package llm

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// defaultMaxTokensEstimate stands in for max_tokens when a request leaves it unset.
const defaultMaxTokensEstimate = 256

// WithRateLimit keeps c under rpm requests and tpm tokens per minute (0 = no limit for
// that one). Before sending, it waits until the request's estimated tokens (prompt chars
// / 4 + max_tokens per choice) are available; after the response it corrects the
// account with the server's actual usage: more used is taken as debt that delays later
// requests, less used is credited to the next ones. Failed requests are refunded.
func WithRateLimit(c Client, rpm, tpm float64) Client {
	if rpm <= 0 && tpm <= 0 {
		return c
	}
	l := &limited{next: c}
	if rpm > 0 {
		l.req = rate.NewLimiter(rate.Limit(rpm/60), max(1, int(math.Ceil(rpm/60))))
	}
	if tpm > 0 {
		l.burst = max(1, int(tpm))
		l.tok = rate.NewLimiter(rate.Limit(tpm/60), l.burst)
	}
	return l
}

type limited struct {
	next  Client
	req   *rate.Limiter
	tok   *rate.Limiter
	burst int

	mu     sync.Mutex
	credit int
}

// EstimateTokens is the rate limiter's guess of a request's tokens before it is sent:
// prompt characters / 4 plus max_tokens for each choice.
func EstimateTokens(req Request) int {
	chars := len(req.Prompt)
	for _, m := range req.Messages {
		chars += len(m.Content) + len(m.Role)
	}
	maxTok := req.MaxTokens
	if maxTok <= 0 {
		maxTok = defaultMaxTokensEstimate
	}
	return (chars+3)/4 + maxTok*max(req.N, 1)
}

func (l *limited) Complete(ctx context.Context, req Request) (Response, error) {
	if l.req != nil {
		if err := l.req.Wait(ctx); err != nil {
			return Response{}, waitError(ctx, "requests", err)
		}
	}
	if l.tok == nil {
		return l.next.Complete(ctx, req)
	}
	est := min(EstimateTokens(req), l.burst)
	l.mu.Lock()
	used := min(l.credit, est)
	l.credit -= used
	l.mu.Unlock()
	if need := est - used; need > 0 {
		if err := l.tok.WaitN(ctx, need); err != nil {
			l.refund(used)
			return Response{}, waitError(ctx, "tokens", err)
		}
	}
	resp, err := l.next.Complete(ctx, req)
	if err != nil {
		l.refund(est)
		return resp, err
	}
	actual := resp.Usage.TotalTokens
	if actual == 0 {
		actual = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	}
	switch diff := actual - est; {
	case diff > 0:
		l.tok.ReserveN(time.Now(), min(diff, l.burst)) // debt: delays the next waiters
	case diff < 0:
		l.refund(-diff)
	}
	return resp, nil
}

func (l *limited) refund(n int) {
	l.mu.Lock()
	l.credit = min(l.credit+n, l.burst)
	l.mu.Unlock()
}

// waitError reports a rate-limit wait that ended early. x/time/rate refuses at once a
// wait that would outlast ctx's deadline, with an error of its own: that is reported as
// context.DeadlineExceeded so that callers see one kind of deadline.
func waitError(ctx context.Context, what string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("llm rate limit (%s): %w", what, cerr)
	}
	return fmt.Errorf("llm rate limit (%s): %v: %w", what, err, context.DeadlineExceeded)
}
