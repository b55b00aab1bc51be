package filter

import (
	"context"
	"path/filepath"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/pipeline"
)

// Stage is the filter stage of a run: the episode log into kept.jsonl and
// rejected.jsonl, listed in the manifest. The verdicts copy the log's lines: nothing is
// encoded again, and the second pass (for dedupe and balance) reads only ids and lines.
type Stage struct {
	Config pipeline.FilterConfig
	Task   string
}

var _ pipeline.Stage = Stage{}

// StageFor is the filter stage of a run's config.
func StageFor(cfg *pipeline.Config) Stage {
	return Stage{Config: cfg.FilterConfig(), Task: cfg.Task.Name}
}

// Name implements pipeline.Stage.
func (Stage) Name() string { return pipeline.StageFilter }

// Run implements pipeline.Stage.
func (s Stage) Run(ctx context.Context, r *pipeline.Run) (pipeline.Counts, error) {
	episodes := r.Dir.File(pipeline.EpisodesFile)
	chain, err := New(s.Config, s.Task, Options{})
	if err != nil {
		if !pipeline.IsBadInput(err) {
			err = &pipeline.InputError{Err: err} // an evaluation file that cannot be read
		}
		return nil, err
	}
	// What a killed filter left: its temporary kept and rejected files.
	atomicfile.RemoveStale(r.Dir.Path, []string{pipeline.KeptFile, pipeline.RejectedFile}, nil)
	// Both are hashed as they are written: the manifest's sha256 without reading the
	// files back (atomicfile.CreateHashed says why they are the bytes committed).
	kept, err := pipeline.CreateHashedJSONL(r.Dir.File(pipeline.KeptFile))
	if err != nil {
		return nil, err
	}
	defer kept.Abort()
	rejected, err := pipeline.CreateHashedJSONL(r.Dir.File(pipeline.RejectedFile))
	if err != nil {
		return nil, err
	}
	defer rejected.Abort()
	stats, err := chain.RunLog(ctx, episodes, kept.WriteLine, rejected.WriteRejected)
	if err != nil {
		return nil, err
	}
	// kept.jsonl and rejected.jsonl are one result: both are finished under their
	// temporary names, then moved into place as one commit (a kill between the moves is
	// completed by the next command), with their hashes in the manifest.
	var moves []pipeline.Move
	var outs []pipeline.Output
	for _, f := range []struct {
		name string
		w    *pipeline.JSONLWriter
	}{{pipeline.KeptFile, kept}, {pipeline.RejectedFile, rejected}} {
		tmp, err := f.w.Ready()
		if err != nil {
			return nil, err
		}
		n, sum, err := f.w.Digest()
		if err != nil {
			return nil, err
		}
		outs = append(outs, pipeline.Output{Path: f.name, Stage: pipeline.StageFilter, Format: "jsonl",
			Rows: f.w.Rows, Bytes: n, SHA256: sum}) // as DescribeOutput of the file
		moves = append(moves, pipeline.Move{From: filepath.Base(tmp), To: f.name})
	}
	if err := r.Commit(pipeline.StageFilter, moves, nil, outs, ""); err != nil {
		return nil, err
	}
	counts := pipeline.Counts{"in": stats.In, "kept": stats.Kept, "rejected": stats.Rejected}
	for rule, codes := range stats.ByRule {
		for code, n := range codes {
			counts["reject:"+rule+"/"+code] = n
		}
	}
	for code, n := range stats.Masked {
		counts["masked:"+code] = n
	}
	if stats.MaskedEpisodes > 0 {
		counts["masked_episodes"] = stats.MaskedEpisodes
	}
	return counts, nil
}
