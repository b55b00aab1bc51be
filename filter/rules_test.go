package filter

import (
	"hash/fnv"
	"strings"
	"testing"
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
