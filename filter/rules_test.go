package filter

import (
	"hash/fnv"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
)

func TestWriteFoldedIgnoresCaseAndSpacing(t *testing.T) {
	sum := func(s string) uint64 {
		h := fnv.New64a()
		writeFolded(h, s)
		return h.Sum64()
	}
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
