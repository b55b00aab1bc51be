package main

import (
	"encoding/json"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/reactgen/reactgen/pipeline/config"
)

func (a *app) newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "config",
		Short:   "Show the effective config or list every key",
		Example: "  reactgen config show --config configs/demo.yaml\n  reactgen config keys",
	}
	var f configFlags
	var asJSON bool
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective config after every override, secrets redacted",
		Example: `  reactgen config show --config configs/demo.yaml
  REACTGEN_GENERATE_CONCURRENCY=32 reactgen config show -c configs/hotpotqa-react.yaml --set llm.model=gpt-4o`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ld, err := a.load(&f, false)
			if err != nil {
				return err
			}
			m := ld.Config.Redacted()
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(m)
			}
			b, err := yaml.Marshal(m)
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(b)
			return err
		},
	}
	f.register(show, false)
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of YAML")

	keys := &cobra.Command{
		Use:     "keys",
		Short:   "List every config key with its default and a one-line description",
		Example: "  reactgen config keys",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return config.WriteKeys(a.stdout) },
	}
	cmd.AddCommand(show, keys)
	return cmd
}
