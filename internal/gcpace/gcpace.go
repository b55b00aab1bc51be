// Package gcpace sets the garbage collector's pace while a stage runs (issue 25). A
// stage whose live heap is small but which allocates gigabytes (the generate stage's
// requests, the export's rows and pages) spends much of its CPU in collections at Go's
// default GOGC of 100. Start hands the collector a stage's Policy: the GOGC percent and
// soft memory limit for the live heap, applied when the stage starts and again after
// each collection, until the stage ends.
//
// A user's GOGC or GOMEMLIMIT in the environment, or a memory limit the program set
// itself, is theirs: Start then changes nothing. Stages may overlap: the first one's
// policy paces them all and the process's settings come back when the last one ends,
// except a setting something else changed in the meantime, which stays.
package gcpace

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Setting is a pace for the collector: a GOGC percent (-1: off) and a soft memory limit
// in bytes (math.MaxInt64: none), as runtime/debug's SetGCPercent and SetMemoryLimit take
// them.
type Setting struct {
	GCPercent   int
	MemoryLimit int64
}

// Policy is a stage's pace for a live heap of live bytes (0 before the first collection).
type Policy func(live uint64) Setting

var pace struct {
	mu     sync.Mutex
	stages int     // stages in flight under the pace
	policy Policy  // the first one's
	old    Setting // the process's, before the first
	set    Setting // what the pace last set
	on     *int    // the current pacing's generation; nil when none
}

// Start paces the collector by policy until the returned function is called (calling
// it again does nothing).
func Start(policy Policy) (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	pace.mu.Lock()
	defer pace.mu.Unlock()
	if pace.stages == 0 {
		if debug.SetMemoryLimit(-1) != math.MaxInt64 {
			return func() {} // the program set a limit of its own
		}
		on := new(int)
		pace.on, pace.policy = on, policy
		pace.old = apply(policy(Live()))
		repaceAfterGC(on)
	}
	pace.stages++
	return sync.OnceFunc(func() {
		pace.mu.Lock()
		defer pace.mu.Unlock()
		pace.stages--
		if pace.stages > 0 {
			return
		}
		pace.on, pace.policy = nil, nil
		if now := debug.SetMemoryLimit(pace.old.MemoryLimit); now != pace.set.MemoryLimit {
			debug.SetMemoryLimit(now) // set by something else during the stage: theirs
		}
		if now := debug.SetGCPercent(pace.old.GCPercent); now != pace.set.GCPercent {
			debug.SetGCPercent(now)
		}
	})
}

// apply sets s (the memory limit first, so that turning GOGC off never leaves the heap
// unbounded for a moment) and returns the settings it replaced. pace.mu is held.
func apply(s Setting) (old Setting) {
	old.MemoryLimit = debug.SetMemoryLimit(s.MemoryLimit)
	old.GCPercent = debug.SetGCPercent(s.GCPercent)
	pace.set = s
	return old
}

// gcMark is allocated only to become garbage: its cleanup runs after the next cycle
// that finds it unreachable. It is too large for the tiny allocator, whose blocks
// are freed (and their cleanups run) only when every object in them is.
type gcMark struct{ _ [32]byte }

// repaceAfterGC applies the policy to the live heap after the next collection, and
// again after each one, while on is the current pacing.
func repaceAfterGC(on *int) {
	runtime.AddCleanup(new(gcMark), func(on *int) {
		pace.mu.Lock()
		defer pace.mu.Unlock()
		if pace.on != on {
			return
		}
		apply(pace.policy(Live()))
		repaceAfterGC(on)
	}, on)
}

// Live is the heap the last collection marked live (0 before the first).
func Live() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
