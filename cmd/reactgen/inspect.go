package main

import (
	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/report"
)

type inspectOptions struct {
	run      string
	id       string
	question string
	rejected bool
	limit    int
}

func (a *app) newInspectCmd() *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Print a run's episodes for a person to read",
		Example: `  reactgen inspect --run runs/demo --limit 3
  reactgen inspect --run runs/demo --question bf9a7a2609c2c5c79113f0c7
  reactgen inspect --run runs/demo --rejected`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runInspect(o) },
	}
	cmd.Flags().StringVar(&o.run, "run", "", "run directory")
	cmd.MarkFlagRequired("run")
	cmd.Flags().StringVar(&o.id, "id", "", "only the episode with this id")
	cmd.Flags().StringVar(&o.question, "question", "", "only episodes of this question id")
	cmd.Flags().BoolVar(&o.rejected, "rejected", false, "only rejected episodes, with their reasons")
	cmd.Flags().IntVar(&o.limit, "limit", 0, "print at most this many (0 = all)")
	return cmd
}

func (a *app) runInspect(o inspectOptions) error {
	return report.Inspect(a.stdout, a.stderr, o.run, report.InspectOptions{ID: o.id, Question: o.question, Rejected: o.rejected, Limit: o.limit})
}
