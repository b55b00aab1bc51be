package index

import (
	"fmt"
	"log/slog"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/pipeline"
)

// The local backend of a config (env.backend: local): the functions below are what the
// command line's registry hands generate and serve-env for it. Each reads corpus.path
// and corpus.index (cfg.IndexDir) and reports a problem as a *pipeline.ConfigError on
// the key to fix.

// CheckConfig fails on an index left half-built that cannot be recovered, and on a
// missing index whose corpus cannot be read, before the run directory is touched.
func CheckConfig(cfg *pipeline.Config) error {
	if err := Recover(cfg.IndexDir(), nil); err != nil {
		return &pipeline.ConfigError{Key: "corpus.index", Message: err.Error()}
	}
	if cfg.Corpus.Index != "" && Exists(cfg.Corpus.Index) {
		return nil
	}
	if cfg.Corpus.Path == "" {
		return &pipeline.ConfigError{Key: "corpus.index", Message: fmt.Sprintf("no index at %s and no corpus.path to build one from", cfg.Corpus.Index)}
	}
	if _, err := Sources(cfg.Corpus.Path); err != nil {
		return &pipeline.ConfigError{Key: "corpus.path", Message: fmt.Sprintf("cannot read corpus: %v", err)}
	}
	return nil
}

// IdentityFor is the identity a run pins for the config's index, and its inputs.
func IdentityFor(cfg *pipeline.Config) (string, []pipeline.Input, error) {
	return Identity(cfg.IndexDir(), cfg.Corpus.Path)
}

// StageFor is the config's index stage: it builds the index when it is missing.
func StageFor(cfg *pipeline.Config, log *slog.Logger) pipeline.Stage {
	return Stage{Corpus: cfg.Corpus.Path, Dir: cfg.IndexDir(), SkipBad: cfg.Task.SkipBad, Logger: log}
}

// OpenFor opens the config's index, refusing one whose identity is not id (rebuilt
// since the run pinned it); the func closes it.
func OpenFor(cfg *pipeline.Config, id string) (env.Corpus, func(), error) {
	ix, err := OpenPinned(cfg.IndexDir(), id)
	if err != nil {
		return nil, nil, &pipeline.ConfigError{Key: "corpus.index", Message: err.Error()}
	}
	return ix, func() { ix.Close() }, nil
}
