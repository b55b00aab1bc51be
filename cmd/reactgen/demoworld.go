package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/data/demoworld"
)

type demoWorldOptions struct {
	out  string
	seed int64
}

func (a *app) newDemoWorldCmd() *cobra.Command {
	var o demoWorldOptions
	cmd := &cobra.Command{
		Use:   "demo-world",
		Short: "Generate a fictional encyclopedia with HotpotQA questions and FEVER claims about it",
		Long: `Writes corpus.jsonl (invented people, places, organisations and works), hotpotqa.json
(questions in HotpotQA's official format, with supporting facts and context) and
fever.jsonl (claims in FEVER's format). Every answer follows from the corpus and from
nothing else, so a model cannot answer from memory. The same seed gives the same files.`,
		Example: `  reactgen demo-world --out data/demo --seed 1
  reactgen demo-world --out /tmp/world2 --seed 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := demoworld.Generate(demoworld.Options{Seed: o.seed})
			if err != nil {
				return err
			}
			if err := w.Write(o.out); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote the demo world (seed %d) to %s\n", o.seed, o.out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.out, "out", "o", "", "output folder")
	cmd.MarkFlagRequired("out")
	cmd.Flags().Int64Var(&o.seed, "seed", 1, "random seed")
	return cmd
}
