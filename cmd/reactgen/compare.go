package main

import (
	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/report"
)

type compareOptions struct {
	out     string
	asJSON  bool
	details bool
	png     bool
}

func (a *app) newCompareCmd() *cobra.Command {
	var o compareOptions
	cmd := &cobra.Command{
		Use:   "compare RUN...",
		Short: "Put runs side by side: the paper's Table 1 on stdout, an HTML report with charts",
		Long: `Scores each run directory (HotpotQA EM and F1 with the official normalisation, FEVER
accuracy, over each question's first attempt, with 95% confidence intervals), prints the
paper's Table 1 layout (rows method and model, columns HotpotQA EM and FEVER accuracy),
and writes a self-contained report.html (no network needed to open it) with inline SVG
charts: accuracy per method, accuracy against training trajectories or model, steps to
the answer, success by question type, cost per correct episode and the filter's reject
reasons. The same charts are written as charts/*.svg beside it, and with --png as
charts/*.png (rendered by headless Chromium), for a dataset card. A run that fine-tuned a
model (reactgen train) links the eval runs of that model to its number of training rows.`,
		Example: `  reactgen compare runs/demo runs/demo-act runs/demo-fever --out runs/report
  reactgen compare runs/h-react runs/h-cot runs/h-ft-eval --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return report.Compare(cmd.Context(), a.stdout, args, report.CompareOptions{Out: o.out, JSON: o.asJSON, Details: o.details, PNG: o.png, Logger: a.log})
		},
	}
	cmd.Flags().StringVarP(&o.out, "out", "o", "runs/report", "directory for report.html and charts/*.svg (empty: none)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the runs' summaries as JSON instead of the table")
	cmd.Flags().BoolVar(&o.png, "png", false, "also render each chart as charts/<name>.png with headless Chromium (/usr/bin/chromium)")
	cmd.Flags().BoolVar(&o.details, "details", false, "print each run's breakdown (type, level, steps, tokens, cost, stop reasons) after the table")
	return cmd
}
