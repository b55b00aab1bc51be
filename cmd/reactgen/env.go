package main

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

type envOptions struct {
	index        string
	task         string
	sentences    int
	observations string
	actions      string
	gold         string
	json         bool
}

func (a *app) newEnvCmd() *cobra.Command {
	def := pipeline.Default().Env
	o := envOptions{observations: def.Observations, actions: def.Actions}
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Play actions against the environment: one action a line on stdin, one JSON line out",
		Long: `Reads actions from stdin, one per line (Search[...], Lookup[...], Finish[...]), and
writes one JSON object per line to stdout: {"action": ..., "observation": ..., "done": ...}.
A line is the action as it stands, spaces included (paper actions are judged with them);
with --json each line is a JSON string instead, so an action can hold line breaks.
For debugging environments, for scripts, and for replaying recorded transcripts.`,
		Example: `  printf 'Search[Voumbreis Vrikqux]\nLookup[born]\nFinish[1899]\n' | reactgen env --index runs/demo/index --gold 1899
  echo 'Finish[supports]' | reactgen env --index runs/demo/index --task fever --observations rules
  echo '"\n\nFinish[SUPPORTS]"' | reactgen env --index runs/demo/index --task fever --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runEnv(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.index, "index", "", "index directory (reactgen index)")
	cmd.MarkFlagRequired("index")
	cmd.Flags().StringVar(&o.task, "task", pipeline.TaskHotpotQA, "hotpotqa or fever (FEVER canonicalises Finish labels)")
	cmd.Flags().IntVar(&o.sentences, "sentences", def.Sentences, "sentences a successful Search returns")
	cmd.Flags().StringVar(&o.observations, "observations", o.observations, "observations: "+strings.Join(env.ObservationModes, " or ")+" (env.observations)")
	cmd.Flags().StringVar(&o.actions, "actions", o.actions, "action parsing: "+strings.Join(env.ActionModes, " or ")+" (env.actions)")
	cmd.Flags().StringVar(&o.gold, "gold", "", "the gold answer: a paper Finish reports reward = 1 when the answer matches it")
	cmd.Flags().BoolVar(&o.json, "json", false, "each input line is a JSON string holding one action")
	return cmd
}

func (a *app) runEnv(ctx context.Context, o envOptions) error {
	if o.task != pipeline.TaskHotpotQA && o.task != pipeline.TaskFEVER {
		return usagef("--task %q: want hotpotqa or fever", o.task)
	}
	if !slices.Contains(env.ObservationModes, o.observations) {
		return usagef("--observations %q: want %s", o.observations, strings.Join(env.ObservationModes, " or "))
	}
	if !slices.Contains(env.ActionModes, o.actions) {
		return usagef("--actions %q: want %s", o.actions, strings.Join(env.ActionModes, " or "))
	}
	if !index.Exists(o.index) {
		return usagef("--index %s: no index there (build one with reactgen index)", o.index)
	}
	ix, err := index.Open(o.index)
	if err != nil {
		return &pipeline.InputError{Err: err}
	}
	defer ix.Close()
	w := env.New(ix, env.Options{Task: o.task, Observations: o.observations, Actions: o.actions, Gold: o.gold,
		Sentences: o.sentences, MaxObservationChars: pipeline.Default().Env.MaxObservationChars})
	in := safefile.Reader(ctx, a.stdin) // SIGTERM and ^C stop a read of an idle stdin
	if o.json {
		return env.ServeJSON(ctx, w, in, a.stdout)
	}
	return env.Serve(ctx, w, in, a.stdout)
}
