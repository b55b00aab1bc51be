package main

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reactgen/reactgen/data/download"
	"github.com/reactgen/reactgen/data/paper"
)

type dataOptions struct {
	out      string
	mirror   string
	only     []string
	manifest string
	noIndex  bool
}

func (a *app) newDataCmd() *cobra.Command {
	var o dataOptions
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Download the paper's data sets, verify them and index their corpora",
		Long: `Downloads the data of the paper's setup from its publishers: HotpotQA's training and dev
questions and the Wikipedia abstracts dump its authors publish, FEVER's training claims,
paper_dev and its Wikipedia pages, and the ReAct prompt files (prompts_naive.json,
fever.json, alfworld_3prompts.json, pinned to the ReAct repository's commit 6bdb3a1f).

A broken download resumes where it stopped, here or on the next run; each file takes its
name only when its size and SHA-256 sum match the published ones (a mismatch is an error
and the downloaded bytes are removed); archives are unpacked and removed; a finished file
is not fetched again. Then the corpora are indexed (HotpotQA's abstracts into
<out>/hotpotqa/index, FEVER's pages into <out>/fever/index) and the command prints the
lines that point the paper configs at them. With --out data (the default) in the
repository, configs/hotpotqa-react.yaml and configs/fever-react.yaml need no --set.

--mirror fetches the same paths from another host (a local copy, a company mirror):
http://mirror/datasets/hotpot/hotpot_train_v1.1.json for
http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_train_v1.1.json. --manifest replaces the
built-in table of files (a JSON list of {set, path, url, size, sha256, unpack}).`,
		Example: `  reactgen data --out data
  reactgen data --out data --only prompts,fever
  reactgen data --out /srv/react --mirror http://mirror.internal/react-data --no-index`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runData(cmd.Context(), o) },
	}
	cmd.Flags().StringVarP(&o.out, "out", "o", "data", "folder to download into")
	cmd.Flags().StringVar(&o.mirror, "mirror", "", "base URL of a mirror that serves the same paths")
	cmd.Flags().StringSliceVar(&o.only, "only", nil, "sets to fetch: "+strings.Join(download.Sets, ", ")+" (default all)")
	cmd.Flags().StringVar(&o.manifest, "manifest", "", "JSON table of files in place of the built-in one")
	cmd.Flags().BoolVar(&o.noIndex, "no-index", false, "download and verify only; build no index")
	return cmd
}

func (a *app) runData(ctx context.Context, o dataOptions) error {
	bar := false
	if f, ok := a.stderr.(*os.File); ok {
		bar = term.IsTerminal(int(f.Fd()))
	}
	return paper.Get(ctx, paper.Options{Out: o.out, Mirror: o.mirror, Only: o.only, Manifest: o.manifest, NoIndex: o.noIndex,
		Stdout: a.stdout, Stderr: a.stderr, Bar: bar, Logger: a.log})
}
