// Package breaker is reactgen's one circuit breaker, shared by the model client (a server
// that never answered) and the generate stage (an environment that stopped answering). It
// consumes the outcomes of the calls it guards, the caller deciding which failures count,
// and produces an *Error once Limit of them counted: the breaker is then open and every
// later call fails fast with that error instead of paying for a request or a step.
package breaker

import (
	"fmt"
	"sync"
)

// Breaker counts the failures of the calls it guards. The caller asks Check before a call
// and reports its outcome with Succeed or Fail. It is safe for concurrent use; the
// configuration fields must not change once it is in use.
type Breaker struct {
	// Limit is how many counted failures open the breaker; 0 or less never opens it.
	Limit int
	// InARow counts only failures in a row: a success while the breaker is closed resets
	// the count, and once open it stays open (a later failure no longer counts). Without it
	// the failures are the first calls': any success disarms the breaker for good, even
	// once it is open.
	InARow bool
	// Err is the sentinel every *Error wraps, such as llm.ErrUnusable.
	Err error
	// Proof says what the failures were, with %d for their number: "%d steps in a row failed".
	Proof string

	mu       sync.Mutex
	failures int
	last     error
	open     bool
	disarmed bool
}

// Error is an open breaker's error: the breaker's sentinel with the failures that proved it.
type Error struct {
	Err      error  // the Breaker's sentinel
	Proof    string // the Breaker's Proof
	Failures int    // how many failures had counted
	Last     error  // the last of them
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v: %s; last error: %v", e.Err, fmt.Sprintf(e.Proof, e.Failures), e.Last)
}

// Unwrap makes errors.Is find both the sentinel and the last failure.
func (e *Error) Unwrap() []error { return []error{e.Err, e.Last} }

// Check returns the *Error of an open breaker, or nil while calls may go ahead.
func (b *Breaker) Check() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open && !b.disarmed {
		return b.errorLocked()
	}
	return nil
}

// Succeed records a call that succeeded.
func (b *Breaker) Succeed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !b.InARow:
		b.disarmed = true
	case !b.open:
		b.failures = 0
	}
}

// Fail records a failure that counts and returns the *Error when the breaker is open
// after counting it, nil when it is still closed or the failure did not count (the
// breaker is disarmed, or open already and counting in a row).
func (b *Breaker) Fail(err error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit <= 0 || b.disarmed || b.open && b.InARow {
		return nil
	}
	b.failures++
	b.last = err
	if b.failures < b.Limit {
		return nil
	}
	b.open = true
	return b.errorLocked()
}

func (b *Breaker) errorLocked() *Error {
	return &Error{Err: b.Err, Proof: b.Proof, Failures: b.failures, Last: b.last}
}
