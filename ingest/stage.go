package ingest

import (
	"context"
	"os"
	"time"

	"github.com/reactgen/reactgen/pipeline"
)

// Stage is the import stage of a run: a source of episodes, in place of generate. It
// reads Files in Options.Format into the run's episode log.
type Stage struct {
	Options Options
	Files   []string
}

var _ pipeline.Stage = Stage{}

// Name implements pipeline.Stage.
func (Stage) Name() string { return pipeline.StageImport }

// Pin hashes the files the stage reads (and the gold file): the run's result keys and
// the inputs its manifest lists. A file that cannot be read is a *pipeline.InputError.
func (s Stage) Pin() (map[string]string, []pipeline.Input, error) {
	prov := DefaultProvenance(s.Options.Format, s.Files)
	if s.Options.Provenance.Source != "" {
		prov.Source = s.Options.Provenance.Source
	}
	if s.Options.Provenance.Model != "" {
		prov.Model = s.Options.Provenance.Model
	}
	results := map[string]string{"task.name": s.Options.Task}
	pipeline.Imported{Format: s.Options.Format, Source: prov.Source, Model: prov.Model}.Record(results)
	var inputs []pipeline.Input
	files := append([]string(nil), s.Files...)
	for i, f := range append(files, s.Options.Gold) {
		if f == "" {
			continue
		}
		role := "import"
		if i == len(files) {
			role = "gold"
		}
		in, err := pipeline.DescribeInput(role, f)
		if err != nil {
			return nil, nil, &pipeline.InputError{Err: err}
		}
		inputs = append(inputs, in)
		results[role+":"+f] = in.SHA256
	}
	return results, inputs, nil
}

// Run implements pipeline.Stage. A record that cannot be imported is a
// *pipeline.InputError (unless Options.SkipBad).
func (s Stage) Run(ctx context.Context, r *pipeline.Run) (pipeline.Counts, error) {
	// The directory holds no run (an import needs a new one): an episode log there is
	// what an import that failed on bad input left, and would be appended to.
	path := r.Dir.File(pipeline.EpisodesFile)
	if r.Fresh() {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	log, _, _, err := pipeline.OpenEpisodeLog(path, 1000, time.Second)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	rep, err := Import(ctx, s.Options, s.Files, func(ep pipeline.Episode) error {
		ep.RunID = r.Manifest.RunID
		return log.Write(ctx, ep)
	})
	if err != nil {
		return nil, &pipeline.InputError{Err: err}
	}
	return pipeline.Counts{"read": rep.Read, "imported": rep.Imported, "skipped": rep.Skipped, "correct": rep.Correct}, nil
}
