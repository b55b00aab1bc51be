package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/data"
	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/filter"
	"github.com/reactgen/reactgen/generate"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/env"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/pipeline"
)

// stageOptions are the flags shared by the stage commands.
type stageOptions struct {
	flags    configFlags
	forceNew bool
	skipBad  bool
	shard    string // --shard i/n, for the commands that generate
}

func (o *stageOptions) register(cmd *cobra.Command) {
	o.flags.register(cmd, false)
	cmd.Flags().BoolVar(&o.forceNew, "force-new", false, "start the run directory afresh when its settings differ (old files are moved aside)")
	cmd.Flags().BoolVar(&o.skipBad, "skip-bad", false, "skip malformed task and corpus records and count them (task.skip_bad)")
}

// registerShard adds --shard to a command that generates.
func (o *stageOptions) registerShard(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.shard, "shard", "", "generate shard i of n of the questions, e.g. 0/4 (task.shard; in a Kubernetes Indexed Job, JOB_COMPLETION_INDEX and JOB_COMPLETIONS)")
}

// shardOf is the shard a generating command runs: --shard, else task.shard, else a
// Kubernetes Indexed Job's JOB_COMPLETION_INDEX of JOB_COMPLETIONS, else none.
func (a *app) shardOf(o stageOptions, cfg *pipeline.Config) (string, error) {
	switch {
	case o.shard != "":
		if _, err := pipeline.ParseShard(o.shard); err != nil {
			return "", usagef("--shard %w", err)
		}
		return o.shard, nil
	case cfg.Task.Shard != "":
		return cfg.Task.Shard, nil
	}
	idx, n := a.getenv("JOB_COMPLETION_INDEX"), a.getenv("JOB_COMPLETIONS")
	switch {
	case idx == "":
		return "", nil
	case n == "":
		return "", usagef("JOB_COMPLETION_INDEX is %s but JOB_COMPLETIONS is not set: set it to the job's completions (see docs/scale.md), or pass --shard", idx)
	}
	s := idx + "/" + n
	if _, err := pipeline.ParseShard(s); err != nil {
		return "", usagef("JOB_COMPLETION_INDEX / JOB_COMPLETIONS: %w", err)
	}
	return s, nil
}

// runStages builds the named stages from the config and hands them to pipeline.Execute,
// then prints where the run's files are. With generate, the run is started or resumed;
// without, filter and export work on the run that is there.
func (a *app) runStages(ctx context.Context, o stageOptions, command string, names ...string) error {
	ld, err := a.load(&o.flags, !slices.Contains(names, pipeline.StageGenerate))
	if err != nil {
		return err
	}
	cfg := ld.Config
	if o.skipBad {
		cfg.Task.SkipBad = true
	}
	red := cfg.Redacted()
	spec := pipeline.Spec{Dir: cfg.Run.Out, Command: command, Mode: pipeline.Existing, Version: version, Logger: a.log,
		Config: map[string]any{"filter": red["filter"], "export": red["export"]}}
	var stages []pipeline.Stage
	if slices.Contains(names, pipeline.StageGenerate) {
		if cfg.Task.Shard, err = a.shardOf(o, &cfg); err != nil {
			return err
		}
		if spec, stages, err = a.generation(&cfg, o.forceNew, command); err != nil {
			return err
		}
		spec.ConfigFile = ld.File
	} else if err := checkEvalFiles(&cfg); err != nil {
		return err
	}
	if slices.Contains(names, pipeline.StageFilter) {
		stages = append(stages, filterStage(&cfg))
	}
	if slices.Contains(names, pipeline.StageExport) {
		stages = append(stages, a.exportStage(&cfg))
	}
	r, err := pipeline.Execute(ctx, spec, stages...)
	if err != nil {
		return err
	}
	r.Report(a.stdout)
	return nil
}

// generation reads and checks everything a generate run reads (task file, corpus,
// exemplars, evaluation files) before the run directory is touched, and builds the
// spec of the run and its source stages: the backend's (the local index) and generate.
func (a *app) generation(cfg *pipeline.Config, forceNew bool, command string) (pipeline.Spec, []pipeline.Stage, error) {
	pol, be := a.reg.policies[cfg.Generate.Policy], a.reg.backends[cfg.Env.Backend]
	if _, err := os.Stat(cfg.Task.Path); err != nil {
		return pipeline.Spec{}, nil, &pipeline.ConfigError{Key: "task.path", Message: fmt.Sprintf("cannot read task file: %v", err)}
	}
	if err := be.check(cfg); err != nil {
		return pipeline.Spec{}, nil, err
	}
	servers := []pipeline.EndpointConfig{{BaseURL: cfg.LLM.BaseURL, APIKeyEnv: cfg.LLM.APIKeyEnv}}
	if eps := cfg.LLM.ResolvedEndpoints(); eps != nil {
		servers = eps
	}
	for i, e := range servers {
		if pol.model && a.getenv(e.APIKeyEnv) == "" && strings.Contains(e.BaseURL, "api.openai.com") {
			key := "llm.api_key_env"
			if len(cfg.LLM.Endpoints) > 0 {
				key = fmt.Sprintf("llm.endpoints[%d].api_key_env", i)
			}
			return pipeline.Spec{}, nil, &pipeline.ConfigError{Key: key, Message: fmt.Sprintf(
				"the environment variable %s is empty, and %s needs a key (export %s=..., or point llm.base_url / OPENAI_BASE_URL at your own server)",
				e.APIKeyEnv, pipeline.RedactURL(e.BaseURL), e.APIKeyEnv)}
		}
	}
	prompts, cotPrompts, promptID, err := prompt.Configured(cfg.Generate, cfg.Task.Name, data.FS)
	if err != nil {
		return pipeline.Spec{}, nil, err
	}
	if !pol.model {
		promptID = cfg.Generate.Policy // the expert reads no prompt; the set only shapes layouts it never sends
	} else if cfg.Generate.Prompting == prompt.PromptingTrained {
		promptID = prompt.PromptingTrained // no exemplars are sent; the layout's keys pin what is
	}
	taskIn, err := pipeline.DescribeInput("task", cfg.Task.Path)
	if err != nil {
		return pipeline.Spec{}, nil, &pipeline.ConfigError{Key: "task.path", Message: err.Error()}
	}
	questions, report, err := dataset.Load(cfg.Task.Path, dataset.Options{Task: cfg.Task.Name, Format: cfg.Task.Format,
		SkipBad: cfg.Task.SkipBad, Limit: cfg.Task.Limit, Offset: cfg.Task.Offset})
	if err != nil {
		return pipeline.Spec{}, nil, &pipeline.InputError{Err: err}
	}
	if report.Skipped > 0 {
		a.log.Warn("skipped malformed task records", "file", cfg.Task.Path, "skipped", report.Skipped)
	}
	if shard, _ := pipeline.ParseShard(cfg.Task.Shard); shard.Count > 0 {
		all := len(questions)
		questions = shard.Select(questions, cfg.Generate.Seed)
		a.log.Info("shard", "shard", shard.String(), "questions", len(questions), "of", all)
	}
	if cfg.LLM.Mode == "batch" && pol.model && cfg.Generate.Concurrency < min(len(questions), cfg.LLM.Batch.MaxLines) {
		a.log.Warn("batch mode with fewer episodes in flight than questions: the episodes that start later join later waves; set generate.concurrency to the number of questions (up to llm.batch.max_lines) for one wave per step",
			"generate.concurrency", cfg.Generate.Concurrency, "questions", len(questions))
	}
	var prev *pipeline.Previous
	if cfg.Star.Previous != "" {
		// A STaR round: only the questions the earlier rounds did not solve.
		if prev, err = pipeline.ReadPrevious(cfg.Star.Previous); err != nil {
			return pipeline.Spec{}, nil, err
		}
		open := questions[:0:0]
		for _, q := range questions {
			if !prev.Solved[q.ID] {
				open = append(open, q)
			}
		}
		a.log.Info("STaR round", "round", prev.Round+1, "previous", cfg.Star.Previous, "solved_before", len(prev.Solved), "to_ask", len(open))
		questions = open
	}
	corpusID, corpusIns, err := be.identity(cfg)
	if err != nil {
		return pipeline.Spec{}, nil, err
	}
	inputs := append([]pipeline.Input{taskIn}, corpusIns...)
	if pol.model && cfg.Generate.Prompting != prompt.PromptingTrained {
		in, err := prompt.Input(cfg.Generate.Exemplars, cfg.Task.Name, data.FS)
		if err != nil {
			return pipeline.Spec{}, nil, &pipeline.ConfigError{Key: "generate.exemplars", Message: err.Error()}
		}
		inputs = append(inputs, in)
		if ref := cfg.Generate.CoTExemplars; ref != "" {
			in, err := prompt.Input(ref, cfg.Task.Name, data.FS)
			if err != nil {
				return pipeline.Spec{}, nil, &pipeline.ConfigError{Key: "generate.cot_exemplars", Message: err.Error()}
			}
			in.Role = "cot-exemplars"
			inputs = append(inputs, in)
		}
	}
	for _, f := range cfg.Filter.EvalFiles {
		in, err := pipeline.DescribeInput("eval", f)
		if err != nil {
			return pipeline.Spec{}, nil, &pipeline.ConfigError{Key: "filter.eval_files", Message: err.Error()}
		}
		inputs = append(inputs, in)
	}
	spec := pipeline.Spec{Dir: cfg.Run.Out, Command: command, Mode: pipeline.Resume, Version: version, Config: cfg.Redacted(),
		Results: cfg.ResultKeys(taskIn.SHA256, corpusID, promptID), Inputs: inputs, RunID: cfg.Run.ID, ForceNew: forceNew, Logger: a.log}

	gen := &generate.Stage{Config: cfg.Generate, LLM: cfg.LLM, RunConfig: cfg.Run, Questions: questions, Prompts: prompts, CoTPrompts: cotPrompts,
		Env:    env.OptionsFor(cfg.Task.Name, cfg.Env),
		Corpus: func() (env.Corpus, func(), error) { return be.open(cfg, corpusID) }, Actors: pol.actors, Progress: a.stderr, Logger: a.log,
		System: cfg.Export.System}
	if pol.model {
		gen.Client = func(ctx context.Context, cacheDir string) (llm.Clients, error) {
			return llm.NewClient(ctx, llm.Options{Config: cfg.LLM, Getenv: a.getenv, CacheDir: cacheDir,
				BatchDir: filepath.Join(cfg.Run.Out, pipeline.BatchDir), Logger: a.log})
		}
	}
	// The target counts what the filter will keep, and solved questions get no further
	// attempt: the run's own filter judges each episode as it is written.
	chain, err := filter.New(filterStage(cfg).Config, cfg.Task.Name, filter.Options{})
	if err != nil {
		if !pipeline.IsBadInput(err) {
			err = &pipeline.InputError{Err: err} // an evaluation file that cannot be read
		}
		return pipeline.Spec{}, nil, err
	}
	gen.Tally = chain.Tally()
	stages := []pipeline.Stage{gen}
	if prev != nil {
		spec.Inputs = append(spec.Inputs, prev.Input)
		spec.Results["star.previous"] = prev.Input.SHA256
		gen.Round = prev.Round + 1
		stages = append(stages, pipeline.RoundStage{Previous: prev, RunConfig: cfg.Run})
	}
	if be.stage != nil {
		stages = append(stages, be.stage(a, cfg))
	}
	return spec, stages, nil
}

// filterStage is the filter stage of the config; its token counter defaults to the
// export's tokenizer, so a run counts tokens one way.
func filterStage(cfg *pipeline.Config) filter.Stage {
	fc := cfg.Filter
	if fc.TokenCounter == "" {
		fc.TokenCounter = cfg.Export.Tokenizer
	}
	return filter.Stage{Config: fc, Task: cfg.Task.Name}
}

// exportStage is the export stage of the config, with what the card says of the run.
func (a *app) exportStage(cfg *pipeline.Config) export.Stage {
	model := cfg.LLM.Model
	if !a.reg.policies[cfg.Generate.Policy].model {
		model = cfg.Generate.Policy
	}
	fc := filterStage(cfg).Config
	return export.Stage{Config: cfg.Export, Card: export.CardInfo{Model: model, Task: cfg.Task.Name, Method: cfg.Generate.Method,
		Generate: &cfg.Generate, LLM: &cfg.LLM, Filter: &fc}, Logger: a.log}
}
