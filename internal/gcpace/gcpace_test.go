package gcpace

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// settings is the process's collector setting now (GOGC -1: off).
func settings(t *testing.T) Setting {
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
	return Setting{GCPercent: gogc, MemoryLimit: int64(s[1].Value.Uint64())}
}

// small and large are the test policy's two paces, for a live heap under and over 32 MiB.
var (
	small = Setting{GCPercent: -1, MemoryLimit: 1 << 30}
	large = Setting{GCPercent: 250, MemoryLimit: math.MaxInt64}
)

func testPolicy(live uint64) Setting {
	if live < 32<<20 {
		return small
	}
	return large
}

func clearEnv(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
}

// TestStart: the policy's pace for the live heap is set at the start and again after a
// collection that finds a different live heap; an overlapping stage runs under the
// first one's policy; the process's settings come back when the last stage ends.
func TestStart(t *testing.T) {
	clearEnv(t)
	runtime.GC()
	before := settings(t)
	if Live() >= 32<<20 {
		t.Skipf("the test process's live heap is %d bytes: too large to see the pace", Live())
	}
	first := Start(testPolicy)
	if got := settings(t); got != small {
		t.Fatalf("at the start with a small live heap: %+v, want %+v", got, small)
	}
	second := Start(func(uint64) Setting { return Setting{GCPercent: 50, MemoryLimit: 1 << 40} })
	if got := settings(t); got != small {
		t.Fatalf("after an overlapping stage started: %+v, want the first one's %+v", got, small)
	}

	keep := make([]byte, 48<<20) // a live heap of 48 MiB, pointer-free and never touched
	var got Setting
	for range 100 { // the pace is set in a cleanup, which runs after the collection
		runtime.GC()
		runtime.Gosched()
		if got = settings(t); got == large {
			break
		}
	}
	if got != large {
		t.Fatalf("with a live heap of %d bytes: %+v, want %+v", Live(), got, large)
	}
	runtime.KeepAlive(keep)

	first()
	first() // a second call undoes nothing more
	if got := settings(t); got != large {
		t.Errorf("after the first stage ended, with the second in flight: %+v, want %+v", got, large)
	}
	second()
	if got := settings(t); got != before {
		t.Errorf("after the last stage: %+v, want the process's %+v", got, before)
	}
}

// TestStartLeavesTheUsersSetting: with GOGC or GOMEMLIMIT set, or a memory limit the
// program set itself, a stage leaves the collector as it was; a setting something else
// changed during a stage stays after it.
func TestStartLeavesTheUsersSetting(t *testing.T) {
	for _, who := range []string{"GOGC", "GOMEMLIMIT", "program"} {
		t.Run(who, func(t *testing.T) {
			clearEnv(t)
			switch who {
			case "GOGC":
				t.Setenv(who, "50")
			case "GOMEMLIMIT":
				t.Setenv(who, "1GiB")
			default:
				old := debug.SetMemoryLimit(1 << 30)
				defer debug.SetMemoryLimit(old)
			}
			before := settings(t)
			stop := Start(testPolicy)
			if got := settings(t); got != before {
				t.Errorf("during a stage with %s set: %+v, want %+v", who, got, before)
			}
			stop()
		})
	}
	t.Run("set during the stage", func(t *testing.T) {
		clearEnv(t)
		before := settings(t)
		stop := Start(testPolicy)
		debug.SetGCPercent(300)
		stop()
		want := Setting{GCPercent: 300, MemoryLimit: before.MemoryLimit}
		if got := settings(t); got != want {
			t.Errorf("after a stage during which GOGC was set to 300: %+v, want %+v", got, want)
		}
		debug.SetGCPercent(before.GCPercent)
	})
}
