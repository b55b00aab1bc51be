package breaker_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/reactgen/reactgen/internal/breaker"
)

var (
	errDown = errors.New("down")
	errStep = errors.New("step failed")
)

// outcome is one call's result as the caller reports it: a failure that counts, or a success.
type outcome bool

const (
	fail outcome = false
	ok   outcome = true
)

func TestBreaker(t *testing.T) {
	tests := []struct {
		name     string
		inARow   bool
		calls    []outcome
		open     bool // whether Check refuses the next call
		failures int  // the failures its *Error names
	}{
		{"first failures open it", false, []outcome{fail, fail, fail}, true, 3},
		{"a success disarms it for good", false, []outcome{fail, ok, fail, fail, fail, fail}, false, 0},
		{"a success after it opened disarms it", false, []outcome{fail, fail, fail, ok, fail}, false, 0},
		{"failures after it opened still count", false, []outcome{fail, fail, fail, fail}, true, 4},
		{"in a row: failures in a row open it", true, []outcome{ok, fail, fail, fail}, true, 3},
		{"in a row: a success resets the count", true, []outcome{fail, fail, ok, fail, fail}, false, 0},
		{"in a row: it stays open after a success", true, []outcome{fail, fail, fail, ok}, true, 3},
		{"in a row: failures after it opened do not count", true, []outcome{fail, fail, fail, fail}, true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &breaker.Breaker{Limit: 3, InARow: tt.inARow, Err: errDown, Proof: "%d steps failed"}
			for i, c := range tt.calls {
				if c == ok {
					b.Succeed()
					continue
				}
				_ = b.Fail(fmt.Errorf("call %d: %w", i, errStep))
			}
			err := b.Check()
			if (err != nil) != tt.open {
				t.Fatalf("Check: got %v, want open %v", err, tt.open)
			}
			if !tt.open {
				return
			}
			var be *breaker.Error
			if !errors.As(err, &be) || be.Failures != tt.failures {
				t.Fatalf("Check: got %#v, want an *Error naming %d failures", err, tt.failures)
			}
			if !errors.Is(err, errDown) || !errors.Is(err, errStep) {
				t.Errorf("got %v, want it to wrap the sentinel and the last failure", err)
			}
		})
	}
}

// Fail returns the *Error from the failure that opens the breaker, and its message names
// the sentinel, the proof and the last failure.
func TestFailOpens(t *testing.T) {
	b := &breaker.Breaker{Limit: 2, Err: errDown, Proof: "the first %d requests all failed"}
	if err := b.Fail(errStep); err != nil {
		t.Fatalf("first failure: got %v, want nil", err)
	}
	err := b.Fail(errors.New("401 Unauthorized"))
	if got, want := fmt.Sprint(err), "down: the first 2 requests all failed; last error: 401 Unauthorized"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestZeroLimitNeverOpens(t *testing.T) {
	var b breaker.Breaker
	for range 10 {
		if err := b.Fail(errStep); err != nil {
			t.Fatalf("Fail: got %v", err)
		}
	}
	if err := b.Check(); err != nil {
		t.Errorf("Check: got %v, want nil", err)
	}
}

// Exactly one of many concurrent failures opens an in-a-row breaker (the generate stage
// halts the run once, on that error).
func TestConcurrentFailuresOpenOnce(t *testing.T) {
	b := &breaker.Breaker{Limit: 5, InARow: true, Err: errDown, Proof: "%d steps in a row failed"}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		opened int
	)
	for range 50 {
		wg.Go(func() {
			if b.Fail(errStep) != nil {
				mu.Lock()
				opened++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if opened != 1 {
		t.Errorf("failures that opened it: got %d, want 1", opened)
	}
}
