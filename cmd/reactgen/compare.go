package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

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
			if o.out != "" {
				// Before anything is printed: --out must be new, empty or an earlier report.
				if err := report.CheckOut(o.out); err != nil {
					return usagef("%w", err)
				}
			}
			runs, err := report.Load(args)
			if err != nil {
				return usagef("%w", err)
			}
			if o.asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(runs); err != nil {
					return err
				}
			} else {
				if err := report.WriteTable(a.stdout, runs); err != nil {
					return err
				}
				if o.details {
					for _, r := range runs {
						fmt.Fprintln(a.stdout)
						if err := report.WriteDetails(a.stdout, r); err != nil {
							return err
						}
					}
				}
			}
			if o.out == "" {
				return nil
			}
			paths, err := report.Write(o.out, runs, time.Now())
			if err != nil {
				return err
			}
			a.log.Info("wrote the report", "html", paths[0], "charts", len(paths)-1)
			if o.png {
				pngs, err := report.WritePNGs(cmd.Context(), report.Chromium, o.out, report.Charts(runs))
				if err != nil {
					return err
				}
				a.log.Info("rendered the charts as PNG", "charts", len(pngs), "dir", filepath.Join(o.out, report.ChartsDir))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.out, "out", "o", "runs/report", "directory for report.html and charts/*.svg (empty: none)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the runs' summaries as JSON instead of the table")
	cmd.Flags().BoolVar(&o.png, "png", false, "also render each chart as charts/<name>.png with headless Chromium (/usr/bin/chromium)")
	cmd.Flags().BoolVar(&o.details, "details", false, "print each run's breakdown (type, level, steps, tokens, cost, stop reasons) after the table")
	return cmd
}
