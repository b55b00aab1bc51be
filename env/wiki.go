package env

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/python"
	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// Observation modes: Options.Observations, the config key env.observations.
const (
	// ObservationsPaper answers as the paper's environment does (wikienv.py and
	// wrappers.py), byte for byte; docs/paper-fidelity.md lists what that means.
	ObservationsPaper = "paper"
	// ObservationsRules is reactgen's own: the project's sentence splitter, bracketed
	// misses, disambiguation pages shown as lists, a failed Search leaving no page,
	// messages that say what to do, and observations cut at MaxObservationChars.
	ObservationsRules = "rules"
)

// Action modes: Options.Actions, the config key env.actions.
const (
	ActionsPaper   = "paper"   // ParsePaperAction: the paper's startswith/endswith test
	ActionsLenient = "lenient" // ParseAction: any case, trailing text, a missing ']'
)

// ObservationModes and ActionModes list the accepted values, the default first.
var (
	ObservationModes = []string{ObservationsPaper, ObservationsRules}
	ActionModes      = []string{ActionsPaper, ActionsLenient}
)

// Options tune a Wiki.
type Options struct {
	Task         string // pipeline.TaskFEVER canonicalises Finish labels (score.Label)
	Observations string // ObservationsPaper (also "") or ObservationsRules
	Actions      string // ActionsPaper (also "") or ActionsLenient
	// Gold is the episode's gold answer. A paper Finish observation says reward = 1 when
	// the answer scores correct against it (score.Score, the official exact match), and
	// reward = 0 otherwise or when Gold is empty.
	Gold      string
	Sentences int // sentences a successful Search shows; 0 means 5, as in the paper
	// MaxObservationChars cuts rules observations longer than this many characters and
	// marks the cut; 0 means no limit. Paper observations are never cut.
	MaxObservationChars int
}

// OptionsFor returns the options of the config's environment for task; the caller sets
// Gold per episode.
func OptionsFor(task string, c pipeline.EnvConfig) Options {
	return Options{Task: task, Observations: c.Observations, Actions: c.Actions, Sentences: c.Sentences,
		MaxObservationChars: c.MaxObservationChars}
}

// DisambiguationSuffix ends the title of Wikipedia's disambiguation pages. A rules
// Search for a missing title X shows the page "X (disambiguation)" when there is one;
// wikienv.py has no such fallback, and paper mode neither.
const DisambiguationSuffix = "(disambiguation)"

// SimilarCount is how many similar titles a failed Search lists, as in the paper.
const SimilarCount = 5

// truncMarker ends an observation that was cut to Options.MaxObservationChars.
const truncMarker = " [...]"

// NoPageObservation answers a rules Lookup before any successful Search.
const NoPageObservation = "There is no page to look up in yet. Search for an entity first."

// Paper observations that are fixed strings, as wikienv.py writes them (with their
// trailing newline, which leaves a blank line in the notebooks' prompts).
const (
	PaperNoMoreResults = "No more results.\n"
	paperFinished      = "Episode finished, reward = %d\n"
)

// maxRedirects bounds the paper's re-search of a disambiguation page as "[entity]",
// which wikienv.py repeats without end while the answer is another one; no corpus title
// holds brackets around a disambiguation page, so one re-search is all that happens.
const maxRedirects = 3

// Wiki is the environment of one episode: the page it is on and its lookup position over
// a shared Corpus. It is not safe for concurrent use; make one per episode.
type Wiki struct {
	corpus Corpus
	opts   Options
	paper  bool // paper observations
	page   *Page
	// sentences are what Lookup walks: the page's Sentences (rules) or PaperSentences of
	// its text (paper).
	sentences []string
	keyword   string // the keyword of the lookup in progress (rules: lower-cased)
	lookingUp bool   // a lookup is in progress (paper: keyword may be empty)
	matches   []int  // indices of sentences that contain keyword
	cursor    int    // how many of matches have been shown
	done      bool
}

// New returns a fresh episode environment over c.
func New(c Corpus, opts Options) *Wiki {
	if opts.Sentences <= 0 {
		opts.Sentences = 5
	}
	if opts.Observations == "" {
		opts.Observations = ObservationsPaper
	}
	if opts.Actions == "" {
		opts.Actions = ActionsPaper
	}
	return &Wiki{corpus: c, opts: opts, paper: opts.Observations != ObservationsRules}
}

// Parse parses an action in the Wiki's action mode.
func (w *Wiki) Parse(raw string) Action {
	if w.opts.Actions == ActionsLenient {
		return ParseAction(raw)
	}
	return ParsePaperAction(raw)
}

// Step performs one action given as the agent wrote it and returns the observation. An
// invalid action is answered with an observation, not an error: the error return is only
// for corpus failures (a cancelled ctx, a backend that is down). After Finish, Step
// returns ErrDone.
func (w *Wiki) Step(ctx context.Context, raw string) (Result, error) {
	if w.done {
		return Result{}, ErrDone
	}
	a := w.Parse(raw)
	res := Result{Action: a}
	var err error
	switch a.Type {
	case pipeline.ActionSearch:
		if w.paper {
			res.Observation, err = w.paperSearch(ctx, a.Argument, 0)
		} else {
			res.Observation, err = w.search(ctx, a.Argument)
		}
		if err != nil {
			return Result{}, fmt.Errorf("search %q: %w", a.Argument, err)
		}
	case pipeline.ActionLookup:
		res.Observation = w.lookup(a.Argument)
	case pipeline.ActionFinish:
		w.done = true
		res.Done = true
		res.Answer = a.Argument
		if w.opts.Task == pipeline.TaskFEVER {
			res.Answer, _ = score.Label(a.Argument)
		}
		res.Observation = "Episode finished."
		if w.paper {
			res.Observation = fmt.Sprintf(paperFinished, w.reward(a.Argument))
		}
	default:
		switch {
		case w.paper && a.paper != "":
			res.Observation = "Invalid action: " + a.paper
		case w.paper:
			res.Observation = "Invalid action: " + python.Strip(raw)
		default:
			res.Observation = "Invalid action: " + strings.TrimSpace(raw) +
				". Valid actions are Search[<entity>], Lookup[<keyword>] and Finish[<answer>]."
		}
	}
	if !w.paper {
		res.Observation = w.cut(res.Observation)
	}
	return res, nil
}

// reward is the paper's reward for answer: 1 when it scores correct against the gold
// answer, as wrappers.py's get_reward decides (normalize_answer equality, for HotpotQA
// and FEVER alike), else 0.
func (w *Wiki) reward(answer string) int {
	if w.opts.Gold == "" {
		return 0
	}
	if ok, _, _ := score.Score(w.opts.Task, answer, w.opts.Gold); ok {
		return 1
	}
	return 0
}

// paperSearch is wikienv.py's search_step over the corpus: a page whose text says "may
// refer to:" is searched again as "[entity]"; a miss lists similar titles and keeps the
// current page and its lookup; a hit shows the first sentences and ends any lookup.
func (w *Wiki) paperSearch(ctx context.Context, entity string, redirects int) (string, error) {
	p, ok, err := w.corpus.Page(ctx, entity, MatchPaper)
	if err != nil {
		return "", err
	}
	if !ok {
		titles, err := w.corpus.Similar(ctx, entity, SimilarCount)
		if err != nil {
			return "", err
		}
		return "Could not find " + entity + ". Similar: " + python.ListRepr(titles[:min(len(titles), SimilarCount)]) + ".", nil
	}
	text := PageText(p)
	if strings.Contains(text, "may refer to:") && redirects < maxRedirects {
		return w.paperSearch(ctx, "["+entity+"]", redirects+1)
	}
	w.page, w.sentences = &p, PaperSentences(text)
	w.keyword, w.lookingUp, w.matches, w.cursor = "", false, nil, 0
	return strings.Join(w.sentences[:min(w.opts.Sentences, len(w.sentences))], " "), nil
}

// PaperSentences splits a page's text as wikienv.py does: lines of two words or fewer
// are dropped (the page is built from paragraphs of more than two words), each other
// line is stripped and split at every ". ", and each non-empty piece, stripped, gets a
// full stop. So "Dr. Ada Vint" is two pieces, and a line that ends with a full stop
// ends in "..".
func PaperSentences(text string) []string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		line = python.Strip(line)
		if strings.Count(line, " ") < 2 {
			continue
		}
		for piece := range strings.SplitSeq(line, ". ") {
			if piece = python.Strip(piece); piece != "" {
				out = append(out, piece+".")
			}
		}
	}
	return out
}

// search is reactgen's own Search: a title found by MatchRules or, when there is none,
// the page "<title> (disambiguation)"; a miss lists similar titles and leaves no page.
func (w *Wiki) search(ctx context.Context, entity string) (string, error) {
	p, ok, err := w.corpus.Page(ctx, entity, MatchRules)
	if err == nil && !ok && !strings.HasSuffix(NormalizeTitle(entity), DisambiguationSuffix) {
		p, ok, err = w.corpus.Page(ctx, CleanTitle(entity)+" "+DisambiguationSuffix, MatchRules)
	}
	if err != nil {
		return "", err
	}
	w.keyword, w.lookingUp, w.matches, w.cursor = "", false, nil, 0
	if !ok {
		w.page, w.sentences = nil, nil
		titles, err := w.corpus.Similar(ctx, entity, SimilarCount)
		if err != nil {
			return "", err
		}
		if len(titles) > SimilarCount {
			titles = titles[:SimilarCount]
		}
		return "Could not find [" + entity + "]. Similar: " + python.ListRepr(titles) + ".", nil
	}
	w.page, w.sentences = &p, p.Sentences
	if p.Disambiguation {
		return disambiguation(p), nil
	}
	if len(p.Sentences) == 0 {
		return "The page " + p.Title + " has no text.", nil
	}
	n := min(w.opts.Sentences, len(p.Sentences))
	return strings.Join(p.Sentences[:n], " "), nil
}

// disambiguation renders a disambiguation page the way Wikipedia opens one: "X may refer
// to: A, B, C." Pages whose text already says "may refer to" are shown as they are.
func disambiguation(p Page) string {
	text := strings.Join(p.Sentences, " ")
	if i := strings.Index(strings.ToLower(text), "may refer to"); i >= 0 && i <= len(p.Title)+40 {
		return text
	}
	items := make([]string, 0, len(p.Sentences))
	for _, s := range p.Sentences {
		if s = strings.TrimRight(strings.TrimSpace(s), ".;,"); s != "" {
			items = append(items, s)
		}
	}
	return p.Title + " may refer to: " + strings.Join(items, ", ") + "."
}

// lookup walks the sentences that contain keyword, ignoring case as wikienv.py does
// (keyword.lower() in sentence.lower(), with Python's str.lower). A new keyword starts
// the walk again: in paper mode a keyword differs when its text differs at all (case
// included), as in wikienv.py; in rules mode when it differs other than in case.
func (w *Wiki) lookup(keyword string) string {
	if w.page == nil && !w.paper {
		return NoPageObservation
	}
	lower := python.Lower(keyword)
	kw := keyword
	if !w.paper {
		kw = lower
	}
	if !w.lookingUp || kw != w.keyword {
		w.keyword, w.lookingUp, w.matches, w.cursor = kw, true, nil, 0
		for i, s := range w.sentences {
			if strings.Contains(python.Lower(s), lower) {
				w.matches = append(w.matches, i)
			}
		}
	}
	if w.cursor >= len(w.matches) {
		if w.paper {
			return PaperNoMoreResults
		}
		return "No more results."
	}
	w.cursor++
	s := w.sentences[w.matches[w.cursor-1]]
	return fmt.Sprintf("(Result %d / %d) %s", w.cursor, len(w.matches), s)
}

// cut shortens s to at most MaxObservationChars characters, marker included.
func (w *Wiki) cut(s string) string {
	limit := w.opts.MaxObservationChars
	if limit <= 0 || utf8.RuneCountInString(s) <= limit {
		return s
	}
	keep := limit - utf8.RuneCountInString(truncMarker)
	if keep <= 0 {
		return string([]rune(s)[:limit])
	}
	return strings.TrimRight(string([]rune(s)[:keep]), " ") + truncMarker
}
