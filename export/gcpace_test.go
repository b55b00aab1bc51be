package export

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
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

// gcSettings are the process's GOGC (-1: off) and soft memory limit now.
func gcSettings(t *testing.T) (int, int64) {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		t.Fatal("runtime/metrics has no /gc/gogc:percent or /gc/gomemlimit:bytes")
	}
	gogc := int(s[0].Value.Uint64())
	if gogc == 0 && debug.SetGCPercent(-1) == -1 { // off reads as 0; tell it from GOGC=0
		gogc = -1
	} else if gogc == 0 {
		debug.SetGCPercent(0)
	}
	return gogc, int64(s[1].Value.Uint64())
}

// TestPaceGC: an export turns GOGC off under a soft memory limit of exportMemory, raises
// the limit after a collection that finds a live heap GOGC=100 would let grow past it,
// and the process's settings come back when the last of overlapping exports ends.
func TestPaceGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	runtime.GC()
	gogc, limit := gcSettings(t)
	if live := markedLive(); memoryLimit(live) != exportMemory {
		t.Skipf("the test process's live heap is %d bytes: too large to see the pace", live)
	}
	first := paceGC()
	if g, l := gcSettings(t); g != -1 || l != exportMemory {
		t.Fatalf("during an export with a small live heap: GOGC %d, limit %d; want off, %d", g, l, exportMemory)
	}
	second := paceGC() // an overlapping export

	// A live heap of 160 MiB (pointer-free, never touched: no page of it is resident),
	// which GOGC=100 would let grow to 320 MiB: after a collection the limit is raised.
	keep := make([]byte, 160<<20)
	var l int64
	for range 100 { // the limit is set in a cleanup, which runs after the collection
		runtime.GC()
		runtime.Gosched()
		if _, l = gcSettings(t); l > exportMemory {
			break
		}
	}
	if want := memoryLimit(160 << 20); l < want {
		t.Fatalf("limit with a live heap of %d bytes = %d, want at least memoryLimit(160 MiB) = %d", markedLive(), l, want)
	}
	runtime.KeepAlive(keep)

	first()
	first() // a second call undoes nothing more
	if g, _ := gcSettings(t); g != -1 {
		t.Errorf("GOGC came back to %d while an export is still in flight", g)
	}
	second()
	if g, l := gcSettings(t); g != gogc || l != limit {
		t.Errorf("after the last export: GOGC %d, limit %d; want the process's %d, %d", g, l, gogc, limit)
	}
}

// TestPaceGCLeavesTheUsersSetting: with GOGC or GOMEMLIMIT set, or a memory limit the
// program set itself, an export leaves the collector as it was; and a GOGC that
// something else set during the export stays.
func TestPaceGCLeavesTheUsersSetting(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT", "program"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			switch env {
			case "GOGC":
				t.Setenv(env, "50")
			case "GOMEMLIMIT":
				t.Setenv(env, "1GiB")
			default:
				old := debug.SetMemoryLimit(1 << 30)
				defer debug.SetMemoryLimit(old)
			}
			gogc, limit := gcSettings(t)
			restore := paceGC()
			if g, l := gcSettings(t); g != gogc || l != limit {
				t.Errorf("during an export with %s set: GOGC %d, limit %d; want %d, %d", env, g, l, gogc, limit)
			}
			restore()
		})
	}
	t.Run("set during the export", func(t *testing.T) {
		t.Setenv("GOGC", "")
		t.Setenv("GOMEMLIMIT", "")
		gogc, limit := gcSettings(t)
		restore := paceGC()
		debug.SetGCPercent(300)
		restore()
		if g, l := gcSettings(t); g != 300 || l != limit {
			t.Errorf("after an export during which GOGC was set to 300: GOGC %d, limit %d; want 300, %d", g, l, limit)
		}
		debug.SetGCPercent(gogc)
	})
}
