package generate

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/reactgen/reactgen/internal/gcpace"
)

func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 1600},
		{1 << 20, 1600},       // the floor on the goal (4 MiB x 16) is the headroom
		{4 << 20, 1600},       // 4 MiB + 64 MiB
		{8 << 20, 800},        // 8 MiB + 64 MiB
		{32 << 20, 200},       // 32 MiB + 64 MiB
		{64 << 20, 100},       // the default: twice the live heap
		{1 << 30, 100},        // never below the default
		{48 << 20, 133},       // 48 MiB + 63.8 MiB
		{gcHeadroom + 1, 100}, // rounding down stops at the default
	} {
		if got := gcPercent(c.live); got != c.want {
			t.Errorf("gcPercent(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// TestPaceGC: a run starts with GOGC at gcPercent of the live heap, and the process's
// GOGC comes back after it (the pacing itself: internal/gcpace).
func TestPaceGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	runtime.GC()
	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	live := gcpace.Live()
	restore := paceGC()
	got := debug.SetGCPercent(-1)
	debug.SetGCPercent(got)
	restore()
	// A collection in between (rare at this pace) repaces it from the new live heap.
	if want := gcPercent(live); got != want && got != gcPercent(gcpace.Live()) {
		t.Errorf("GOGC during a run = %d, want gcPercent(live heap %d) = %d", got, gcpace.Live(), want)
	}
	if now := debug.SetGCPercent(before); now != before {
		t.Errorf("GOGC after the run = %d, want the process's %d", now, before)
	}
}
