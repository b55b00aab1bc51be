package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/pipeline"
)

type mergeOptions struct {
	out           string
	shards        []string
	targetCorrect int
}

func (a *app) newMergeCmd() *cobra.Command {
	var o mergeOptions
	cmd := &cobra.Command{
		Use:   "merge OUT SHARD...",
		Short: "Combine the run directories of a run's shards (--shard i/n) into one run directory",
		Long: `Merges the n shards of one run into a new run directory OUT: every shard's episodes
(the last record of each id), in id order, as one unsharded run would hold them, and one
manifest that records each shard's inputs and the hashes of its manifest and episode
log. It refuses shards made with other settings, a set that is not shards 0..n-1 of n
once each, shards whose generate stage has not finished, and an OUT that holds a run.
Run filter and export on OUT afterwards. generate.target_correct applies to each shard;
--target-correct caps the merged run instead (see docs/scale.md).`,
		Example: `  reactgen merge runs/all runs/shard-0 runs/shard-1 runs/shard-2 runs/shard-3
  reactgen filter --config configs/hotpotqa-react.yaml --out runs/all && reactgen export --config configs/hotpotqa-react.yaml --out runs/all`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.out, o.shards = args[0], args[1:]
			return a.runMerge(cmd.Context(), o)
		},
	}
	cmd.Flags().IntVar(&o.targetCorrect, "target-correct", 0, "keep the questions, in shard-hash order, until this many correct episodes (0 = keep all)")
	return cmd
}

func (a *app) runMerge(ctx context.Context, o mergeOptions) error {
	if o.targetCorrect < 0 {
		return usagef("--target-correct must not be negative, got %d", o.targetCorrect)
	}
	sum, err := pipeline.Merge(ctx, o.out, o.shards, pipeline.MergeOptions{TargetCorrect: o.targetCorrect, Version: version})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "merged %d shards into %s: %d episodes (%d correct)", sum.Shards, o.out, sum.Episodes, sum.Correct)
	if sum.Dropped > 0 {
		fmt.Fprintf(a.stdout, ", %d left out by --target-correct", sum.Dropped)
	}
	fmt.Fprintln(a.stdout)
	return nil
}
