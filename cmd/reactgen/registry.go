package main

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/mediawiki"
	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/filter"
	"github.com/reactgen/reactgen/generate"
	"github.com/reactgen/reactgen/generate/expert"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/internal/levenshtein"
	"github.com/reactgen/reactgen/pipeline"
)

// registry is every name a config may use, with what implements it: policies, methods,
// environment backends, filter rules and token counters, export formats and views. It
// is built in one place, newRegistry, and config.Load resolves a config against it, so
// that an unknown name exits 2 before any input is read, any index is built or any
// request is sent.
type registry struct {
	policies map[string]generate.Policy
	backends map[string]generate.Backend
	methods  []string
	rules    []string
	formats  []string
	views    []string
}

func newRegistry() *registry {
	return &registry{
		policies: map[string]generate.Policy{
			"llm": {Model: true},
			"expert": {Actors: func(c env.Corpus) generate.ActorFactory {
				ex := expert.New(c)
				return func(pipeline.Question, int, int64) generate.Actor { return ex }
			}},
		},
		backends: map[string]generate.Backend{
			"local": {
				Check: func(cfg *pipeline.Config) error {
					if err := index.Recover(cfg.IndexDir(), nil); err != nil {
						return &pipeline.ConfigError{Key: "corpus.index", Message: err.Error()}
					}
					if cfg.Corpus.Index != "" && index.Exists(cfg.Corpus.Index) {
						return nil
					}
					if cfg.Corpus.Path == "" {
						return &pipeline.ConfigError{Key: "corpus.index", Message: fmt.Sprintf("no index at %s and no corpus.path to build one from", cfg.Corpus.Index)}
					}
					if _, err := index.Sources(cfg.Corpus.Path); err != nil {
						return &pipeline.ConfigError{Key: "corpus.path", Message: fmt.Sprintf("cannot read corpus: %v", err)}
					}
					return nil
				},
				Identity: func(cfg *pipeline.Config) (string, []pipeline.Input, error) {
					return index.Identity(cfg.IndexDir(), cfg.Corpus.Path)
				},
				Stage: func(cfg *pipeline.Config, log *slog.Logger) pipeline.Stage {
					return index.Stage{Corpus: cfg.Corpus.Path, Dir: cfg.IndexDir(), SkipBad: cfg.Task.SkipBad, Logger: log}
				},
				Open: func(cfg *pipeline.Config, id string) (env.Corpus, func(), error) {
					ix, err := index.OpenPinned(cfg.IndexDir(), id)
					if err != nil {
						return nil, nil, &pipeline.ConfigError{Key: "corpus.index", Message: err.Error()}
					}
					return ix, func() { ix.Close() }, nil
				},
			},
			"mediawiki": {
				Check: func(*pipeline.Config) error { return nil },
				Identity: func(cfg *pipeline.Config) (string, []pipeline.Input, error) {
					return "mediawiki:" + pipeline.RedactURL(cfg.Env.MediaWikiURL), nil, nil
				},
				Open: func(cfg *pipeline.Config, _ string) (env.Corpus, func(), error) {
					e := cfg.Env
					cache := e.CacheDir
					if cache == "" {
						cache = (pipeline.RunDir{Path: cfg.Run.Out}).File(pipeline.WikiCacheDir)
					}
					c, err := mediawiki.New(mediawiki.Options{Endpoint: e.MediaWikiURL, UserAgent: e.UserAgent,
						RequestsPerSecond: e.RequestsPerSecond, Timeout: e.Timeout, MaxRetries: cfg.LLM.MaxRetries, CacheDir: cache})
					if err != nil {
						return nil, nil, &pipeline.ConfigError{Key: "env.mediawiki_url", Message: err.Error()}
					}
					return c, func() {}, nil
				},
			},
		},
		methods: generate.Methods,
		rules:   filter.RuleNames,
		formats: export.Formats(),
		views:   export.Views,
	}
}

// check resolves every name cfg uses. An unknown one is a *pipeline.ConfigError that
// names the key and the nearest valid name.
func (r *registry) check(cfg *pipeline.Config) error {
	names := []struct {
		key   string
		names []string
		valid []string
	}{
		{"generate.policy", []string{cfg.Generate.Policy}, slices.Sorted(maps.Keys(r.policies))},
		{"generate.method", []string{cfg.Generate.Method}, r.methods},
		{"env.backend", []string{cfg.Env.Backend}, slices.Sorted(maps.Keys(r.backends))},
		{"filter.rules", cfg.Filter.Rules, r.rules},
		{"export.formats", cfg.Export.Formats, r.formats},
		{"export.views", cfg.Export.Views, r.views},
	}
	for _, n := range names {
		seen := map[string]bool{}
		for _, name := range n.names {
			if !slices.Contains(n.valid, name) {
				return &pipeline.ConfigError{Key: n.key, Message: fmt.Sprintf("%q is not one of %s; did you mean %q?",
					name, strings.Join(n.valid, ", "), nearest(name, n.valid))}
			}
			if seen[name] {
				return &pipeline.ConfigError{Key: n.key, Message: fmt.Sprintf("%q is named twice", name)}
			}
			seen[name] = true
		}
	}
	for _, t := range []struct{ key, name string }{{"export.tokenizer", cfg.Export.Tokenizer}, {"filter.token_counter", cfg.Filter.TokenCounter}} {
		if t.name == "" || bpe.LooksLikePath(t.name) {
			continue // a tokenizer.json is read when its stage starts
		}
		if _, err := bpe.Open(t.name); err != nil {
			return &pipeline.ConfigError{Key: t.key, Message: fmt.Sprintf("%v; did you mean %q?", err, nearest(t.name, bpe.Names))}
		}
	}
	if slices.Contains(cfg.Filter.Rules, "decontaminate") && len(cfg.Filter.EvalFiles) == 0 {
		return &pipeline.ConfigError{Key: "filter.eval_files", Message: filter.ErrNoEvalFiles.Error()}
	}
	return nil
}

// nearest is the valid name closest to a mistyped one.
func nearest(s string, valid []string) string {
	best, _ := levenshtein.Nearest(s, valid)
	return best
}
