package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/reactgen/reactgen/pipeline"
)

// CompareOptions are `reactgen compare`'s flags.
type CompareOptions struct {
	Out     string // the report's directory (report.html, charts/); empty: none
	JSON    bool   // print the runs' summaries as JSON instead of Table 1
	Details bool   // print each run's breakdown after the table
	PNG     bool   // also render the charts as PNG with headless Chromium
	Logger  *slog.Logger
}

// Compare scores the run directories dirs and prints them side by side on stdout (the
// paper's Table 1, or JSON), then writes the HTML report and its charts to o.Out. An
// o.Out that is no earlier report, or a directory that is no run, is a
// *pipeline.InputError, found before anything is printed.
func Compare(ctx context.Context, stdout io.Writer, dirs []string, o CompareOptions) error {
	if o.Out != "" {
		// Before anything is printed: --out must be new, empty or an earlier report.
		if err := CheckOut(o.Out); err != nil {
			return &pipeline.InputError{Err: err}
		}
	}
	runs, err := Load(dirs)
	if err != nil {
		return &pipeline.InputError{Err: err}
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(runs); err != nil {
			return err
		}
	} else {
		if err := WriteTable(stdout, runs); err != nil {
			return err
		}
		if o.Details {
			for _, r := range runs {
				fmt.Fprintln(stdout)
				if err := WriteDetails(stdout, r); err != nil {
					return err
				}
			}
		}
	}
	if o.Out == "" {
		return nil
	}
	paths, err := Write(o.Out, runs, time.Now())
	if err != nil {
		return err
	}
	o.Logger.Info("wrote the report", "html", paths[0], "charts", len(paths)-1)
	if o.PNG {
		pngs, err := WritePNGs(ctx, Chromium, o.Out, Charts(runs))
		if err != nil {
			return err
		}
		o.Logger.Info("rendered the charts as PNG", "charts", len(pngs), "dir", filepath.Join(o.Out, ChartsDir))
	}
	return nil
}
