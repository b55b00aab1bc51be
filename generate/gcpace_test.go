package generate

import (
	"runtime"
	"runtime/metrics"
	"testing"
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

// gogc is the process's GOGC now.
func gogc(t *testing.T) int {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatal("runtime/metrics has no /gc/gogc:percent")
	}
	return int(s[0].Value.Uint64())
}

// TestPaceGC: a run sets GOGC from the live heap, again after each collection, and the
// process's GOGC comes back when the last of overlapping runs ends.
func TestPaceGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	runtime.GC()
	before := gogc(t)
	if live := markedLive(); live >= gcHeadroom/2 {
		t.Skipf("the test process's live heap is %d bytes: too large to see the pace", live)
	}
	first := paceGC()
	if got := gogc(t); got <= 100 {
		t.Fatalf("GOGC during a run with a small live heap = %d, want above 100", got)
	}
	second := paceGC() // an overlapping run

	// A live heap of 48 MiB: after a collection the pace lets it grow by the headroom.
	keep := make([]byte, 48<<20)
	for i := range keep {
		keep[i] = byte(i)
	}
	want := 0
	for range 100 { // the pace is set in a cleanup, which runs after the collection
		runtime.GC()
		runtime.Gosched()
		if want = gcPercent(markedLive()); gogc(t) == want {
			break
		}
	}
	if got := gogc(t); got != want || want >= 200 || want == before {
		t.Fatalf("GOGC with a live heap of %d bytes = %d, want gcPercent = %d (under 200, not the process's %d)", markedLive(), got, want, before)
	}

	first()
	first() // a second call undoes nothing more
	if got := gogc(t); got == before {
		t.Errorf("GOGC came back to %d while a run is still in flight", got)
	}
	second()
	runtime.KeepAlive(keep)
	if got := gogc(t); got != before {
		t.Errorf("GOGC after the last run = %d, want the process's %d", got, before)
	}
}

// TestPaceGCLeavesTheUsersSetting: with GOGC or GOMEMLIMIT set, a run leaves the
// collector as the user set it.
func TestPaceGCLeavesTheUsersSetting(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(env, map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}[env])
			before := gogc(t)
			restore := paceGC()
			if got := gogc(t); got != before {
				t.Errorf("GOGC during a run with %s set = %d, want %d", env, got, before)
			}
			restore()
		})
	}
}
