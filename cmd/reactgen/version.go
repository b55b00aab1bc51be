package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/pipeline"
)

func (a *app) newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print reactgen's version",
		Example: "  reactgen version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(a.stdout, "reactgen %s (episode schema %d, %s)\n", version, pipeline.SchemaVersion, runtime.Version())
			return nil
		},
	}
}
