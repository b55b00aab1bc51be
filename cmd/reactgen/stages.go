package main

import (
	"context"
	"slices"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/data"
	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/filter"
	"github.com/reactgen/reactgen/generate"
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
		if cfg.Task.Shard, err = pipeline.ShardOf(o.shard, &cfg, a.getenv); err != nil {
			return err
		}
		if spec, stages, err = a.generation(&cfg, o.forceNew, command); err != nil {
			return err
		}
		spec.ConfigFile = ld.File
	} else if err := cfg.CheckEvalFiles(); err != nil {
		return err
	}
	if slices.Contains(names, pipeline.StageFilter) {
		stages = append(stages, filter.StageFor(&cfg))
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

// generation builds a generating run from the config: generate.Plan with the config's
// policy and backend from the registry, and the run's filter counting toward the target.
func (a *app) generation(cfg *pipeline.Config, forceNew bool, command string) (pipeline.Spec, []pipeline.Stage, error) {
	return generate.Plan(generate.PlanOptions{Config: cfg, Policy: a.reg.policies[cfg.Generate.Policy], Backend: a.reg.backends[cfg.Env.Backend],
		Command: command, Version: version, ForceNew: forceNew, Exemplars: data.FS, Getenv: a.getenv, Progress: a.stderr, Logger: a.log,
		Tally: func() (generate.Tally, error) {
			chain, err := filter.New(cfg.FilterConfig(), cfg.Task.Name, filter.Options{})
			if err != nil {
				if !pipeline.IsBadInput(err) {
					err = &pipeline.InputError{Err: err} // an evaluation file that cannot be read
				}
				return nil, err
			}
			return chain.Tally(), nil
		}})
}

// exportStage is the export stage of the config; its card names llm.model, or the
// policy when it sends no request.
func (a *app) exportStage(cfg *pipeline.Config) export.Stage {
	model := cfg.LLM.Model
	if !a.reg.policies[cfg.Generate.Policy].Model {
		model = cfg.Generate.Policy
	}
	return export.StageFor(cfg, model, a.log)
}
