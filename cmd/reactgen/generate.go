package main

import (
	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/pipeline"
)

func (a *app) newGenerateCmd() *cobra.Command {
	var o stageOptions
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Run the generate stage: episodes into episodes.jsonl (resumes)",
		Example: `  reactgen generate --config configs/demo.yaml --out runs/demo
  reactgen generate -c configs/hotpotqa-react.yaml -o runs/h1 --set generate.concurrency=64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStages(cmd.Context(), o, "generate", pipeline.StageGenerate)
		},
	}
	o.register(cmd)
	o.registerShard(cmd)
	return cmd
}
