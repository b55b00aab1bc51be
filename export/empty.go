package export

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/reactgen/reactgen/pipeline"
)

// ErrNothingToExport is the export of a run with no kept episode, or whose kept episodes
// made no example: a training set of zero rows is a failed run, not a result.
var ErrNothingToExport = errors.New("nothing to export")

// nothingKept explains a run whose filter kept no episode: how many it judged and the
// reasons it rejected them for, most frequent first. nil when some episode was kept.
func nothingKept(sum *pipeline.Summary) error {
	switch {
	case sum.Kept > 0:
		return nil
	case sum.Episodes == 0:
		return fmt.Errorf("%w: the run has no episodes; run `reactgen run` or `reactgen generate` first", ErrNothingToExport)
	case sum.Rejected == 0:
		return fmt.Errorf("%w: the run has %d episodes but no filter verdicts; run `reactgen filter` first", ErrNothingToExport, sum.Episodes)
	}
	return fmt.Errorf("%w: the filter kept 0 of %d episodes (rejected for %s); see `reactgen inspect --rejected`, or loosen filter.rules",
		ErrNothingToExport, sum.Rejected, topCounts(sum.RejectReasons, 4))
}

// noExamples explains an export whose kept episodes all stayed out of the examples.
func noExamples(kept int, res Result) error {
	if res.Examples > 0 {
		return nil
	}
	why := []string{}
	if len(res.Dropped) > 0 {
		why = append(why, "left out: "+topCounts(res.Dropped, 4))
	}
	if len(res.Outside) > 0 {
		why = append(why, "outside the views (export.views): "+topCounts(res.Outside, 4))
	}
	if len(why) == 0 {
		why = append(why, "no view renders them")
	}
	return fmt.Errorf("%w: none of the %d kept episodes made an example (%s)", ErrNothingToExport, kept, strings.Join(why, "; "))
}

// topCounts formats the n largest counts, "a 3, b 1", ties by name.
func topCounts(m map[string]int, n int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, min(n, len(keys)))
	for i, k := range keys {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
