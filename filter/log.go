package filter

import (
	"context"
	"fmt"
	"iter"

	"github.com/reactgen/reactgen/pipeline"
)

// RunLog is RunLines over the episode log at path, as the filter stage runs it. The log
// is scanned once (pipeline.LogIndex); the first pass decodes of each record what the
// rules read (decodeLean, unless a rule reads text) and, with group rules, the second
// reads only the survivors' lines again (LogIndex.LinesOf), decoding nothing.
func (c *Chain) RunLog(ctx context.Context, path string,
	keep func(line []byte) error, reject func(line []byte, rejects []pipeline.Reject) error) (Stats, error) {
	x, err := pipeline.OpenLogIndex(path)
	if err != nil {
		return Stats{}, fmt.Errorf("filter: %w", err)
	}
	defer x.Close()
	var again rereader
	if len(c.groups) > 0 {
		again = func(cands []Candidate) iter.Seq2[record, error] {
			ids := make([]string, len(cands))
			for i, cd := range cands {
				ids[i] = cd.ID
			}
			return lineRecords(x.LinesOf(ids, nil), false)
		}
	}
	return c.runLines(ctx, x.Lines(c.decoder()), again, keep, reject)
}
