package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/filter"
	"github.com/reactgen/reactgen/ingest"
	"github.com/reactgen/reactgen/pipeline"
	"github.com/reactgen/reactgen/pipeline/config"
)

type importOptions struct {
	format  string
	task    string
	gold    string
	out     string
	config  configFlags
	skipBad bool
	// source and sourceModel override the provenance the card gives the data.
	source, sourceModel string
}

func (a *app) newImportCmd() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import --format FORMAT --out DIR FILE...",
		Short: "Turn existing trajectory corpora into a run directory of episodes, then filter and export them",
		Long: `Reads existing corpora (OpenAI chat JSONL such as FireAct's gpt_format files, Alpaca JSON,
the ReAct paper's printed transcripts, FireAct's raw trajectories, Agent Data Protocol
standardized trajectories and ATIF trajectories as JSONL, a JSON array or one JSON document;
reactgen's own adp and atif exports come back as the same episodes) into reactgen episodes in
a new run directory, keeping the outcome a file records and re-scoring against --gold when
given, then runs the filter and export stages on them (with --config's filter and export
sections, or the defaults).`,
		Example: `  reactgen import --format openai-chat --task hotpotqa --out runs/fireact gpt_format_hotpotqa.jsonl
  reactgen import --format react-transcript --task fever --gold paper_dev.jsonl --out runs/paper-fever transcripts.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runImport(cmd.Context(), o, args) },
	}
	cmd.Flags().StringVar(&o.format, "format", "", "openai-chat, alpaca, react-transcript, fireact-trajs, adp or atif")
	cmd.MarkFlagRequired("format")
	cmd.Flags().StringVar(&o.task, "task", pipeline.TaskHotpotQA, "hotpotqa or fever")
	cmd.Flags().StringVar(&o.gold, "gold", "", "gold answers to re-score against: a question file of --task (HotpotQA JSON, FEVER JSONL, JSONL {id, question, answer})")
	cmd.Flags().StringVarP(&o.out, "out", "o", "", "run directory to create")
	cmd.MarkFlagRequired("out")
	cmd.Flags().StringVarP(&o.config.file, "config", "c", "", "config whose filter and export sections apply")
	cmd.Flags().StringArrayVar(&o.config.sets, "set", nil, "override a config key, section.key=value (filter.* and export.*; on --config or the defaults; repeatable)")
	cmd.Flags().BoolVar(&o.skipBad, "skip-bad", false, "skip malformed records and count them")
	cmd.Flags().StringVar(&o.source, "source", "", "the corpus, as the dataset card names it (default: by format, e.g. FireAct (Chen et al. 2023))")
	cmd.Flags().StringVar(&o.sourceModel, "source-model", "", "the model that generated the trajectories (default: by format, e.g. gpt-4 for FireAct's chat files)")
	return cmd
}

func (a *app) runImport(ctx context.Context, o importOptions, files []string) error {
	if o.task != pipeline.TaskHotpotQA && o.task != pipeline.TaskFEVER {
		return usagef("--task %q: want hotpotqa or fever", o.task)
	}
	cfg, err := a.importConfig(o.config)
	if err != nil {
		return err
	}
	cfg.Task.Name = o.task
	cfg.Run.Out = o.out
	src := ingest.Stage{Options: ingest.Options{Format: o.format, Task: o.task, Gold: o.gold, SkipBad: o.skipBad,
		Provenance: ingest.Provenance{Source: o.source, Model: o.sourceModel}}, Files: files}
	results, inputs, err := src.Pin()
	if err != nil {
		return err
	}
	spec := pipeline.Spec{Dir: o.out, Command: "import", Mode: pipeline.New, Version: version, Config: cfg.Redacted(),
		Results: results, Inputs: inputs, Logger: a.log}
	r, err := pipeline.Execute(ctx, spec, src, filter.StageFor(&cfg), a.exportStage(&cfg))
	if err != nil {
		return err
	}
	st := r.Manifest.Stages[pipeline.StageImport].Counts
	fmt.Fprintf(a.stdout, "imported %d of %d records (%d correct, %d skipped) into %s\n", st["imported"], st["read"], st["correct"], st["skipped"], o.out)
	r.Report(a.stdout)
	return nil
}

// importConfig is --config's filter and export sections, or without --config the
// defaults with REACTGEN_* variables and --set applied: an import has no recorded
// config to fall back on, since its run directory is new.
func (a *app) importConfig(f configFlags) (pipeline.Config, error) {
	if f.file != "" {
		ld, err := a.load(&f, true)
		if err != nil {
			return pipeline.Config{}, err
		}
		return ld.Config, nil
	}
	ld, err := a.loadSource(config.Source{Sets: f.sets, Existing: true})
	if err != nil {
		return pipeline.Config{}, err
	}
	return ld.Config, nil
}
