package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/pipeline"
	"github.com/reactgen/reactgen/pipeline/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// configFlags are the flags every config-driven command takes.
type configFlags struct {
	file string
	sets []string
	out  string
}

func (f *configFlags) register(cmd *cobra.Command, needOut bool) {
	cmd.Flags().StringVarP(&f.file, "config", "c", "", "config file (YAML)")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "override a config key, section.key=value (repeatable)")
	usage := "run directory (overrides run.out)"
	cmd.Flags().StringVarP(&f.out, "out", "o", "", usage)
	if needOut {
		cmd.MarkFlagRequired("out")
	}
}

// usagef is a problem with the command line or the config: exit code 2.
func usagef(format string, args ...any) error {
	return &pipeline.InputError{Err: fmt.Errorf(format, args...)}
}

// load reads the effective config for a command. A stage on an existing run (filter,
// export) reuses the run's recorded config when --config is not given, with --set and
// REACTGEN_* applied on top.
func (a *app) load(f *configFlags, existing bool) (*config.Loaded, error) {
	src := config.Source{File: f.file, Sets: f.sets, Existing: existing, Out: f.out}
	if f.file == "" {
		if !existing {
			return nil, usagef("--config is required (try configs/demo.yaml)")
		}
		if f.out == "" {
			return nil, usagef("--config or --out is required: the run directory whose recorded config to reuse")
		}
		rec, err := pipeline.RecordedConfig(f.out)
		if err != nil {
			return nil, err
		}
		src.Recorded = rec
	}
	ld, err := a.loadSource(src)
	if err != nil {
		return nil, err
	}
	if f.out != "" {
		ld.Config.Run.Out = f.out
	}
	return ld, nil
}

// loadSource loads src with the registry's check of every name and the process
// environment, and logs the warnings.
func (a *app) loadSource(src config.Source) (*config.Loaded, error) {
	src.Check = a.reg.check
	if a.environ != nil {
		src.Environ = a.environ()
	}
	ld, err := config.Load(src, a.getenv)
	if err != nil {
		return nil, err
	}
	for _, w := range ld.Warnings {
		a.log.Warn(w)
	}
	return ld, nil
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "reactgen",
		Short: "Bootstrap ReAct trajectories and export them as fine-tuning data",
		Long: `reactgen few-shot prompts a model (any OpenAI-compatible server, or the offline expert
policy) against a Wikipedia-like environment, keeps the episodes that reach the correct
answer, and exports training sets as JSONL, Arrow and Parquet.`,
		Example:       "  reactgen run --config configs/demo.yaml --out runs/demo",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &pipeline.InputError{Err: err} })
	root.AddCommand(
		a.newRunCmd(), a.newGenerateCmd(), a.newFilterCmd(), a.newExportCmd(),
		a.newIndexCmd(), a.newEnvCmd(), a.newServeEnvCmd(), a.newStatsCmd(), a.newInspectCmd(),
		a.newConfigCmd(), a.newDataCmd(), a.newDemoWorldCmd(), a.newPlayCmd(), a.newImportCmd(), a.newTrainCmd(), a.newEvalCmd(), a.newCompareCmd(), a.newMergeCmd(), a.newVersionCmd(),
	)
	return root
}

func (a *app) execute(ctx context.Context, args []string) error {
	root := a.root()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && cmd != nil && isCobraUsage(err) {
		return &pipeline.InputError{Err: err}
	}
	return err
}

// isCobraUsage recognises cobra's own argument errors.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "required flag", "accepts ", "requires at least", "invalid argument"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
