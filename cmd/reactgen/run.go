package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/pipeline"
)

// stageSet says which stages a command runs.
type stageSet struct {
	index, generate, filter, export bool
}

func (a *app) newRunCmd() *cobra.Command {
	var o stageOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run every stage: index (if missing), generate, filter, export; resumes an existing run",
		Long: `Runs the whole pipeline into a run directory. The corpus index is built when the
configured one is missing. On an existing run directory, run resumes: finished episodes
are kept, unfinished ones run again, and the response cache makes re-asked requests free.
A run directory made with settings that change results (model, method, exemplars,
temperature, task file, corpus) is refused unless --force-new.`,
		Example: `  reactgen run --config configs/demo.yaml --out runs/demo
  OPENAI_BASE_URL=http://localhost:8000/v1 reactgen run -c configs/hotpotqa-react.yaml --set llm.model=meta-llama/Llama-3.1-70B-Instruct`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStages(cmd.Context(), o, "run", stageSet{index: true, generate: true, filter: true, export: true})
		},
	}
	o.register(cmd)
	return cmd
}

func (a *app) newFilterCmd() *cobra.Command {
	var o stageOptions
	cmd := &cobra.Command{
		Use:     "filter",
		Short:   "Run the filter stage: episodes.jsonl into kept.jsonl and rejected.jsonl",
		Example: "  reactgen filter --config configs/demo.yaml --out runs/demo --set filter.min_f1=0.8",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStages(cmd.Context(), o, "filter", stageSet{filter: true})
		},
	}
	o.register(cmd)
	return cmd
}

func (a *app) newExportCmd() *cobra.Command {
	var o stageOptions
	cmd := &cobra.Command{
		Use:     "export",
		Short:   "Run the export stage: kept.jsonl into training files and a dataset card under export/",
		Example: "  reactgen export --config configs/demo.yaml --out runs/demo --set export.formats=[sharegpt,parquet]",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStages(cmd.Context(), o, "export", stageSet{export: true})
		},
	}
	o.register(cmd)
	return cmd
}

// runStages opens the run directory and runs the chosen stages in order.
func (a *app) runStages(ctx context.Context, o stageOptions, command string, which stageSet) error {
	ld, err := a.load(&o.flags)
	if err != nil {
		return err
	}
	if o.skipBad {
		ld.Config.Task.SkipBad = true
	}
	if !which.generate && !which.index {
		// A stage on its own needs an existing run.
		if !(pipeline.RunDir{Path: ld.Config.Run.Out}).Exists() {
			return usagef("%s: %w; run `reactgen run` or `reactgen generate` first", ld.Config.Run.Out, pipeline.ErrNoRun)
		}
	}
	fresh := !(pipeline.RunDir{Path: ld.Config.Run.Out}).Exists()
	rs, err := a.openRun(ctx, ld, o.forceNew, command)
	if err != nil {
		return err
	}
	err = a.runOpen(ctx, rs, which)
	if fresh && err != nil && exitCode(err) == exitUsage {
		// Bad input found by a stage of a new run (a corpus that cannot be indexed):
		// leave no manifest behind, so the directory does not pass for a run.
		os.Remove(rs.dir.File(pipeline.ManifestFile))
		rs.lock.Release()
		return err
	}
	if cerr := rs.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	a.printOutputs(rs)
	return nil
}

func (a *app) runOpen(ctx context.Context, rs *runState, which stageSet) error {
	if which.index {
		if err := a.stageIndex(ctx, rs); err != nil {
			return err
		}
	}
	if which.generate {
		if err := a.stageGenerate(ctx, rs); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if which.filter {
		if _, err := a.stageFilter(ctx, rs); err != nil {
			return err
		}
	}
	if which.export {
		if err := a.stageExport(ctx, rs); err != nil {
			return err
		}
	}
	return nil
}

// printOutputs tells the user where the run's files are (stdout: it is the result).
func (a *app) printOutputs(rs *runState) {
	m := rs.manifest
	fmt.Fprintf(a.stdout, "run %s in %s\n", m.RunID, rs.dir.Path)
	if st, ok := m.Stages["generate"]; ok {
		fmt.Fprintf(a.stdout, "  episodes: %s (%d in the log; this run added %d, %d correct)\n", rs.dir.File(pipeline.EpisodesFile),
			st.Counts["log_records"], st.Counts["episodes"], st.Counts["correct"])
	}
	if st, ok := m.Stages["filter"]; ok {
		fmt.Fprintf(a.stdout, "  kept: %s (%d), rejected: %s (%d)\n", rs.dir.File(pipeline.KeptFile), st.Counts["kept"], rs.dir.File(pipeline.RejectedFile), st.Counts["rejected"])
	}
	for _, o := range m.Outputs {
		if o.Stage != "export" || o.Format == "arrow-meta" {
			continue // the HF folder's metadata files go with its .arrow files
		}
		if o.Rows == 0 && o.Format == "card" {
			fmt.Fprintf(a.stdout, "  card: %s\n", filepath.Join(rs.dir.Path, o.Path))
			continue
		}
		fmt.Fprintf(a.stdout, "  %s: %s (%d rows, %d bytes)\n", o.Format, filepath.Join(rs.dir.Path, o.Path), o.Rows, o.Bytes)
	}
}
