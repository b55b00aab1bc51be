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

	"github.com/reactgen/reactgen/internal/bpe"
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

// asideOf is where the export at dir goes while the one staged in staged takes its place:
// ".<dir>.old-<the staging folder's suffix>", a name no other commit uses.
func asideOf(dir, staged string) string {
	suffix := strings.TrimPrefix(filepath.Base(staged), "."+filepath.Base(dir)+".tmp-")
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".old-"+suffix)
}

// swapDir is the Commit without a run: Dir, when it exists, is renamed aside, the staged
// folder takes its name, and the old one is removed.
func swapDir(dir string) func(staged string, res Result) error {
	return func(staged string, _ Result) error {
		aside := ""
		if _, err := os.Lstat(dir); err == nil {
			aside = asideOf(dir, staged)
			if err := os.Rename(dir, aside); err != nil {
				return fmt.Errorf("put the previous export aside: %w", err)
			}
		}
		if err := os.Rename(staged, dir); err != nil {
			if aside != "" {
				os.Rename(aside, dir)
			}
			return fmt.Errorf("move the export into place: %w", err)
		}
		if aside != "" {
			return os.RemoveAll(aside)
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
	cfg := opts.Config
	vs, err := views(cfg)
	if err != nil {
		return Result{}, err
	}
	if len(cfg.Formats) == 0 && !cfg.Pairs {
		return Result{}, &pipeline.ConfigError{Key: "export.formats", Message: "must name at least one format"}
	}
	if _, err := jsonlExt(cfg.Compression); err != nil {
		return Result{}, err
	}
	for _, f := range cfg.Formats {
		if _, ok := jsonlFormats[f]; !ok && f != "arrow" && f != "arrow-file" && f != "parquet" {
			return Result{}, &pipeline.ConfigError{Key: "export.formats", Message: fmt.Sprintf("%q is not one of %v", f, Formats())}
		}
	}
	if opts.Kept == nil {
		return Result{}, errors.New("export: no kept episodes stream")
	}
	chat, err := loadChatTemplate(cfg)
	if err != nil {
		return Result{}, err
	}
	switch {
	case chat != nil && !slices.Contains(cfg.Formats, ChatTextFormat):
		cfg.Formats = append(slices.Clone(cfg.Formats), ChatTextFormat)
	case chat == nil && slices.Contains(cfg.Formats, ChatTextFormat):
		return Result{}, &pipeline.ConfigError{Key: "export.formats", Message: ChatTextFormat + " is written by setting export.chat_template (the model's chat template that renders it), not named here"}
	}
	if cfg.MaxTokens < 0 {
		return Result{}, &pipeline.ConfigError{Key: "export.max_tokens", Message: fmt.Sprintf("must not be negative, got %d", cfg.MaxTokens)}
	}
	counter, err := bpe.Open(cfg.Tokenizer)
	if err != nil {
		return Result{}, &pipeline.ConfigError{Key: "export.tokenizer", Message: err.Error()}
	}
	ropts := RenderOptions{System: cfg.System, TrainObservations: cfg.TrainObservations, Reasoning: cfg.Reasoning}
	vopts := ValidateOptions{CorrectOnly: cfg.CorrectOnly, TrainObservations: cfg.TrainObservations}

	// Pairs, pass 1: which questions have a wrong finished trajectory.
	var wrong map[string]bool
	if cfg.Pairs && opts.Rejected != nil {
		wrong = map[string]bool{}
		for r, err := range opts.Rejected() {
			if err != nil {
				return Result{}, fmt.Errorf("read rejected episodes: %w", err)
			}
			if isWrongAnswer(&r) {
				wrong[r.QuestionID] = true
			}
		}
	}

	// The new generation is written whole into a staging folder beside Dir, which then
	// takes Dir's place (opts.Commit): a failed export leaves the previous one as it was.
	parent := filepath.Dir(opts.Dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Result{}, fmt.Errorf("export dir %s: %w", opts.Dir, err)
	}
	// What a killed export left beside Dir: its staging folders and a generation put
	// aside (the run's lock keeps a live export out of this directory).
	base := filepath.Base(opts.Dir)
	pipeline.RemoveStale(parent, nil, []string{"." + base + ".tmp-", "." + base + ".old-"})
	stage, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return Result{}, fmt.Errorf("export dir %s: %w", opts.Dir, err)
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
	chosen := t.chosen
	if err := checkWritten(ctx, stage, cfg, files); err != nil {
		return Result{}, err
	}
	if slices.Contains(cfg.Formats, "adp") {
		f, err := writeADPMetadata(stage, t.tasks)
		if err != nil {
			return Result{}, err
		}
		files = append(files, f)
	}
	if cfg.Pairs && opts.Rejected != nil {
		for _, pf := range pairFormats {
			f, n, err := writePairs(stage, cfg, ropts, opts.Rejected, chosen, pf)
			if err != nil {
				return Result{}, err
			}
			files = append(files, f)
			res.Pairs = n
		}
	}
	masked := 0
	for _, k := range t.masked {
		masked += k
	}
	hand, err := writeHandoff(stage, cfg, files, masked)
	if err != nil {
		return Result{}, err
	}
	files = append(files, hand...)
	plots, err := writePlots(stage, &t, opts.Card.Summary.RejectReasons)
	if err != nil {
		return Result{}, err
	}
	files = append(files, plots...)
	if cfg.CardCharts != "" {
		compared, err := copyCompareCharts(stage, cfg.CardCharts)
		if err != nil {
			return Result{}, err
		}
		files = append(files, compared...)
	}
	card, err := renderCard(opts.Card, cfg, vs, files, &t)
	if err != nil {
		return Result{}, err
	}
	size, sum, err := writeWhole(filepath.Join(stage, "README.md"), card)
	if err != nil {
		return Result{}, err
	}
	files = append(files, File{Path: "README.md", Format: "card", Bytes: size, SHA256: sum})

	// Everything is written and checked: the new generation replaces the old as a whole.
	res.Files = files
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
		"train", res.Splits[SplitTrain], "validation", res.Splits[SplitValidation], "files", len(files), "pairs", res.Pairs)
	return res, nil
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

// isWrongAnswer reports whether a rejected episode is a failed trajectory usable as the
// rejected side of a preference pair: it finished, with a wrong answer.
func isWrongAnswer(r *pipeline.Rejected) bool {
	return r.Finished && !r.Correct && r.StopReason == pipeline.StopFinished && r.Walked()
}

// exampleBatch is the unit sent to each exporter's goroutine; batches are shared
// read-only between the exporters of a view.
const exampleBatch = 64

// tally is what the writing pass counts, for the Result and for pairs. Only the
// producer goroutine touches it until writeAll returns.
type tally struct {
	examples int
	splits   map[string]int
	wrong    map[string]bool   // questions with a wrong finished trajectory (pairs)
	chosen   map[string]string // question id -> the chosen completion, for pairs
	dropped  map[string]int    // episodes left out, by reason
	byView   map[string]int    // examples per view
	trained  map[string]int    // per view, assistant turns that carry loss
	masked   map[string]int    // per view, assistant turns masked (weight 0)
	outside  map[string]int    // per view, exported episodes it cannot hold (InView)
	// reasoning counts the steps of the exported episodes that carry a reasoning text.
	reasoning int
	counter   bpe.Counter
	// Per exported episode, for the card's plots: the steps, and the tokens of its
	// first view's chat.
	steps  []int
	tokens []int
	tasks  map[string]bool // the tasks of the exported episodes (adp's metadata)
}

// writeAll reads the kept episodes once, renders and validates each in every view, and
// streams the examples into one exporter per format and view, each run by its own
// goroutine. It returns the files they wrote; the first invalid example stops it with
// its *ValidationError.
func writeAll(ctx context.Context, stage string, cfg pipeline.ExportConfig, vs []string, ropts RenderOptions,
	vopts ValidateOptions, kept func() iter.Seq2[pipeline.Episode, error], chat *chatRenderer, t *tally) ([]File, error) {
	type sink struct {
		exp Exporter
		ch  chan []Example
	}
	g, gctx := errgroup.WithContext(ctx)
	byView := make([][]*sink, len(vs))
	var all []*sink
	var exps []fileExporter // in format order, for the file list
	for i, v := range vs {
		add := func(exp Exporter) {
			s := &sink{exp: exp, ch: make(chan []Example, 4)}
			byView[i] = append(byView[i], s)
			all = append(all, s)
		}
		var arrowDS *ArrowDataset
		var pq *Parquet
		for _, f := range cfg.Formats {
			exp, err := newExporter(stage, f, v, cfg)
			if err != nil {
				return nil, err
			}
			exps = append(exps, exp)
			switch e := exp.(type) {
			case *ArrowDataset:
				arrowDS = e
			case *Parquet:
				pq = e
			default:
				add(exp)
			}
		}
		switch {
		case arrowDS != nil && pq != nil:
			add(newSharedBatches(cfg, arrowDS, pq))
		case arrowDS != nil:
			add(arrowDS)
		case pq != nil:
			add(pq)
		}
	}
	for _, s := range all {
		g.Go(func() error {
			var werr error
			for batch := range s.ch {
				if werr != nil {
					continue // drain so the producer never blocks
				}
				for i := range batch {
					if werr = s.exp.Write(gctx, batch[i]); werr != nil {
						break
					}
				}
			}
			if cerr := s.exp.Close(); werr == nil {
				werr = cerr
			}
			return werr
		})
	}
	g.Go(func() error {
		defer func() {
			for _, s := range all {
				close(s.ch)
			}
		}()
		batches := make([][]Example, len(vs))
		rendered := make([]Example, len(vs))
		memo := &memoCounter{Counter: t.counter, counts: map[string]int{}}
		// With a tool format written, the limit holds for the tool form too, which
		// carries the tool definitions.
		toolForm := slices.ContainsFunc(cfg.Formats, func(f string) bool { return strings.HasSuffix(f, "-tools") })
		in := make([]bool, len(vs)) // the views that hold the episode
		unmaskable := unmaskableFormats(cfg)
		send := func(i int) error {
			for _, s := range byView[i] {
				select {
				case s.ch <- batches[i]:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			batches[i] = make([]Example, 0, exampleBatch)
			return nil
		}
		for ep, err := range kept() {
			if err != nil {
				return fmt.Errorf("read kept episodes: %w", err)
			}
			if err := gctx.Err(); err != nil {
				return err
			}
			split := SplitOf(cfg.SplitSeed, ep.QuestionID, cfg.ValidationFraction)
			clear(memo.counts) // the views of one episode share their questions and observations
			first := -1        // the first view that holds ep
			over := false
			for i, v := range vs {
				if in[i] = InView(&ep, v); !in[i] {
					continue
				}
				ex, err := Render(ep, v, ropts)
				if err != nil {
					return err
				}
				ex.Split = split
				if err := Validate(&ex, vopts); err != nil {
					return err
				}
				if len(ex.masked) > 0 && len(unmaskable) > 0 {
					return &ValidationError{ID: ep.ID, View: v, Reason: fmt.Sprintf("steps %v are masked (filter.mask_steps), but %s cannot leave a turn untrained; "+
						"set export.weights (openai-chat), drop those formats from export.formats, or drop filter.mask_steps", maskedNumbers(&ep), strings.Join(unmaskable, ", "))}
				}
				ex.Tokens = int64(ChatTokens(memo, ex.Messages))
				if chat != nil {
					// The text the model trains on is the template's: count that.
					if err := chat.render(&ex); err != nil {
						return err
					}
					ex.Tokens = int64(memo.Count(ex.chatText))
				}
				over = over || (cfg.MaxTokens > 0 && ex.Tokens > int64(cfg.MaxTokens))
				if toolForm && cfg.MaxTokens > 0 && !over {
					over = ToolChatTokens(memo, &ex) > cfg.MaxTokens
				}
				rendered[i] = ex
				if first < 0 {
					first = i
				}
			}
			if first < 0 {
				return &ValidationError{ID: ep.ID, View: strings.Join(vs, ", "), Reason: notInView(&ep, strings.Join(vs, " or ")).Error() +
					"; add a view that holds it to export.views, or leave such episodes out with the filter rule answered_by (filter.answered_by)"}
			}
			if over {
				t.dropped["max_tokens"]++
				continue
			}
			for i, v := range vs {
				if !in[i] {
					t.outside[v]++
					continue
				}
				ex := rendered[i]
				t.byView[v]++
				t.masked[v] += len(ex.masked)
				for _, m := range ex.Messages {
					if m.Role == RoleAssistant && m.Trainable {
						t.trained[v]++
					}
				}
				if v == ViewReAct && t.wrong[ep.QuestionID] && len(ex.masked) == 0 {
					if _, ok := t.chosen[ep.QuestionID]; !ok {
						t.chosen[ep.QuestionID] = ex.Completion()
					}
				}
				batches[i] = append(batches[i], ex)
				if len(batches[i]) >= exampleBatch {
					if err := send(i); err != nil {
						return err
					}
				}
			}
			t.steps = append(t.steps, len(ep.Steps))
			for _, st := range ep.Steps {
				if st.Reasoning != "" {
					t.reasoning++
				}
			}
			t.tokens = append(t.tokens, int(rendered[first].Tokens))
			if t.wrong[ep.QuestionID] && !slices.Contains(vs, ViewReAct) && InView(&ep, ViewReAct) && len(ep.MaskedSteps) == 0 {
				if _, ok := t.chosen[ep.QuestionID]; !ok {
					ex, err := Render(ep, ViewReAct, ropts)
					if err != nil {
						return err
					}
					t.chosen[ep.QuestionID] = ex.Completion()
				}
			}
			t.examples++
			t.splits[split]++
			t.tasks[ep.Task] = true
		}
		for i := range vs {
			if len(batches[i]) > 0 {
				if err := send(i); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var files []File
	for _, e := range exps {
		files = append(files, e.Files()...)
	}
	return files, nil
}

// memoCounter counts each distinct text once; writeAll clears it per episode.
type memoCounter struct {
	bpe.Counter
	counts map[string]int
}

func (m *memoCounter) Count(s string) int {
	if n, ok := m.counts[s]; ok {
		return n
	}
	n := m.Counter.Count(s)
	m.counts[s] = n
	return n
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

// pairFormat is one file of preference pairs: its name and the row written from the
// prompt, the chosen and the rejected completion.
type pairFormat struct {
	name, format string
	row          func(system, prompt, chosen, rejected string) any
}

// pairRow is a line of pairs.jsonl, TRL's standard preference format.
type pairRow struct {
	Prompt   string `json:"prompt"`
	Chosen   string `json:"chosen"`
	Rejected string `json:"rejected"`
}

// pairMessage, pairMessages and openAIPairRow are a line of pairs-openai.jsonl, OpenAI's
// preference fine-tuning format.
type pairMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type pairMessages struct {
	Messages []pairMessage `json:"messages"`
}

type openAIPairRow struct {
	Input        pairMessages  `json:"input"`
	Preferred    []pairMessage `json:"preferred_output"`
	NonPreferred []pairMessage `json:"non_preferred_output"`
}

// pairFormats: TRL's standard preference format, and OpenAI's preference fine-tuning
// format (the conversation so far as input, one assistant message on each side).
var pairFormats = []pairFormat{
	{"pairs", "pairs", func(_, prompt, chosen, rejected string) any {
		return pairRow{Prompt: prompt, Chosen: chosen, Rejected: rejected}
	}},
	{"pairs-openai", "pairs-openai", func(system, prompt, chosen, rejected string) any {
		in := []pairMessage{}
		if system != "" {
			in = append(in, pairMessage{RoleSystem, system})
		}
		in = append(in, pairMessage{RoleUser, strings.TrimSuffix(prompt, "\n")})
		return openAIPairRow{Input: pairMessages{in}, Preferred: []pairMessage{{RoleAssistant, chosen}},
			NonPreferred: []pairMessage{{RoleAssistant, rejected}}}
	}},
}

// writePairs writes one pairs file: for each wrong finished trajectory of a question that
// also has a kept one, a row with the kept trajectory chosen and the wrong one rejected.
func writePairs(stage string, cfg pipeline.ExportConfig, ropts RenderOptions,
	rejected func() iter.Seq2[pipeline.Rejected, error], chosen map[string]string, pf pairFormat) (File, int, error) {
	ext, err := jsonlExt(cfg.Compression)
	if err != nil {
		return File{}, 0, err
	}
	rel := pf.name + ext
	out, err := createOut(filepath.Join(stage, rel))
	if err != nil {
		return File{}, 0, err
	}
	enc, err := newJSONLEncoder(out, cfg.Compression, nil, lineOptions{})
	if err != nil {
		out.close()
		return File{}, 0, err
	}
	n := 0
	for r, err := range rejected() {
		if err != nil {
			out.close()
			return File{}, 0, fmt.Errorf("read rejected episodes: %w", err)
		}
		c, ok := chosen[r.QuestionID]
		if !ok || !isWrongAnswer(&r) {
			continue
		}
		ex, err := Render(r.Episode, ViewReAct, ropts)
		if err != nil {
			out.close()
			return File{}, 0, err
		}
		prompt := ex.Prompt()
		if pf.format == "pairs" {
			prompt = completionPrompt(&ex, cfg.System)
		}
		if _, err := enc.writeRow(pf.row(cfg.System, prompt, c, ex.Completion())); err != nil {
			out.close()
			return File{}, 0, fmt.Errorf("write %s: %w", rel, err)
		}
		n++
	}
	if err := enc.finish(); err != nil {
		out.close()
		return File{}, 0, fmt.Errorf("write %s: %w", rel, err)
	}
	size, sum, err := out.close()
	if err != nil {
		return File{}, 0, err
	}
	return File{Path: rel, Format: pf.format, Rows: n, Bytes: size, SHA256: sum}, n, nil
}
