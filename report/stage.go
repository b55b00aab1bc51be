package report

import (
	"context"
	"encoding/json"
	"io"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/pipeline"
)

// EvalFile is where the score stage writes a run's summary.
const EvalFile = "eval.json"

// Stage is the score stage of `reactgen eval`: it summarizes the run's episodes
// (Summarize) into eval.json, recorded among the run's outputs.
type Stage struct{}

var _ pipeline.Stage = Stage{}

// Name implements pipeline.Stage.
func (Stage) Name() string { return pipeline.StageScore }

// Run implements pipeline.Stage.
func (Stage) Run(ctx context.Context, r *pipeline.Run) (pipeline.Counts, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The manifest on disk is the one this run wrote when the stage started.
	s, err := Summarize(r.Dir.Path)
	if err != nil {
		return nil, err
	}
	path := r.Dir.File(EvalFile)
	atomicfile.RemoveStale(r.Dir.Path, []string{EvalFile}, nil) // what a killed eval left
	if err := atomicfile.WriteFile(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}); err != nil {
		return nil, err
	}
	out, err := pipeline.DescribeOutput(r.Dir.Path, path, pipeline.StageScore, "json", "", 1)
	if err != nil {
		return nil, err
	}
	r.Manifest.SetOutputs(pipeline.StageScore, []pipeline.Output{out})
	return pipeline.Counts{"n": s.N, "correct": s.Correct, "unfinished": s.Unfinished}, nil
}
