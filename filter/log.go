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
// reads the survivors' lines again by their offsets, decoding nothing.
func (c *Chain) RunLog(ctx context.Context, path string,
	keep func(line []byte) error, reject func(line []byte, rejects []pipeline.Reject) error) (Stats, error) {
	x, err := pipeline.OpenLogIndex(path)
	if err != nil {
		return Stats{}, fmt.Errorf("filter: %w", err)
	}
	defer x.Close()
	var again func() iter.Seq2[pipeline.EpisodeLine, error]
	if len(c.groups) > 0 {
		again = func() iter.Seq2[pipeline.EpisodeLine, error] { return x.Lines(nil) }
	}
	return c.RunLines(ctx, x.Lines(c.decoder()), again, keep, reject)
}
