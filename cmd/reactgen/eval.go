package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/pipeline"
	"github.com/reactgen/reactgen/report"
)

func (a *app) newEvalCmd() *cobra.Command {
	var o stageOptions
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Score a model on an evaluation split (few-shot or in its trained layout): EM, F1, accuracy with 95% CIs",
		Long: `Runs the configured model, method and format once on every question of task.path (an
evaluation split: HotpotQA dev, FEVER dev, or any task file) and scores the episodes:
HotpotQA EM and F1 with the official normalisation, FEVER accuracy, each with a 95%
confidence interval, per question type and level where the task has them, with steps,
tokens, cost and stop reasons. The run directory is like any other: resumable, its
responses cached, its budget enforced; the scores are written to eval.json.

generate.prompting trained scores a fine-tuned model zero-shot: each request is exactly
what the export rendered for a training example up to the assistant turn the model is to
write (export.system if it was set, the question turn, the trajectory so far), with no
exemplars and no instruction; generate.trained_format names the export format it was
trained on. An evaluation makes one attempt per question: generate.attempts,
target_correct and rationalize are set to 1, 0 and false.`,
		Example: `  reactgen eval -c configs/hotpotqa-react.yaml --out runs/h-dev --set task.path=/data/hotpot_dev_distractor_v1.json
  reactgen eval -c configs/demo.yaml --out runs/demo-ft-eval --set generate.policy=llm \
    --set llm.model=ft:gpt-4o-mini-2024-07-18:org::abc123 --set generate.prompting=trained`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runEval(cmd.Context(), o) },
	}
	o.register(cmd)
	return cmd
}

func (a *app) runEval(ctx context.Context, o stageOptions) error {
	ld, err := a.load(&o.flags, false)
	if err != nil {
		return err
	}
	cfg := ld.Config
	if o.skipBad {
		cfg.Task.SkipBad = true
	}
	// One scored attempt per question, every question.
	cfg.Generate.Attempts, cfg.Generate.TargetCorrect, cfg.Generate.Rationalize = 1, 0, false
	spec, stages, err := a.generation(&cfg, o.forceNew, "eval")
	if err != nil {
		return err
	}
	spec.ConfigFile = ld.File
	stages = append(stages, report.Stage{})
	if _, err := pipeline.Execute(ctx, spec, stages...); err != nil {
		return err
	}
	run, err := report.Summarize(cfg.Run.Out)
	if err != nil {
		return err
	}
	if err := report.WriteTable(a.stdout, []*report.Run{run}); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout)
	return report.WriteDetails(a.stdout, run)
}
