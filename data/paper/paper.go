// Package paper readies the paper's data sets for its configs, for `reactgen data`: it
// downloads HotpotQA, FEVER, their Wikipedia corpora and the ReAct prompt files
// (data/download: resumable, checksummed, unpacked), indexes both corpora (index) and
// prints the `reactgen run` lines that point configs/hotpotqa-react.yaml and
// configs/fever-react.yaml at what was fetched.
//
// It may import data/download, index (to build the corpora's indexes), pipeline and
// finetune's ShellQuote (the one shell quoting of a printed command line); nothing
// imports it but the command line.
package paper

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/reactgen/reactgen/data/download"
	"github.com/reactgen/reactgen/finetune"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

// Options are `reactgen data`'s flags and streams.
type Options struct {
	Out      string   // the folder to download into
	Mirror   string   // a base URL that serves the same paths
	Only     []string // the sets to fetch (download.Sets); empty: all
	Manifest string   // a JSON table of files in place of download.Paper
	NoIndex  bool     // download and verify only
	// Stdout receives the run lines; Stderr the progress, drawn as a bar when Bar.
	Stdout, Stderr io.Writer
	Bar            bool
	Logger         *slog.Logger
}

// corpora are the corpora Get indexes: the set that brings each, its sources under
// Out (a folder or a glob) and the index folder.
var corpora = []struct{ set, sources, index string }{
	{"hotpotqa", "hotpotqa/enwiki-20171001-pages-meta-current-withlinks-abstracts", "hotpotqa/index"},
	{"fever", "fever/wiki-pages/*.jsonl", "fever/index"},
}

// Get fetches the sets o names, indexes the corpora that came with them unless
// o.NoIndex, and prints the run lines. A bad --manifest, --only or --mirror is a
// *pipeline.InputError.
func Get(ctx context.Context, o Options) error {
	files, err := selectFiles(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	fmt.Fprintf(o.Stderr, "fetching %d files (%s before unpacking) into %s\n", len(files), download.Human(total), o.Out)
	results, err := download.Fetch(ctx, files, download.Options{Dir: o.Out, Mirror: o.Mirror, Progress: o.Stderr, Bar: o.Bar})
	if err != nil {
		return fmt.Errorf("data: %w (files fetched so far are kept; run the same command again to resume)", err)
	}
	fetched := map[string]bool{}
	for _, r := range results {
		fetched[r.File.Set] = true
	}
	if !o.NoIndex {
		for _, c := range corpora {
			if !fetched[c.set] {
				continue
			}
			if err := indexCorpus(ctx, o, filepath.Join(o.Out, filepath.FromSlash(c.sources)), filepath.Join(o.Out, filepath.FromSlash(c.index))); err != nil {
				return err
			}
		}
	}
	printRunLines(o.Stdout, o.Out, fetched, !o.NoIndex)
	return nil
}

// selectFiles is the table of files (download.Paper or --manifest) cut to the sets of
// --only, once --mirror is known to be a URL.
func selectFiles(o Options) ([]download.File, error) {
	files := download.Paper
	if o.Manifest != "" {
		b, err := safefile.ReadFile(o.Manifest, 1<<20)
		if err != nil {
			return nil, &pipeline.InputError{Err: fmt.Errorf("--manifest: %w", err)}
		}
		files = nil
		if err := json.Unmarshal(b, &files); err != nil {
			return nil, &pipeline.InputError{Err: fmt.Errorf("--manifest %s: %w", o.Manifest, err)}
		}
	}
	files, err := download.Select(files, o.Only)
	if err != nil {
		return nil, &pipeline.InputError{Err: fmt.Errorf("%v", err)}
	}
	if _, err := download.URLFor(download.File{URL: "http://x/"}, o.Mirror); err != nil {
		return nil, &pipeline.InputError{Err: fmt.Errorf("%v", err)}
	}
	return files, nil
}

// indexCorpus builds the index of sources in dir unless an index of the same sources
// is there.
func indexCorpus(ctx context.Context, o Options, sources, dir string) error {
	id, _, err := index.Identity(dir, sources)
	if err != nil {
		return err
	}
	if index.Exists(dir) {
		if info, err := index.ReadInfo(dir); err == nil && info.Identity == id {
			fmt.Fprintf(o.Stderr, "index %s: up to date\n", dir)
			return nil
		}
	}
	list, err := index.Sources(sources)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "indexing %s into %s\n", sources, dir)
	start := time.Now()
	info, err := index.Build(ctx, dir, list, index.BuildOptions{Force: true, Command: "reactgen data", Logger: o.Logger,
		Progress: index.ProgressLines(o.Stderr)})
	if err != nil {
		return fmt.Errorf("index %s: %w", sources, err)
	}
	fmt.Fprintf(o.Stderr, "index %s: %d pages in %.0fs\n", dir, info.Pages, time.Since(start).Seconds())
	return nil
}

// printRunLines prints the lines that run the paper configs on what was fetched.
func printRunLines(w io.Writer, out string, sets map[string]bool, indexed bool) {
	p := func(rel string) string { return filepath.Join(out, filepath.FromSlash(rel)) }
	idx := func(rel string) string {
		if !indexed {
			return ""
		}
		return " \\\n  --set corpus.index=" + finetune.ShellQuote(p(rel))
	}
	fmt.Fprintln(w, "done. The paper's setup on these files:")
	if sets["hotpotqa"] {
		fmt.Fprintf(w, "reactgen run -c configs/hotpotqa-react.yaml \\\n  --set task.path=%s \\\n  --set corpus.path=%s%s \\\n  --set generate.exemplars=%s\n",
			finetune.ShellQuote(p("hotpotqa/hotpot_train_v1.1.json")), finetune.ShellQuote(p(corpora[0].sources)), idx(corpora[0].index),
			finetune.ShellQuote(p("react-prompts/prompts_naive.json")+"#webthink_simple6"))
		fmt.Fprintf(w, "# the paper's evaluation questions: --set task.path=%s\n", finetune.ShellQuote(p("hotpotqa/hotpot_dev_v1_simplified.json")))
	}
	if sets["fever"] {
		fmt.Fprintf(w, "reactgen run -c configs/fever-react.yaml \\\n  --set task.path=%s \\\n  --set corpus.path=%s%s \\\n  --set generate.exemplars=%s\n",
			finetune.ShellQuote(p("fever/train.jsonl")), finetune.ShellQuote(p(corpora[1].sources)), idx(corpora[1].index),
			finetune.ShellQuote(p("react-prompts/fever.json")+"#webthink_simple3"))
		fmt.Fprintf(w, "# the paper's evaluation claims: --set task.path=%s\n", finetune.ShellQuote(p("fever/paper_dev.jsonl")))
	}
}
