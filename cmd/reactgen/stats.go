package main

import (
	"encoding/json"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/pipeline"
)

type statsOptions struct {
	run    string
	asJSON bool
}

func (a *app) newStatsCmd() *cobra.Command {
	var o statsOptions
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Counts per stage, success rate, steps, tokens and reject reasons of a run",
		Example: `  reactgen stats --run runs/demo
  reactgen stats --run runs/demo --json | jq .reject_reasons`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runStats(o) },
	}
	cmd.Flags().StringVar(&o.run, "run", "", "run directory")
	cmd.MarkFlagRequired("run")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON")
	return cmd
}

// runStats prints the run summary, the one the dataset card reports.
func (a *app) runStats(o statsOptions) error {
	m, err := pipeline.ReadManifest(o.run)
	if errors.Is(err, os.ErrNotExist) {
		return usagef("%s: %w", o.run, pipeline.ErrNoRun)
	}
	if err != nil {
		return err
	}
	s, err := pipeline.Summarize(o.run, m, pipeline.SummaryOptions{})
	if err != nil {
		return err
	}
	if o.asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return s.Print(a.stdout)
}
