package main

import (
	"maps"
	"slices"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/mediawiki"
	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/filter"
	"github.com/reactgen/reactgen/generate"
	"github.com/reactgen/reactgen/generate/expert"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/pipeline"
	"github.com/reactgen/reactgen/pipeline/config"
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
			"local":     {Check: index.CheckConfig, Identity: index.IdentityFor, Stage: index.StageFor, Open: index.OpenFor},
			"mediawiki": {Check: func(*pipeline.Config) error { return nil }, Identity: mediawiki.IdentityFor, Open: mediawiki.OpenFor},
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
	names := config.Names{Policies: slices.Sorted(maps.Keys(r.policies)), Methods: r.methods,
		Backends: slices.Sorted(maps.Keys(r.backends)), Rules: r.rules, Formats: r.formats, Views: r.views}
	if err := names.Check(cfg); err != nil {
		return err
	}
	if slices.Contains(cfg.Filter.Rules, "decontaminate") && len(cfg.Filter.EvalFiles) == 0 {
		return &pipeline.ConfigError{Key: "filter.eval_files", Message: filter.ErrNoEvalFiles.Error()}
	}
	return nil
}
