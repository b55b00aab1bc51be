package export

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/pipeline"
)

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
	byView, exps, err := openSinks(stage, cfg, vs)
	if err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, sinks := range byView {
		for _, s := range sinks {
			g.Go(func() error { return s.drain(gctx) })
		}
	}
	p := newProducer(cfg, vs, ropts, vopts, chat, t, byView)
	g.Go(func() error {
		defer p.closeSinks()
		return p.run(gctx, kept)
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

// sink is one exporter of a view and the channel of example batches its goroutine writes.
type sink struct {
	exp Exporter
	ch  chan []Example
}

// openSinks makes the exporters of every format of every view under stage, one sink per
// format and view but one for a view's arrow and parquet, which share their record
// batches (sharedBatches). It returns the sinks by view and the exporters in format order,
// for the file list.
func openSinks(stage string, cfg pipeline.ExportConfig, vs []string) ([][]*sink, []fileExporter, error) {
	byView := make([][]*sink, len(vs))
	var exps []fileExporter
	for i, v := range vs {
		add := func(exp Exporter) { byView[i] = append(byView[i], &sink{exp: exp, ch: make(chan []Example, 4)}) }
		var arrowDS *ArrowDataset
		var pq *Parquet
		for _, f := range cfg.Formats {
			exp, err := newExporter(stage, f, v, cfg)
			if err != nil {
				return nil, nil, err
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
	return byView, exps, nil
}

// drain writes every batch the sink receives and closes its exporter. After a write error
// it goes on receiving, so that the producer never blocks, and returns the error.
func (s *sink) drain(ctx context.Context) error {
	var werr error
	for batch := range s.ch {
		if werr != nil {
			continue
		}
		for i := range batch {
			if werr = s.exp.Write(ctx, batch[i]); werr != nil {
				break
			}
		}
	}
	if cerr := s.exp.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// producer is writeAll's reading goroutine: it renders each kept episode in every view,
// counts it in the tally and hands its examples to the views' sinks in batches. The
// batches are shared read-only by the sinks of a view.
type producer struct {
	cfg        pipeline.ExportConfig
	vs         []string
	ropts      RenderOptions
	vopts      ValidateOptions
	chat       *chatRenderer
	t          *tally
	byView     [][]*sink
	batches    [][]Example // per view, the batch being filled
	rendered   []Example   // per view, the episode's example
	in         []bool      // per view, whether it holds the episode
	memo       *memoCounter
	toolForm   bool     // a tool format is written: the token limit holds for its form too
	unmaskable []string // unmaskableFormats
	// interchange: both adp and atif are written, which lay out the same steps
	// (Example.interchange), once here for both.
	interchange bool
}

func newProducer(cfg pipeline.ExportConfig, vs []string, ropts RenderOptions, vopts ValidateOptions, chat *chatRenderer, t *tally, byView [][]*sink) *producer {
	return &producer{cfg: cfg, vs: vs, ropts: ropts, vopts: vopts, chat: chat, t: t, byView: byView,
		batches: make([][]Example, len(vs)), rendered: make([]Example, len(vs)), in: make([]bool, len(vs)),
		memo: &memoCounter{Counter: t.counter, counts: map[string]int{}},
		// With a tool format written, the limit holds for the tool form too, which
		// carries the tool definitions.
		toolForm:    slices.ContainsFunc(cfg.Formats, func(f string) bool { return strings.HasSuffix(f, "-tools") }),
		unmaskable:  unmaskableFormats(cfg),
		interchange: slices.Contains(cfg.Formats, "adp") && slices.Contains(cfg.Formats, "atif")}
}

// run renders and sends every kept episode, then the views' last batches.
func (p *producer) run(ctx context.Context, kept func() iter.Seq2[pipeline.Episode, error]) error {
	for ep, err := range kept() {
		if err != nil {
			return fmt.Errorf("read kept episodes: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.episode(ctx, &ep); err != nil {
			return err
		}
	}
	for i := range p.vs {
		if len(p.batches[i]) > 0 {
			if err := p.send(ctx, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// closeSinks tells every sink that nothing more comes.
func (p *producer) closeSinks() {
	for _, sinks := range p.byView {
		for _, s := range sinks {
			close(s.ch)
		}
	}
}

// send hands view i's batch to its sinks and starts the next.
func (p *producer) send(ctx context.Context, i int) error {
	for _, s := range p.byView[i] {
		select {
		case s.ch <- p.batches[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.batches[i] = make([]Example, 0, exampleBatch)
	return nil
}

// episode renders ep in every view and, unless a rendering is over export.max_tokens,
// counts it and adds its examples to the views' batches.
func (p *producer) episode(ctx context.Context, ep *pipeline.Episode) error {
	split := SplitOf(p.cfg.SplitSeed, ep.QuestionID, p.cfg.ValidationFraction)
	first, over, err := p.render(ep, split)
	if err != nil {
		return err
	}
	if over {
		p.t.dropped["max_tokens"]++
		return nil
	}
	for i, v := range p.vs {
		if !p.in[i] {
			p.t.outside[v]++
			continue
		}
		p.count(ep, v, &p.rendered[i])
		p.batches[i] = append(p.batches[i], p.rendered[i])
		if len(p.batches[i]) >= exampleBatch {
			if err := p.send(ctx, i); err != nil {
				return err
			}
		}
	}
	return p.tallyEpisode(ep, split, first)
}

// render renders ep in each view that holds it (p.in, p.rendered) and returns the first
// such view and whether a rendering is over export.max_tokens.
func (p *producer) render(ep *pipeline.Episode, split string) (first int, over bool, err error) {
	clear(p.memo.counts) // the views of one episode share their questions and observations
	first = -1
	for i, v := range p.vs {
		if p.in[i] = InView(ep, v); !p.in[i] {
			continue
		}
		ex, err := p.renderView(ep, v, split)
		if err != nil {
			return 0, false, err
		}
		over = over || (p.cfg.MaxTokens > 0 && ex.Tokens > int64(p.cfg.MaxTokens))
		if p.toolForm && p.cfg.MaxTokens > 0 && !over {
			over = ToolChatTokens(p.memo, &ex) > p.cfg.MaxTokens
		}
		p.rendered[i] = ex
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return 0, false, &ValidationError{ID: ep.ID, View: strings.Join(p.vs, ", "), Reason: notInView(ep, strings.Join(p.vs, " or ")).Error() +
			"; add a view that holds it to export.views, or leave such episodes out with the filter rule answered_by (filter.answered_by)"}
	}
	return first, over, nil
}

// renderView renders and validates ep's example in view v and counts its tokens.
func (p *producer) renderView(ep *pipeline.Episode, v, split string) (Example, error) {
	ex, err := Render(*ep, v, p.ropts)
	if err != nil {
		return Example{}, err
	}
	ex.Split = split
	if err := Validate(&ex, p.vopts); err != nil {
		return Example{}, err
	}
	if len(ex.masked) > 0 && len(p.unmaskable) > 0 {
		return Example{}, &ValidationError{ID: ep.ID, View: v, Reason: fmt.Sprintf("steps %v are masked (filter.mask_steps), but %s cannot leave a turn untrained; "+
			"set export.weights (openai-chat), drop those formats from export.formats, or drop filter.mask_steps", maskedNumbers(ep), strings.Join(p.unmaskable, ", "))}
	}
	ex.Tokens = int64(ChatTokens(p.memo, ex.Messages))
	if p.chat != nil {
		// The text the model trains on is the template's: count that.
		if err := p.chat.render(&ex); err != nil {
			return Example{}, err
		}
		ex.Tokens = int64(p.memo.Count(ex.chatText))
	}
	if p.interchange {
		ex.interchange = interchangeSteps(&ex)
	}
	return ex, nil
}

// count adds ep's example in view v to the tally, and keeps its completion as the chosen
// side of a preference pair when ep's question has a wrong trajectory.
func (p *producer) count(ep *pipeline.Episode, v string, ex *Example) {
	t := p.t
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
}

// tallyEpisode counts an exported episode, whose first view is first; with no react view
// exported, it renders one for the chosen side of a pair.
func (p *producer) tallyEpisode(ep *pipeline.Episode, split string, first int) error {
	t := p.t
	t.steps = append(t.steps, len(ep.Steps))
	for _, st := range ep.Steps {
		if st.Reasoning != "" {
			t.reasoning++
		}
	}
	t.tokens = append(t.tokens, int(p.rendered[first].Tokens))
	if t.wrong[ep.QuestionID] && !slices.Contains(p.vs, ViewReAct) && InView(ep, ViewReAct) && len(ep.MaskedSteps) == 0 {
		if _, ok := t.chosen[ep.QuestionID]; !ok {
			ex, err := Render(*ep, ViewReAct, p.ropts)
			if err != nil {
				return err
			}
			t.chosen[ep.QuestionID] = ex.Completion()
		}
	}
	t.examples++
	t.splits[split]++
	t.tasks[ep.Task] = true
	return nil
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
