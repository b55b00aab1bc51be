package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/pipeline"
)

type indexOptions struct {
	corpus  []string
	out     string
	format  string
	skipBad bool
	force   bool
}

func (a *app) newIndexCmd() *cobra.Command {
	var o indexOptions
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Build the local full-text index of a corpus",
		Long: `Build the on-disk index that the local environment searches. The corpus is JSONL
{"title", "text"} (text a string, or a list of paragraphs or of sentence lists), the
HotpotQA Wikipedia dump as its authors distribute it (a folder of .bz2 files), or a
HotpotQA question file whose context paragraphs become the pages.`,
		Example: `  reactgen index --corpus data/demo/corpus.jsonl --out runs/demo-index
  reactgen index --corpus enwiki-20171001-pages-meta-current-withlinks-abstracts/ --out wiki-index`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runIndex(cmd.Context(), o) },
	}
	cmd.Flags().StringArrayVar(&o.corpus, "corpus", nil, "corpus file or folder (repeatable)")
	cmd.MarkFlagRequired("corpus")
	cmd.Flags().StringVarP(&o.out, "out", "o", "", "index directory to create")
	cmd.MarkFlagRequired("out")
	cmd.Flags().StringVar(&o.format, "format", "auto", "auto, jsonl, hotpotqa-wiki or hotpotqa-questions")
	cmd.Flags().BoolVar(&o.skipBad, "skip-bad", false, "skip malformed records and count them instead of failing")
	cmd.Flags().BoolVar(&o.force, "force", false, "replace an existing index")
	return cmd
}

func (a *app) runIndex(ctx context.Context, o indexOptions) error {
	if err := index.Recover(o.out, a.log); err != nil {
		return &pipeline.InputError{Err: err}
	}
	if index.Exists(o.out) && !o.force {
		return usagef("index %s already exists (use --force to rebuild it)", o.out)
	}
	start := time.Now()
	info, err := index.Build(ctx, o.out, o.corpus, index.BuildOptions{
		Format: o.format, SkipBad: o.skipBad, Force: o.force, Logger: a.log, Progress: index.ProgressLines(a.stderr)})
	if err != nil {
		return &pipeline.InputError{Err: err}
	}
	fmt.Fprintf(a.stdout, "index %s: %d pages (%d duplicates, %d skipped, %d disambiguation) in %.1fs, identity %s\n",
		o.out, info.Pages, info.Duplicates, info.Skipped, info.Disambiguation, time.Since(start).Seconds(), info.Identity)
	return nil
}
