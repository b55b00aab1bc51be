package main

import (
	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/pipeline"
)

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
			return a.runStages(cmd.Context(), o, "run", pipeline.StageGenerate, pipeline.StageFilter, pipeline.StageExport)
		},
	}
	o.register(cmd)
	o.registerShard(cmd)
	return cmd
}

func (a *app) newFilterCmd() *cobra.Command {
	var o stageOptions
	cmd := &cobra.Command{
		Use:   "filter",
		Short: "Run the filter stage: episodes.jsonl into kept.jsonl and rejected.jsonl",
		Long: `Runs the filter stage on an existing run. Without --config it reuses the config
recorded in the run's manifest.json, with REACTGEN_* and --set applied on top.`,
		Example: `  reactgen filter --out runs/demo --set filter.min_f1=0.8
  reactgen filter --config configs/demo.yaml --out runs/demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStages(cmd.Context(), o, "filter", pipeline.StageFilter)
		},
	}
	o.register(cmd)
	return cmd
}

func (a *app) newExportCmd() *cobra.Command {
	var o stageOptions
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Run the export stage: kept.jsonl into training files and a dataset card under export/",
		Long: `Runs the export stage on an existing run. Without --config it reuses the config
recorded in the run's manifest.json, with REACTGEN_* and --set applied on top.`,
		Example: `  reactgen export --out runs/demo --set export.formats=[parquet]
  reactgen export --config configs/demo.yaml --out runs/demo --set export.formats=[sharegpt,parquet]`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStages(cmd.Context(), o, "export", pipeline.StageExport)
		},
	}
	o.register(cmd)
	return cmd
}
