package generate

import (
	"math"

	"github.com/reactgen/reactgen/internal/gcpace"
)

// The collector's pace while a run is in flight (issue 25). A run's live heap is a few
// MB (the question list, the connections, the episodes in flight) while each model call
// allocates about 40 KB (the prompt, go-openai's request JSON, the transport's copy of
// it), so at the default GOGC of 100 the collector ran every few hundred calls, each
// cycle scanning the stacks of every episode and connection goroutine. During a run the
// heap may instead grow by gcHeadroom above the live heap before a cycle starts, and
// never by less than the default allows: GOGC is gcPercent(the live heap), set again
// after each cycle (internal/gcpace, which leaves a user's GOGC or GOMEMLIMIT alone).

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

// runPace is a run's gcpace.Policy: GOGC from the live heap, no memory limit.
func runPace(live uint64) gcpace.Setting {
	return gcpace.Setting{GCPercent: gcPercent(live), MemoryLimit: math.MaxInt64}
}

// paceGC paces the collector for a run until the returned function is called.
func paceGC() (restore func()) { return gcpace.Start(runPace) }
