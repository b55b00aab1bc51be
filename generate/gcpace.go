package generate

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The collector's pace while a run is in flight (issue 25). A run's live heap is a few
// MB (the question list, the connections, the episodes in flight) while each model call
// allocates about 40 KB (the prompt, go-openai's request JSON, the transport's copy of
// it), so at the default GOGC of 100 the collector ran every few hundred calls, each
// cycle scanning the stacks of every episode and connection goroutine. During a run the
// heap may instead grow by gcHeadroom above the live heap before a cycle starts, and
// never by less than the default allows: GOGC is set, after each cycle, to
// gcPercent(the live heap). A user's GOGC or GOMEMLIMIT in the environment is theirs and
// is left alone; the process's setting comes back when the last run in flight ends.

// gcHeadroom is how far the heap may grow above the live heap during a run.
const gcHeadroom = 64 << 20

// gcPercent is the GOGC that lets a heap of live bytes grow by gcHeadroom: between 100
// (the default, for a live heap of 64 MiB or more) and 1600, at which the runtime's
// floor on the heap goal (4 MiB x GOGC/100) is gcHeadroom.
func gcPercent(live uint64) int {
	const most = 100 * gcHeadroom / (4 << 20)
	if live == 0 {
		return most
	}
	return int(max(100, min(most, 100*gcHeadroom/live)))
}

var gcPace struct {
	mu   sync.Mutex
	runs int  // runs in flight that set the pace
	old  int  // the GOGC before the first of them
	on   *int // the current pacing's generation; nil when none
}

// paceGC sets the collector's pace for a run and returns what undoes it. Runs may
// overlap: the first sets the pace, the last restores the process's GOGC.
func paceGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	gcPace.mu.Lock()
	defer gcPace.mu.Unlock()
	gcPace.runs++
	if gcPace.runs == 1 {
		on := new(int)
		gcPace.on = on
		gcPace.old = debug.SetGCPercent(gcPercent(markedLive()))
		repaceAfterGC(on)
	}
	return sync.OnceFunc(func() {
		gcPace.mu.Lock()
		defer gcPace.mu.Unlock()
		gcPace.runs--
		if gcPace.runs == 0 {
			gcPace.on = nil
			debug.SetGCPercent(gcPace.old)
		}
	})
}

// gcMark is allocated only to become garbage: its cleanup runs after the next cycle
// that finds it unreachable. It is too large for the tiny allocator, whose blocks
// are freed (and their cleanups run) only when every object in them is.
type gcMark struct{ _ [32]byte }

// repaceAfterGC sets GOGC from the live heap after the next collection, and again after
// each one, while on is the current pacing.
func repaceAfterGC(on *int) {
	runtime.AddCleanup(new(gcMark), func(on *int) {
		gcPace.mu.Lock()
		defer gcPace.mu.Unlock()
		if gcPace.on != on {
			return
		}
		debug.SetGCPercent(gcPercent(markedLive()))
		repaceAfterGC(on)
	}, on)
}

// markedLive is the heap the last collection marked live (0 before the first).
func markedLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
