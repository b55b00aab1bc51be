package env

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// Options tune a Wiki.
type Options struct {
	Task                string // pipeline.TaskFEVER canonicalises Finish labels
	Sentences           int    // sentences a successful Search shows; 0 means 5, as in the paper
	MaxObservationChars int    // observations longer than this many characters are cut and marked; 0 means no limit
}

// SimilarCount is how many similar titles a failed Search lists, as in the paper.
const SimilarCount = 5

// truncMarker ends an observation that was cut to Options.MaxObservationChars.
const truncMarker = " [...]"

// NoPageObservation answers a Lookup before any successful Search.
const NoPageObservation = "There is no page to look up in yet. Search for an entity first."

// Wiki is the environment of one episode: the page it is on and its lookup position over
// a shared Corpus. It is not safe for concurrent use; make one per episode.
type Wiki struct {
	corpus  Corpus
	opts    Options
	page    *Page
	keyword string // the lower-cased keyword of the lookup in progress
	matches []int  // indices of the page's sentences that contain keyword
	cursor  int    // how many of matches have been shown
	done    bool
}

// New returns a fresh episode environment over c.
func New(c Corpus, opts Options) *Wiki {
	if opts.Sentences <= 0 {
		opts.Sentences = 5
	}
	return &Wiki{corpus: c, opts: opts}
}

// Step performs one action given as the agent wrote it and returns the observation. An
// invalid action is answered with an observation, not an error: the error return is only
// for corpus failures (a cancelled ctx, a backend that is down). After Finish, Step
// returns ErrDone.
func (w *Wiki) Step(ctx context.Context, raw string) (Result, error) {
	if w.done {
		return Result{}, ErrDone
	}
	a := ParseAction(raw)
	res := Result{Action: a}
	var err error
	switch a.Type {
	case pipeline.ActionSearch:
		res.Observation, err = w.search(ctx, a.Argument)
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
	default:
		res.Observation = "Invalid action: " + strings.TrimSpace(raw) +
			". Valid actions are Search[<entity>], Lookup[<keyword>] and Finish[<answer>]."
	}
	res.Observation = w.cut(res.Observation)
	return res, nil
}

func (w *Wiki) search(ctx context.Context, entity string) (string, error) {
	p, ok, err := w.corpus.Page(ctx, entity)
	if err != nil {
		return "", err
	}
	w.keyword, w.matches, w.cursor = "", nil, 0
	if !ok {
		w.page = nil
		titles, err := w.corpus.Similar(ctx, entity, SimilarCount)
		if err != nil {
			return "", err
		}
		if len(titles) > SimilarCount {
			titles = titles[:SimilarCount]
		}
		return "Could not find [" + entity + "]. Similar: " + pyList(titles) + ".", nil
	}
	w.page = &p
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

func (w *Wiki) lookup(keyword string) string {
	if w.page == nil {
		return NoPageObservation
	}
	kw := strings.ToLower(keyword)
	if kw != w.keyword {
		w.keyword, w.matches, w.cursor = kw, nil, 0
		for i, s := range w.page.Sentences {
			if strings.Contains(strings.ToLower(s), kw) {
				w.matches = append(w.matches, i)
			}
		}
	}
	if w.cursor >= len(w.matches) {
		return "No more results."
	}
	w.cursor++
	s := w.page.Sentences[w.matches[w.cursor-1]]
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

// pyList renders titles as a Python list literal, as the paper's code printed them:
// ['A', 'B'], with a title holding a single quote in double quotes.
func pyList(titles []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, t := range titles {
		if i > 0 {
			b.WriteString(", ")
		}
		q := byte('\'')
		if strings.ContainsRune(t, '\'') && !strings.ContainsRune(t, '"') {
			q = '"'
		}
		b.WriteByte(q)
		for _, r := range t {
			switch {
			case r == '\\':
				b.WriteString(`\\`)
			case r == rune(q):
				b.WriteByte('\\')
				b.WriteRune(r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte(q)
	}
	b.WriteByte(']')
	return b.String()
}
