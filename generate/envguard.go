package generate

import (
	"context"
	"errors"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/breaker"
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
	b    breaker.Breaker
}

// newEnvGuard returns the guard of a run that stops after limit failed steps in a row.
func newEnvGuard(limit int, halt func(error)) *envGuard {
	return &envGuard{limit: limit, halt: halt,
		b: breaker.Breaker{Limit: limit, InARow: true, Err: ErrEnvironmentDown, Proof: "%d steps in a row failed"}}
}

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
	return g.b.Check()
}

// record counts the outcome of one step and returns the error its caller should see.
func (g *envGuard) record(ctx context.Context, err error) error {
	switch {
	case err == nil:
		g.b.Succeed()
		return nil
	case ctx.Err() != nil:
		return err
	}
	if down := g.b.Fail(err); down != nil {
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
