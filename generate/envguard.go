package generate

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/llm"
)

// ErrEnvironmentDown ends a run whose environment failed env.max_consecutive_failures
// steps in a row (a MediaWiki that cannot be reached): every episode would pay for a
// model request and then fail, so no new episode starts and the steps of those in flight
// fail at once.
var ErrEnvironmentDown = errors.New("environment unusable")

// stopsRun reports the episode errors that stop a whole run: a model server that never
// answered (llm.ErrUnusable) and an environment that stopped answering.
func stopsRun(err error) bool {
	return errors.Is(err, llm.ErrUnusable) || errors.Is(err, ErrEnvironmentDown)
}

// envGuard counts environment steps that failed in a row, over all the run's episodes,
// and once limit of them did, fails every later step with ErrEnvironmentDown. A step
// that succeeds resets the count; a step cut short by its context does not count. It is
// safe for concurrent use.
type envGuard struct {
	limit int
	// halt, when set, is called once, as the guard trips and before the step that
	// tripped it returns, so that no episode starts (and pays for a request) after it.
	halt func(error)

	mu      sync.Mutex
	inARow  int
	last    error
	tripped bool
}

// downError is ErrEnvironmentDown with the failures that proved it.
type downError struct {
	failures int
	last     error
}

func (e *downError) Error() string {
	return fmt.Sprintf("%v: %d steps in a row failed; last error: %v", ErrEnvironmentDown, e.failures, e.last)
}

func (e *downError) Unwrap() []error { return []error{ErrEnvironmentDown, e.last} }

// wrap guards one episode's environment; with limit 0 or less it returns e unchanged.
func (g *envGuard) wrap(e Environment) Environment {
	if g == nil || g.limit <= 0 {
		return e
	}
	return guarded{e: e, g: g}
}

// down returns the error that proved the environment down, or nil.
func (g *envGuard) down() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tripped {
		return &downError{failures: g.inARow, last: g.last}
	}
	return nil
}

// record counts the outcome of one step and returns the error its caller should see.
func (g *envGuard) record(ctx context.Context, err error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err == nil:
		if !g.tripped {
			g.inARow = 0
		}
		return nil
	case ctx.Err() != nil || g.tripped:
		return err
	}
	g.inARow++
	g.last = err
	if g.inARow >= g.limit {
		g.tripped = true
		down := &downError{failures: g.inARow, last: err}
		if g.halt != nil {
			g.halt(down)
		}
		return down
	}
	return err
}

type guarded struct {
	e Environment
	g *envGuard
}

func (w guarded) Step(ctx context.Context, raw string) (env.Result, error) {
	if err := w.g.down(); err != nil {
		return env.Result{}, err
	}
	res, err := w.e.Step(ctx, raw)
	return res, w.g.record(ctx, err)
}
