package filter

import (
	"context"
	"iter"

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
	pipeline.RemoveStale(r.Dir.Path, []string{pipeline.KeptFile, pipeline.RejectedFile}, nil)
	kept, err := pipeline.CreateJSONL(r.Dir.File(pipeline.KeptFile))
	if err != nil {
		return nil, err
	}
	defer kept.Abort()
	rejected, err := pipeline.CreateJSONL(r.Dir.File(pipeline.RejectedFile))
	if err != nil {
		return nil, err
	}
	defer rejected.Abort()
	stats, err := chain.RunLines(ctx, pipeline.ReadEpisodeLines(episodes, true),
		func() iter.Seq2[pipeline.EpisodeLine, error] { return pipeline.ReadEpisodeLines(episodes, false) },
		kept.WriteLine, rejected.WriteRejected)
	if err != nil {
		return nil, err
	}
	if err := kept.Commit(); err != nil {
		return nil, err
	}
	if err := rejected.Commit(); err != nil {
		return nil, err
	}
	var outs []pipeline.Output
	for _, f := range []struct {
		name string
		rows int
	}{{pipeline.KeptFile, kept.Rows}, {pipeline.RejectedFile, rejected.Rows}} {
		o, err := pipeline.DescribeOutput(r.Dir.Path, r.Dir.File(f.name), pipeline.StageFilter, "jsonl", "", f.rows)
		if err != nil {
			return nil, err
		}
		outs = append(outs, o)
	}
	r.Manifest.SetOutputs(pipeline.StageFilter, outs)
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
