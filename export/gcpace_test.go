package export

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/reactgen/reactgen/internal/gcpace"
)

func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, exportMemory},
		{60 << 20, exportMemory},
		{(exportMemory - 32<<20) / 2, exportMemory}, // what GOGC=100 allows is the floor
		{150 << 20, 332 << 20},                      // 2 x 150 MiB + 32 MiB
		{1 << 30, 2<<30 + 32<<20},
		{math.MaxUint64, math.MaxInt64},
		{math.MaxInt64 / 2, math.MaxInt64},
	} {
		if got := memoryLimit(c.live); got != c.want {
			t.Errorf("memoryLimit(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// TestPaceGC: an export turns GOGC off under memoryLimit of the live heap, and the
// process's settings come back after it (the pacing itself: internal/gcpace).
func TestPaceGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	runtime.GC()
	limit := debug.SetMemoryLimit(-1)
	live := gcpace.Live()
	restore := paceGC()
	gogc, during := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	restore()
	// A collection in between repaces it from the new live heap.
	if want := memoryLimit(live); gogc != -1 || (during != want && during != memoryLimit(gcpace.Live())) {
		t.Errorf("during an export: GOGC %d, limit %d; want off, memoryLimit(live heap %d) = %d", gogc, during, gcpace.Live(), want)
	}
	if now := debug.SetMemoryLimit(-1); now != limit {
		t.Errorf("limit after the export = %d, want the process's %d", now, limit)
	}
}
