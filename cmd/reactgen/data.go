package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reactgen/reactgen/data/download"
	"github.com/reactgen/reactgen/finetune"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/pipeline"
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

// dataCorpora are the corpora the data command indexes: the set that brings each, its
// sources under --out (a folder or a glob) and the index folder.
var dataCorpora = []struct{ set, sources, index string }{
	{"hotpotqa", "hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts", "hotpotqa/index"},
	{"fever", "fever/wiki-pages/*.jsonl", "fever/index"},
}

func (a *app) runData(ctx context.Context, o dataOptions) error {
	files := download.Paper
	if o.manifest != "" {
		b, err := pipeline.ReadInputFile(o.manifest, 1<<20)
		if err != nil {
			return &pipeline.InputError{Err: fmt.Errorf("--manifest: %w", err)}
		}
		files = nil
		if err := json.Unmarshal(b, &files); err != nil {
			return &pipeline.InputError{Err: fmt.Errorf("--manifest %s: %w", o.manifest, err)}
		}
	}
	files, err := download.Select(files, o.only)
	if err != nil {
		return usagef("%v", err)
	}
	if _, err := download.URLFor(download.File{URL: "http://x/"}, o.mirror); err != nil {
		return usagef("%v", err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	fmt.Fprintf(a.stderr, "fetching %d files (%s before unpacking) into %s\n", len(files), download.Human(total), o.out)
	bar := false
	if f, ok := a.stderr.(*os.File); ok {
		bar = term.IsTerminal(int(f.Fd()))
	}
	results, err := download.Fetch(ctx, files, download.Options{Dir: o.out, Mirror: o.mirror, Progress: a.stderr, Bar: bar})
	if err != nil {
		return fmt.Errorf("data: %w (files fetched so far are kept; run the same command again to resume)", err)
	}
	fetched := map[string]bool{}
	for _, r := range results {
		fetched[r.File.Set] = true
	}
	if !o.noIndex {
		for _, c := range dataCorpora {
			if !fetched[c.set] {
				continue
			}
			if err := a.indexData(ctx, filepath.Join(o.out, filepath.FromSlash(c.sources)), filepath.Join(o.out, filepath.FromSlash(c.index))); err != nil {
				return err
			}
		}
	}
	a.printDataConfig(o.out, fetched, !o.noIndex)
	return nil
}

// indexData builds the index of sources in dir unless an index of the same sources is
// there.
func (a *app) indexData(ctx context.Context, sources, dir string) error {
	id, _, err := index.Identity(dir, sources)
	if err != nil {
		return err
	}
	if index.Exists(dir) {
		if info, err := index.ReadInfo(dir); err == nil && info.Identity == id {
			fmt.Fprintf(a.stderr, "index %s: up to date\n", dir)
			return nil
		}
	}
	list, err := index.Sources(sources)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "indexing %s into %s\n", sources, dir)
	start, last := time.Now(), time.Now()
	info, err := index.Build(ctx, dir, list, index.BuildOptions{Force: true, Command: "reactgen data", Logger: a.log,
		Progress: func(pages int) {
			if time.Since(last) > 5*time.Second {
				last = time.Now()
				fmt.Fprintf(a.stderr, "indexed %d pages (%.0f pages/s)\n", pages, float64(pages)/time.Since(start).Seconds())
			}
		}})
	if err != nil {
		return fmt.Errorf("index %s: %w", sources, err)
	}
	fmt.Fprintf(a.stderr, "index %s: %d pages in %.0fs\n", dir, info.Pages, time.Since(start).Seconds())
	return nil
}

// printDataConfig prints the lines that run the paper configs on what was fetched.
func (a *app) printDataConfig(out string, sets map[string]bool, indexed bool) {
	p := func(rel string) string { return filepath.Join(out, filepath.FromSlash(rel)) }
	idx := func(rel string) string {
		if !indexed {
			return ""
		}
		return " \\\n  --set corpus.index=" + finetune.ShellQuote(p(rel))
	}
	fmt.Fprintln(a.stdout, "done. The paper's setup on these files:")
	if sets["hotpotqa"] {
		fmt.Fprintf(a.stdout, "reactgen run -c configs/hotpotqa-react.yaml \\\n  --set task.path=%s \\\n  --set corpus.path=%s%s \\\n  --set generate.exemplars=%s\n",
			finetune.ShellQuote(p("hotpotqa/hotpot_train_v1.1.json")), finetune.ShellQuote(p(dataCorpora[0].sources)), idx(dataCorpora[0].index),
			finetune.ShellQuote(p("react-prompts/prompts_naive.json")+"#webthink_simple6"))
		fmt.Fprintf(a.stdout, "# the paper's evaluation questions: --set task.path=%s\n", finetune.ShellQuote(p("hotpotqa/hotpot_dev_v1_simplified.json")))
	}
	if sets["fever"] {
		fmt.Fprintf(a.stdout, "reactgen run -c configs/fever-react.yaml \\\n  --set task.path=%s \\\n  --set corpus.path=%s%s \\\n  --set generate.exemplars=%s\n",
			finetune.ShellQuote(p("fever/train.jsonl")), finetune.ShellQuote(p(dataCorpora[1].sources)), idx(dataCorpora[1].index),
			finetune.ShellQuote(p("react-prompts/fever.json")+"#webthink_simple3"))
		fmt.Fprintf(a.stdout, "# the paper's evaluation claims: --set task.path=%s\n", finetune.ShellQuote(p("fever/paper_dev.jsonl")))
	}
}
