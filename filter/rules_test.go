package filter

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
)

func TestFoldHashIgnoresCaseAndSpacing(t *testing.T) {
	sum := func(s string) uint64 { return foldHash(fnvOffset64, s) }
	long := strings.Repeat("Ünïcode words ", 40)
	cases := []struct {
		a, b string
		same bool
	}{
		{"I need to search X.", "  i NEED to\tsearch   x. ", true},
		{long, strings.ToLower(long) + "  ", true},
		{"search X", "search Y", false},
		{"ab", "a b", false},
	}
	for _, tc := range cases {
		if got := sum(tc.a) == sum(tc.b); got != tc.same {
			t.Errorf("%q vs %q: same %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

// TestTrajectoryHashIsFNV: the inline hash is hash/fnv's FNV-1a over the folded actions
// and thoughts, as the trajectory hash was computed before (the same values).
func TestTrajectoryHashIsFNV(t *testing.T) {
	ep := episodetest.Episode("e", "q", "Search[Ada  Lovelace]", "LOOKUP[ÉCOLE]", "Finish["+strings.Repeat("x", 300)+"]")
	ep.Steps[1].Thought = "  Then I  look\tUP école. "
	ep.Steps[2].Thought = strings.Repeat("Long thought ", 40)
	all := fnv.New64a()
	var acts []uint64
	for _, s := range ep.Steps {
		a := fnv.New64a()
		a.Write([]byte(normAction(s.Action)))
		acts = append(acts, a.Sum64())
		all.Write([]byte(normAction(s.Action) + "\x00" + normAction(s.Thought) + "\x01"))
	}
	gotAll, gotActs := trajectoryHash(&ep)
	if gotAll != all.Sum64() || fmt.Sprint(gotActs) != fmt.Sprint(acts) {
		t.Errorf("trajectoryHash = %x %x, hash/fnv gives %x %x", gotAll, gotActs, all.Sum64(), acts)
	}
}

// TestAppendFoldedIsNormAction: the allocation-free folding dedupe and no_loops use is
// normAction byte for byte.
func TestAppendFoldedIsNormAction(t *testing.T) {
	for _, s := range []string{"", " ", "Search[Ada Lovelace]", "  SEARCH[ Ada\t\nLovelace ]  ", "Lookup[ÉCOLE]\u00a0x\u0085y",
		"bad \xff\xfe utf-8 \xc3", "ǅ ΣΑΣ İstanbul", strings.Repeat("Long Action ", 30), "a\u2028b\u3000c\v\fd"} {
		if got, want := string(appendFolded(nil, s)), normAction(s); got != want {
			t.Errorf("%q: appendFolded %q, normAction %q", s, got, want)
		}
	}
}

func TestNoLoopsRuns(t *testing.T) {
	for _, tc := range []struct {
		actions []string
		loop    bool
	}{
		{[]string{"Search[A]", "search[ a]", "Lookup[b]", "Search[A]", "Finish[x]"}, false},
		{[]string{"Search[A]", "Search[A]", "Lookup[b]", "LOOKUP[b]", "lookup[b] ", "Finish[x]"}, true},
		{[]string{"Search[A]", "Search[A]", "Search[A]"}, true},
		{[]string{"Search[" + strings.Repeat("x", 100) + "]", "Search[" + strings.Repeat("x", 100) + "]", "Finish[y]"}, false},
	} {
		ep := episodetest.Episode("e", "q", tc.actions...)
		if ok, _ := (noLoopsRule{}).Keep(&ep); ok == tc.loop {
			t.Errorf("%v: kept %v, want loop %v", tc.actions, ok, tc.loop)
		}
	}
}
