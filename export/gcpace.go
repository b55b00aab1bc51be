package export

import (
	"math"

	"github.com/reactgen/reactgen/internal/gcpace"
)

// The collector's pace while an export runs (issue 25). The export's live heap is
// 60-90 MB (the batches, the zstd encoders, the tokenizer's vocabulary, the output
// buffers) and it allocates gigabytes over 100,000 episodes (the rendered examples,
// their rows, the Arrow and Parquet pages), so at the default GOGC of 100 the collector
// ran 119 times for them, each cycle marking the whole live heap. During an export the
// collector instead runs when the Go runtime's memory reaches exportMemory (a soft
// limit with GOGC off): 61 times for the same export. It never runs more often than the
// default would: after each cycle the limit is raised to what GOGC=100 allows of the
// live heap when that is more (memoryLimit). The export's peak RSS stays under issue
// 25's 300 MB (docs/bench-export.md, "Third round"). internal/gcpace sets it and leaves
// a user's GOGC or GOMEMLIMIT, or a limit the program set, alone.

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

// exportPace is an export's gcpace.Policy: GOGC off under memoryLimit.
func exportPace(live uint64) gcpace.Setting {
	return gcpace.Setting{GCPercent: -1, MemoryLimit: memoryLimit(live)}
}

// paceGC paces the collector for an export until the returned function is called.
func paceGC() (restore func()) { return gcpace.Start(exportPace) }
