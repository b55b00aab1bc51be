package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/generate"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

type playOptions struct {
	task      string
	questions string
	question  string
	index     string
	save      string
}

func (a *app) newPlayCmd() *cobra.Command {
	var o playOptions
	cmd := &cobra.Command{
		Use:   "play",
		Short: "Write an exemplar by hand: type thoughts and actions, the environment answers",
		Long: `Shows a question, reads a thought and then an action per step from stdin, lets the
environment answer, and repeats until Finish. The trajectory is appended to --save as an
exemplar in reactgen's format (usable as generate.exemplars). This is how the paper's
exemplars were made: by people writing trajectories.`,
		Example: `  reactgen play --task hotpotqa --question a40737f241598e2825d59b3f --index runs/demo/index --save my-exemplars.json`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return a.runPlay(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.task, "task", pipeline.TaskHotpotQA, "hotpotqa or fever")
	cmd.Flags().StringVar(&o.questions, "questions", "", "task file (default: the demo world's file for --task)")
	cmd.Flags().StringVar(&o.question, "question", "", "question id")
	cmd.MarkFlagRequired("question")
	cmd.Flags().StringVar(&o.index, "index", "runs/demo/index", "index directory")
	cmd.Flags().StringVar(&o.save, "save", "exemplars.json", "exemplar file to append to (created if missing)")
	return cmd
}

func (a *app) runPlay(ctx context.Context, o playOptions) error {
	if o.questions == "" {
		o.questions = "data/demo/hotpotqa.json"
		if o.task == pipeline.TaskFEVER {
			o.questions = "data/demo/fever.jsonl"
		}
	}
	qs, _, err := dataset.Load(o.questions, dataset.Options{Task: o.task, Format: "auto"})
	if err != nil {
		return &pipeline.InputError{Err: err}
	}
	var q *pipeline.Question
	for i := range qs {
		if qs[i].ID == o.question {
			q = &qs[i]
		}
	}
	if q == nil {
		return usagef("--question %s: no such id in %s", o.question, o.questions)
	}
	if !index.Exists(o.index) {
		return usagef("--index %s: no index there (run `make run` or `reactgen index`)", o.index)
	}
	ix, err := index.Open(o.index)
	if err != nil {
		return &pipeline.InputError{Err: err}
	}
	defer ix.Close()
	opts := env.OptionsFor(o.task, pipeline.Default().Env)
	opts.Gold = q.Answer
	w := env.New(ix, opts)
	ex, err := generate.Play(ctx, *q, w, safefile.Reader(ctx, a.stdin), a.stderr) // a signal stops a read of stdin
	if err != nil {
		return err
	}
	n, err := prompt.AppendExemplar(o.save, o.task, ex)
	if errors.Is(err, prompt.ErrNotExemplarFile) {
		return usagef("--save %w", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "saved exemplar %d to %s\n", n, o.save)
	return nil
}
