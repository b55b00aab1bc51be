package export

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The collector's pace while an export runs (issue 25). The export's live heap is
// 60-90 MB (the Arrow builders, the zstd encoders, the tokenizer's vocabulary, the
// output buffers) and it allocates gigabytes over 100,000 episodes (the rendered
// examples, their rows, the Arrow and Parquet pages), so at the default GOGC of 100 the
// collector ran 119 times for them, each cycle marking the whole live heap. During an
// export the collector instead runs when the Go runtime's memory reaches exportMemory
// (a soft limit, debug.SetMemoryLimit, with GOGC off): 61 times for the same export.
// It never runs more often than the default would: after each cycle the limit is raised
// to what GOGC=100 allows of the live heap when that is more (memoryLimit). The export's
// peak RSS stays under issue 25's 300 MB (docs/bench-export.md, "Third round"). A user's
// GOGC or GOMEMLIMIT in the environment, or a limit the program set, is theirs and is
// left alone; the process's settings come back when the last export in flight ends.

// exportMemory is the Go memory (heap, free pages not yet returned, stacks, metadata)
// at which the collector runs during an export: with the binary's own pages the
// process's resident set stays about 30 MB above it (270 MB at the peak).
const exportMemory = 240 << 20

// memoryLimit is the soft memory limit for a live heap of live bytes: exportMemory, or
// what the default GOGC of 100 lets the Go memory reach (twice the live heap and
// gcSlack for the rest) when that is more, so that a large live heap is never collected
// more often than without the export's pace.
func memoryLimit(live uint64) int64 {
	const gcSlack = 32 << 20
	if live > (math.MaxInt64-gcSlack)/2 {
		return math.MaxInt64
	}
	return max(exportMemory, int64(2*live+gcSlack))
}

var gcPace struct {
	mu       sync.Mutex
	runs     int // exports in flight that set the pace
	oldGOGC  int // the GOGC before the first of them
	oldLimit int64
	on       *int // the current pacing's generation; nil when none
}

// paceGC sets the collector's pace for an export and returns what undoes it. Exports
// may overlap: the first sets the pace, the last restores the process's settings (GOGC
// only if nothing else changed it meanwhile).
func paceGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	gcPace.mu.Lock()
	defer gcPace.mu.Unlock()
	if gcPace.runs == 0 {
		if debug.SetMemoryLimit(-1) != math.MaxInt64 {
			return func() {} // the program set a limit of its own
		}
		on := new(int)
		gcPace.on = on
		gcPace.oldLimit = debug.SetMemoryLimit(memoryLimit(markedLive()))
		gcPace.oldGOGC = debug.SetGCPercent(-1)
		repaceAfterGC(on)
	}
	gcPace.runs++
	return sync.OnceFunc(func() {
		gcPace.mu.Lock()
		defer gcPace.mu.Unlock()
		gcPace.runs--
		if gcPace.runs > 0 {
			return
		}
		gcPace.on = nil
		debug.SetMemoryLimit(gcPace.oldLimit)
		if now := debug.SetGCPercent(gcPace.oldGOGC); now != -1 {
			debug.SetGCPercent(now) // something else set GOGC during the export: it is theirs
		}
	})
}

// gcMark is allocated only to become garbage: its cleanup runs after the next cycle
// that finds it unreachable. It is too large for the tiny allocator, whose blocks
// are freed (and their cleanups run) only when every object in them is.
type gcMark struct{ _ [32]byte }

// repaceAfterGC sets the memory limit from the live heap after the next collection,
// and again after each one, while on is the current pacing.
func repaceAfterGC(on *int) {
	runtime.AddCleanup(new(gcMark), func(on *int) {
		gcPace.mu.Lock()
		defer gcPace.mu.Unlock()
		if gcPace.on != on {
			return
		}
		debug.SetMemoryLimit(memoryLimit(markedLive()))
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
