package llm

import "context"

// WithConcurrency lets at most n requests of c be in flight at once; further callers
// wait for a slot or for their ctx to end. n <= 0 means no limit.
func WithConcurrency(c Client, n int) Client {
	if n <= 0 {
		return c
	}
	return &concurrent{next: c, slots: make(chan struct{}, n)}
}

type concurrent struct {
	next  Client
	slots chan struct{}
}

func (l *concurrent) Complete(ctx context.Context, req Request) (Response, error) {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return Response{}, ctx.Err()
	}
	defer func() { <-l.slots }()
	return l.next.Complete(ctx, req)
}
