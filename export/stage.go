package export

import (
	"context"
	"iter"
	"log/slog"
	"path/filepath"

	"github.com/reactgen/reactgen/pipeline"
)

// Stage is the export stage of a run: kept.jsonl (and rejected.jsonl, for pairs) into
// the training files and the dataset card under export/, listed in the manifest.
type Stage struct {
	Config pipeline.ExportConfig
	// Card holds what the config says of the run (model, task, method); the run id, the
	// hashes and the run summary are filled in from the run.
	Card   CardInfo
	Logger *slog.Logger
}

var _ pipeline.Stage = Stage{}

// StageFor is the export stage of a run's config, with what the card says of the run;
// model is the policy the card names (llm.model, or a policy that sends no request).
func StageFor(cfg *pipeline.Config, model string, log *slog.Logger) Stage {
	fc := cfg.FilterConfig()
	return Stage{Config: cfg.Export, Card: CardInfo{Model: model, Task: cfg.Task.Name, Method: cfg.Generate.Method,
		Generate: &cfg.Generate, LLM: &cfg.LLM, Filter: &fc}, Logger: log}
}

// Name implements pipeline.Stage.
func (Stage) Name() string { return pipeline.StageExport }

// Run implements pipeline.Stage.
func (s Stage) Run(ctx context.Context, r *pipeline.Run) (pipeline.Counts, error) {
	sum, err := pipeline.Summarize(r.Dir.Path, r.Manifest)
	if err != nil {
		return nil, err
	}
	card := s.Card
	card.RunID = r.Manifest.RunID
	card.PromptHash = r.Manifest.Results["generate.exemplars"]
	card.CorpusHash = pipeline.RedactURL(r.Manifest.Results["corpus"])
	card.Summary = *sum
	if r.Manifest.Results["import.format"] != "" {
		// Imported: the card names the corpus and its model, not the importing config's.
		card.Source = r.Manifest.Results["import.source"]
		card.Model = r.Manifest.Results["import.model"]
		if card.Source == "" {
			card.Source = "an imported " + r.Manifest.Results["import.format"] + " corpus"
		}
		if card.Model == "" {
			card.Model = "an unknown model"
		}
		card.Generate, card.LLM = nil, nil
	}
	res, err := Run(ctx, RunOptions{
		Config: s.Config, Dir: r.Dir.File(pipeline.ExportDir),
		Kept: func() iter.Seq2[pipeline.Episode, error] { return pipeline.ReadKept(r.Dir.File(pipeline.KeptFile)) },
		Rejected: func() iter.Seq2[pipeline.Rejected, error] {
			return pipeline.ReadRejected(r.Dir.File(pipeline.RejectedFile))
		},
		Card: card, Logger: s.Logger,
	})
	if err != nil {
		return nil, err
	}
	outs := make([]pipeline.Output, 0, len(res.Files))
	for _, f := range res.Files {
		outs = append(outs, pipeline.Output{Path: filepath.ToSlash(filepath.Join(pipeline.ExportDir, f.Path)), Stage: pipeline.StageExport,
			Format: f.Format, Split: f.Split, Rows: f.Rows, Bytes: f.Bytes, SHA256: f.SHA256})
	}
	r.Manifest.SetOutputs(pipeline.StageExport, outs)
	counts := pipeline.Counts{"examples": res.Examples, "files": len(res.Files), "pairs": res.Pairs}
	for split, n := range res.Splits {
		counts["split:"+split] = n
	}
	for reason, n := range res.Dropped {
		counts["dropped:"+reason] = n
	}
	for view, n := range res.ByView {
		counts["view:"+view] = n
	}
	for view, n := range res.Outside {
		counts["outside:"+view] = n
	}
	for view, n := range res.Masked {
		counts["masked_turns:"+view] = n
	}
	return counts, nil
}
