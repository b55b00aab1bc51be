package generate

import (
	"strings"
	"testing"
	"time"
)

// TestProgressETAIsHonest: the ETA aims at what the run can reach. A question file
// smaller than the target ends the run first, so the ETA is to its end and says the
// target is out of reach; a reachable target is timed at the rate the filter keeps
// episodes; the last line says whether the target was met.
func TestProgressETAIsHonest(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := start.Add(100 * time.Second)
	for _, tt := range []struct {
		name                        string
		planned, target, done, kept int
		want                        string
	}{
		{"target beyond the questions", 300, 3000, 100, 50, "eta 3m20s (target out of reach: the questions end first)"},
		{"target reachable", 10000, 100, 100, 50, "eta 1m40s"},
		{"no target", 300, 0, 100, 50, "eta 3m20s"},
		{"nothing kept yet", 300, 3000, 100, 0, "eta 3m20s"},
		{"nothing done yet", 300, 3000, 0, 0, "eta -"},
	} {
		p := &progress{planned: tt.planned, target: tt.target, done: tt.done, kept: tt.kept, total: tt.kept, start: start}
		if got := p.line(at); !strings.HasSuffix(got, tt.want) {
			t.Errorf("%s: line %q, want it to end with %q", tt.name, got, tt.want)
		}
	}
	p := &progress{planned: 300, target: 3000, done: 300, kept: 140, total: 140, start: start, stopped: StoppedDone}
	if got := p.line(at); !strings.HasSuffix(got, "stopped: done (target not met: 140 of 3000 kept)") || strings.Contains(got, "eta") {
		t.Errorf("last line %q", got)
	}
	p = &progress{planned: 300, target: 100, done: 220, kept: 100, total: 100, start: start, stopped: "target"}
	if got := p.line(at); !strings.HasSuffix(got, "(target met: 100 of 100 kept)") {
		t.Errorf("last line %q", got)
	}
}
