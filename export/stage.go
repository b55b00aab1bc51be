package export

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/reactgen/reactgen/internal/redact"
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
	keptSHA, err := wholeFilterResult(r)
	if err != nil {
		return nil, err
	}
	sum, err := pipeline.Summarize(r.Dir.Path, r.Manifest, pipeline.SummaryOptions{})
	if err != nil {
		return nil, err
	}
	if err := nothingKept(sum); err != nil {
		return nil, err
	}
	dir := r.Dir.File(pipeline.ExportDir)
	res, err := Run(ctx, RunOptions{
		Config: s.Config, Dir: dir,
		Kept: func() iter.Seq2[pipeline.Episode, error] { return pipeline.ReadKept(r.Dir.File(pipeline.KeptFile)) },
		Rejected: func() iter.Seq2[pipeline.Rejected, error] {
			return pipeline.ReadRejected(r.Dir.File(pipeline.RejectedFile))
		},
		Card: s.card(r, sum), Logger: s.Logger,
		Commit: commitExport(r, dir, sum.Kept, keptSHA),
	})
	if err != nil {
		return nil, err
	}
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

// card is what the dataset card says of run r: the stage's Card with the run's id,
// hashes and summary, and an imported corpus's source and model.
func (s Stage) card(r *pipeline.Run, sum *pipeline.Summary) CardInfo {
	card := s.Card
	card.RunID = r.Manifest.RunID
	card.PromptHash = r.Manifest.Results["generate.exemplars"]
	card.CorpusHash = redact.URL(r.Manifest.Results["corpus"])
	card.Summary = *sum
	if im, ok := pipeline.ImportedOf(r.Manifest.Results); ok {
		// Imported: the card names the corpus and its model, not the importing config's.
		card.Source = im.Source
		card.Model = im.Model
		if card.Source == "" {
			card.Source = "an imported " + im.Format + " corpus"
		}
		if card.Model == "" {
			card.Model = "an unknown model"
		}
		card.Generate, card.LLM = nil, nil
	}
	return card
}

// commitExport is the export's Commit into run r, whose filter kept kept episodes in the
// kept.jsonl of keptSHA. One generation at a time: export/ (dir) is put aside, the
// staged folder takes its place and the old one is removed, as one journaled commit that
// also records the files (and the kept.jsonl they came from) in the manifest.
func commitExport(r *pipeline.Run, dir string, kept int, keptSHA string) func(staged string, res Result) error {
	return func(staged string, res Result) error {
		// An export of no example replaces nothing: it fails, and the previous one stays.
		if err := noExamples(kept, res); err != nil {
			return err
		}
		outs := make([]pipeline.Output, 0, len(res.Files))
		for _, f := range res.Files {
			outs = append(outs, pipeline.Output{Path: filepath.ToSlash(filepath.Join(pipeline.ExportDir, f.Path)), Stage: pipeline.StageExport,
				Format: f.Format, Split: f.Split, Rows: f.Rows, Bytes: f.Bytes, SHA256: f.SHA256})
		}
		var moves []pipeline.Move
		var remove []string
		if _, err := os.Lstat(dir); err == nil {
			aside := filepath.Base(asideOf(dir, staged))
			moves = append(moves, pipeline.Move{From: pipeline.ExportDir, To: aside, Aside: true})
			remove = append(remove, aside)
		}
		moves = append(moves, pipeline.Move{From: filepath.Base(staged), To: pipeline.ExportDir})
		return r.Commit(pipeline.StageExport, moves, remove, outs, keptSHA)
	}
}

// wholeFilterResult checks that kept.jsonl and rejected.jsonl are the one filter result
// the manifest records (a commit a kill interrupted was completed when the run opened;
// this catches what is left: files of another run, of an older reactgen, or edited by
// hand) and returns kept.jsonl's sha256. The export refuses anything else.
func wholeFilterResult(r *pipeline.Run) (string, error) {
	keptSHA := ""
	for _, name := range []string{pipeline.KeptFile, pipeline.RejectedFile} {
		var rec *pipeline.Output
		for i, o := range r.Manifest.Outputs {
			if o.Stage == pipeline.StageFilter && o.Path == name {
				rec = &r.Manifest.Outputs[i]
			}
		}
		if rec == nil {
			return "", &pipeline.InputError{Err: fmt.Errorf("%s: the manifest records no filter result %s; run `reactgen filter` first", r.Dir.Path, name)}
		}
		fi, err := os.Stat(r.Dir.File(name))
		if err != nil {
			return "", &pipeline.InputError{Err: fmt.Errorf("the filter result is not whole: %w; run `reactgen filter` again", err)}
		}
		if fi.Size() != rec.Bytes {
			return "", &pipeline.InputError{Err: fmt.Errorf("the filter result is not whole: %s has %d bytes, the filter that wrote the manifest's result wrote %d; run `reactgen filter` again",
				r.Dir.File(name), fi.Size(), rec.Bytes)}
		}
		if name == pipeline.KeptFile {
			keptSHA = rec.SHA256
		}
	}
	return keptSHA, nil
}
