package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/internal/dirswap"
	"github.com/reactgen/reactgen/pipeline"
)

// Formats lists the names export.formats accepts: every format but chat-text, which
// export.chat_template adds.
func Formats() []string {
	names := []string{"arrow", "arrow-file", "parquet"}
	for k := range jsonlFormats {
		if k != ChatTextFormat {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// Views lists the names export.views accepts.
var Views = []string{ViewReAct, ViewAct, ViewCoT, ViewStandard}

// newExporter is the one place a format name becomes an exporter.
func newExporter(dir, format, view string, cfg pipeline.ExportConfig) (fileExporter, error) {
	switch format {
	case "arrow":
		return NewArrowDataset(dir, view, cfg), nil
	case "arrow-file":
		return NewArrowFile(dir, view), nil
	case "parquet":
		return NewParquet(dir, view, cfg), nil
	}
	if _, ok := jsonlFormats[format]; ok {
		return NewJSONL(dir, format, view, cfg)
	}
	return nil, &pipeline.ConfigError{Key: "export.formats", Message: fmt.Sprintf("%q is not one of %v", format, Formats())}
}

// RunOptions is what the export stage needs.
type RunOptions struct {
	Config pipeline.ExportConfig
	Dir    string // the run's export/ directory
	// Kept opens the stream of kept episodes; Run opens it once.
	Kept func() iter.Seq2[pipeline.Episode, error]
	// Rejected opens the stream of rejected episodes, for export.pairs; nil means none.
	Rejected func() iter.Seq2[pipeline.Rejected, error]
	Card     CardInfo
	Logger   *slog.Logger // nil: discard
	// Commit puts the finished generation, the folder staged (beside Dir, holding exactly
	// res.Files), in Dir's place, so that Dir holds one export whole and nothing of an
	// earlier one. nil: swapDir. The export stage commits through the run's journal
	// (pipeline.Run.Commit), which a kill cannot leave half done.
	Commit func(staged string, res Result) error
}

// asideOf is where the export at dir goes while the one staged in staged takes its place
// in the run's journaled commit: ".<dir>.old-<the staging folder's suffix>", a name no
// other commit uses.
func asideOf(dir, staged string) string {
	suffix := strings.TrimPrefix(filepath.Base(staged), "."+filepath.Base(dir)+".tmp-")
	return filepath.Join(filepath.Dir(dir), dirswap.AsidePrefix(filepath.Base(dir))+suffix)
}

// swapDir is the Commit without a run: the staged folder takes Dir's place
// (dirswap.Replace) and the previous export is removed.
func swapDir(dir string) func(staged string, res Result) error {
	return func(staged string, _ Result) error {
		if err := dirswap.Replace(staged, dir); err != nil {
			return fmt.Errorf("move the export into place: %w", err)
		}
		return nil
	}
}

// Result is what the export wrote, for the manifest.
type Result struct {
	Files    []File         // every file, paths relative to Dir
	Examples int            // episodes exported (in at least one view)
	Splits   map[string]int // episodes exported per split
	ByView   map[string]int // examples per view
	// Masked counts, per view, the assistant turns of masked steps (no loss; openai-chat
	// weight 0), and Trained the assistant turns that carry loss.
	Masked  map[string]int
	Trained map[string]int
	// Outside counts, per view, the exported episodes the view cannot hold (InView): a
	// react-cot-sc episode answered by CoT-SC is in the cot view, never in react.
	Outside map[string]int
	Pairs   int // preference pairs written
	// Dropped counts the kept episodes left out of every view, by reason: "max_tokens"
	// when a rendering of it has more than export.max_tokens tokens.
	Dropped map[string]int
	// Tokenizer names the counter of the token figures.
	Tokenizer string
}

// views returns the configured views, react when none.
func views(cfg pipeline.ExportConfig) ([]string, error) {
	if len(cfg.Views) == 0 {
		return []string{ViewReAct}, nil
	}
	seen := map[string]bool{}
	for _, v := range cfg.Views {
		if !slices.Contains(Views, v) {
			return nil, &pipeline.ConfigError{Key: "export.views", Message: fmt.Sprintf("%q is not one of %s", v, strings.Join(Views, ", "))}
		}
		if seen[v] {
			return nil, &pipeline.ConfigError{Key: "export.views", Message: fmt.Sprintf("%q is named twice", v)}
		}
		seen[v] = true
	}
	return cfg.Views, nil
}

// Run is the export stage. It reads the kept episodes once, renders and validates every
// example of every view and streams it into every format at once, one goroutine per
// output, then re-reads what it wrote to check the loss masks. Everything is written
// under a staging directory inside Dir and renamed into place only when all of it
// succeeded, so an invalid example fails the export (with its id) and on any error
// nothing new stands under a final name.
func Run(ctx context.Context, opts RunOptions) (Result, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg, vs, chat, counter, err := checkRun(opts)
	if err != nil {
		return Result{}, err
	}
	defer paceGC()()
	ropts := RenderOptions{System: cfg.System, TrainObservations: cfg.TrainObservations, Reasoning: cfg.Reasoning}
	vopts := ValidateOptions{CorrectOnly: cfg.CorrectOnly, TrainObservations: cfg.TrainObservations}
	wrong, err := wrongQuestions(cfg, opts.Rejected)
	if err != nil {
		return Result{}, err
	}
	stage, err := makeStage(opts.Dir)
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(stage) // nothing left to remove once the commit moved it

	t := tally{splits: map[string]int{}, wrong: wrong, chosen: map[string]string{}, dropped: map[string]int{},
		byView: map[string]int{}, outside: map[string]int{}, trained: map[string]int{}, masked: map[string]int{}, counter: counter,
		tasks: map[string]bool{}}
	files, err := writeAll(ctx, stage, cfg, vs, ropts, vopts, opts.Kept, chat, &t)
	if err != nil {
		return Result{}, err
	}
	res := Result{Examples: t.examples, Splits: t.splits, Dropped: t.dropped, Tokenizer: counter.Name(), ByView: t.byView, Outside: t.outside, Masked: t.masked, Trained: t.trained}
	if err := checkWritten(ctx, stage, cfg, files); err != nil {
		return Result{}, err
	}
	if res.Files, res.Pairs, err = writeBeside(stage, cfg, vs, ropts, opts, &t, files); err != nil {
		return Result{}, err
	}

	// Everything is written and checked: the new generation replaces the old as a whole.
	commit := opts.Commit
	if commit == nil {
		commit = swapDir(opts.Dir)
	}
	if err := commit(stage, res); err != nil {
		return Result{}, err
	}
	if n := res.Dropped["max_tokens"]; n > 0 {
		log.Warn("episodes over export.max_tokens were left out", "dropped", n, "max_tokens", cfg.MaxTokens, "tokenizer", res.Tokenizer)
	}
	log.Info("export done", "dir", opts.Dir, "examples", res.Examples, "views", len(vs),
		"train", res.Splits[SplitTrain], "validation", res.Splits[SplitValidation], "files", len(res.Files), "pairs", res.Pairs)
	return res, nil
}

// checkRun checks Run's options and returns the config Run uses (chat-text added to the
// formats when export.chat_template is set), its views, the chat template's renderer (nil
// without one) and the token counter.
func checkRun(opts RunOptions) (pipeline.ExportConfig, []string, *chatRenderer, bpe.Counter, error) {
	cfg := opts.Config
	fail := func(err error) (pipeline.ExportConfig, []string, *chatRenderer, bpe.Counter, error) {
		return cfg, nil, nil, nil, err
	}
	vs, err := views(cfg)
	if err != nil {
		return fail(err)
	}
	if len(cfg.Formats) == 0 && !cfg.Pairs {
		return fail(&pipeline.ConfigError{Key: "export.formats", Message: "must name at least one format"})
	}
	if _, err := jsonlExt(cfg.Compression); err != nil {
		return fail(err)
	}
	for _, f := range cfg.Formats {
		if _, ok := jsonlFormats[f]; !ok && f != "arrow" && f != "arrow-file" && f != "parquet" {
			return fail(&pipeline.ConfigError{Key: "export.formats", Message: fmt.Sprintf("%q is not one of %v", f, Formats())})
		}
	}
	if opts.Kept == nil {
		return fail(errors.New("export: no kept episodes stream"))
	}
	chat, err := loadChatTemplate(cfg)
	if err != nil {
		return fail(err)
	}
	switch {
	case chat != nil && !slices.Contains(cfg.Formats, ChatTextFormat):
		cfg.Formats = append(slices.Clone(cfg.Formats), ChatTextFormat)
	case chat == nil && slices.Contains(cfg.Formats, ChatTextFormat):
		return fail(&pipeline.ConfigError{Key: "export.formats", Message: ChatTextFormat + " is written by setting export.chat_template (the model's chat template that renders it), not named here"})
	}
	if cfg.MaxTokens < 0 {
		return fail(&pipeline.ConfigError{Key: "export.max_tokens", Message: fmt.Sprintf("must not be negative, got %d", cfg.MaxTokens)})
	}
	counter, err := bpe.Open(cfg.Tokenizer)
	if err != nil {
		return fail(&pipeline.ConfigError{Key: "export.tokenizer", Message: err.Error()})
	}
	return cfg, vs, chat, counter, nil
}

// makeStage makes the staging folder beside dir that the new generation is written into
// whole, and which then takes dir's place (RunOptions.Commit): a failed export leaves the
// previous one as it was. It first removes what a killed export left beside dir: its
// staging folders and a generation put aside (the run's lock keeps a live export out of
// this directory).
func makeStage(dir string) (string, error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("export dir %s: %w", dir, err)
	}
	base := filepath.Base(dir)
	atomicfile.RemoveStale(parent, nil, []string{"." + base + ".tmp-", dirswap.AsidePrefix(base)})
	stage, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return "", fmt.Errorf("export dir %s: %w", dir, err)
	}
	return stage, nil
}

// writeBeside writes what goes beside the training files, once they are written and
// checked: ADP's metadata, the preference pairs, the trainers' hand-off files, the plots,
// the compared charts and the dataset card. It returns every file of the export, and the
// pairs written.
func writeBeside(stage string, cfg pipeline.ExportConfig, vs []string, ropts RenderOptions, opts RunOptions, t *tally, files []File) ([]File, int, error) {
	if slices.Contains(cfg.Formats, "adp") {
		f, err := writeADPMetadata(stage, t.tasks)
		if err != nil {
			return nil, 0, err
		}
		files = append(files, f)
	}
	pairs := 0
	if cfg.Pairs && opts.Rejected != nil {
		for _, pf := range pairFormats {
			f, n, err := writePairs(stage, cfg, ropts, opts.Rejected, t.chosen, pf)
			if err != nil {
				return nil, 0, err
			}
			files = append(files, f)
			pairs = n
		}
	}
	masked := 0
	for _, k := range t.masked {
		masked += k
	}
	hand, err := writeHandoff(stage, cfg, files, masked)
	if err != nil {
		return nil, 0, err
	}
	files = append(files, hand...)
	plots, err := writePlots(stage, t, opts.Card.Summary.RejectReasons)
	if err != nil {
		return nil, 0, err
	}
	files = append(files, plots...)
	if cfg.CardCharts != "" {
		compared, err := copyCompareCharts(stage, cfg.CardCharts)
		if err != nil {
			return nil, 0, err
		}
		files = append(files, compared...)
	}
	card, err := renderCard(opts.Card, cfg, vs, files, t)
	if err != nil {
		return nil, 0, err
	}
	size, sum, err := writeWhole(filepath.Join(stage, "README.md"), card)
	if err != nil {
		return nil, 0, err
	}
	return append(files, File{Path: "README.md", Format: "card", Bytes: size, SHA256: sum}), pairs, nil
}

// unmaskableFormats are the configured formats that cannot leave an assistant turn
// untrained, so cannot hold an example with masked steps: openai-chat without
// export.weights, sharegpt and sharegpt-tools (LLaMA-Factory trains every assistant
// turn), hf-tools (no per-turn flag; the trainer's assistant mask decides), adp and atif
// (trajectories, with no loss mask; their converters train every agent action), and
// completion and alpaca under export.train_observations (one row, the whole trajectory).
func unmaskableFormats(cfg pipeline.ExportConfig) []string {
	var out []string
	for _, f := range cfg.Formats {
		switch f {
		case "openai-chat":
			if !cfg.Weights {
				out = append(out, "openai-chat without export.weights")
			}
		case "sharegpt", "sharegpt-tools", "hf-tools", "adp", "atif":
			out = append(out, f)
		case "completion", "alpaca":
			if cfg.TrainObservations {
				out = append(out, f+" with export.train_observations")
			}
		}
	}
	return out
}

// maskedNumbers lists the 1-based masked steps of ep, for messages.
func maskedNumbers(ep *pipeline.Episode) []int {
	out := make([]int, len(ep.MaskedSteps))
	for i, m := range ep.MaskedSteps {
		out[i] = m.Step
	}
	return out
}

// checkWritten re-reads every written file of a masked format and proves its loss mask.
func checkWritten(ctx context.Context, stage string, cfg pipeline.ExportConfig, files []File) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, f := range files {
		if !maskedFormats[f.Format] {
			continue
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			rows, err := checkMasks(filepath.Join(stage, filepath.FromSlash(f.Path)), f.Format, cfg.TrainObservations)
			if err != nil {
				return err
			}
			if rows != f.Rows {
				return fmt.Errorf("loss mask check %s: %d rows read back, %d written", f.Path, rows, f.Rows)
			}
			return nil
		})
	}
	return g.Wait()
}
