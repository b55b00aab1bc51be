package safefile

import (
	"context"
	"io"
)

// Reader returns a reader of r that a cancelled ctx interrupts: a Read blocked on r (a
// terminal, a pipe nobody writes to) returns ctx's error as soon as ctx is done, so that
// SIGTERM or ^C stops a command reading its standard input. The read that was blocked
// goes on in the background and its bytes are dropped; r must not be read otherwise
// afterwards. It is not safe for concurrent use.
func Reader(ctx context.Context, r io.Reader) io.Reader {
	return &ctxReader{ctx: ctx, r: r, done: make(chan readResult, 1)}
}

type readResult struct {
	b   []byte
	err error
}

type ctxReader struct {
	ctx     context.Context
	r       io.Reader
	done    chan readResult
	pending bool   // a read of r is under way
	left    []byte // bytes read and not yet returned
	err     error  // r's error, returned once left is empty
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if len(c.left) == 0 && c.err == nil {
		if err := c.ctx.Err(); err != nil {
			return 0, err
		}
		if !c.pending {
			c.pending = true
			go func() {
				b := make([]byte, 32<<10)
				n, err := c.r.Read(b)
				c.done <- readResult{b: b[:n], err: err}
			}()
		}
		select {
		case res := <-c.done:
			c.pending = false
			c.left, c.err = res.b, res.err
		case <-c.ctx.Done():
			return 0, c.ctx.Err()
		}
	}
	n := copy(p, c.left)
	c.left = c.left[n:]
	if n > 0 {
		return n, nil
	}
	return 0, c.err // sticky, as r's would be
}
