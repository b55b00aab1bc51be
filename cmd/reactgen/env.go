package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/internal/env"
	"github.com/reactgen/reactgen/internal/index"
	"github.com/reactgen/reactgen/pipeline"
)

type envOptions struct {
	index     string
	task      string
	sentences int
}

func (a *app) newEnvCmd() *cobra.Command {
	var o envOptions
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Play actions against the environment: one action a line on stdin, one JSON line out",
		Long: `Reads actions from stdin, one per line (Search[...], Lookup[...], Finish[...]), and
writes one JSON object per line to stdout: {"action": ..., "observation": ..., "done": ...}.
For debugging environments and for scripts.`,
		Example: `  printf 'Search[Voumbreis Vrikqux]\nLookup[born]\nFinish[1899]\n' | reactgen env --index runs/demo/index
  echo 'Finish[supports]' | reactgen env --index runs/demo/index --task fever`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runEnv(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.index, "index", "", "index directory (reactgen index)")
	cmd.MarkFlagRequired("index")
	cmd.Flags().StringVar(&o.task, "task", pipeline.TaskHotpotQA, "hotpotqa or fever (FEVER canonicalises Finish labels)")
	cmd.Flags().IntVar(&o.sentences, "sentences", 5, "sentences a successful Search returns")
	return cmd
}

func (a *app) runEnv(ctx context.Context, o envOptions) error {
	if o.task != pipeline.TaskHotpotQA && o.task != pipeline.TaskFEVER {
		return usagef("--task %q: want hotpotqa or fever", o.task)
	}
	if !index.Exists(o.index) {
		return usagef("--index %s: no index there (build one with reactgen index)", o.index)
	}
	ix, err := index.Open(o.index)
	if err != nil {
		return &pipeline.InputError{Err: err}
	}
	defer ix.Close()
	w := env.New(ix, env.Options{Task: o.task, Sentences: o.sentences, MaxObservationChars: pipeline.Default().Env.MaxObservationChars})
	return env.Serve(ctx, w, a.stdin, a.stdout)
}
