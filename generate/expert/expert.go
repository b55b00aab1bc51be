// Package expert is the expert policy: a generate.Actor that plays an episode from the
// gold supporting facts instead of a model. It consumes a pipeline.Question (its
// SupportingFacts, Answer and, for FEVER, label) and the steps so far, reads the gold
// pages from an env.Corpus to know their sentences, and produces the next Move: Search
// each gold page in order, Lookup a keyword when a needed sentence lies past what the
// Search showed, then Finish with the gold answer. Its trajectories are the upper bound
// the filter and export stages are tested against, and demo data for fine-tuning.
package expert

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/generate"
	"github.com/reactgen/reactgen/pipeline"
)

// ErrNoEvidence ends an episode whose supporting facts name a page the corpus does not
// hold (an index built from another corpus, or one that lacks the page): the expert does
// not answer a question without showing its evidence.
var ErrNoEvidence = errors.New("expert: no evidence to answer from")

// Expert decides moves from gold facts. It keeps no state between calls (every move is
// derived from the history) and is safe for concurrent use if its Corpus is.
type Expert struct {
	corpus env.Corpus
}

var _ generate.Actor = (*Expert)(nil)

// New returns an expert that reads gold pages from c.
func New(c env.Corpus) *Expert { return &Expert{corpus: c} }

// goal is one gold page and the sentences of it the episode must have seen.
type goal struct {
	title string
	need  []int
}

// goals groups the supporting facts by page, in the order the pages first appear.
func goals(q pipeline.Question) []goal {
	var out []goal
	at := map[string]int{}
	for _, f := range q.SupportingFacts {
		title := strings.ReplaceAll(f.Title, "_", " ")
		key := env.NormalizeTitle(title)
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, goal{title: title})
		}
		out[i].need = append(out[i].need, f.Sentence)
	}
	return out
}

// replay is what the history tells: the page the episode is on and the sentences of
// each page it has seen, as the environment showed them.
type replay struct {
	current  string          // normalised title of the current page; "" when none
	seen     map[string]bool // "title\x00sentence index"
	searched map[string]bool // normalised search arguments already tried
	last     pipeline.Step   // the previous step, if any
}

func (e *Expert) replay(ctx context.Context, history []pipeline.Step) (replay, error) {
	r := replay{seen: map[string]bool{}, searched: map[string]bool{}}
	var page env.Page
	for _, s := range history {
		a := env.ParseAction(s.Action)
		switch a.Type {
		case pipeline.ActionSearch:
			r.searched[env.NormalizeTitle(a.Argument)] = true
			r.current = ""
			p, ok, err := e.corpus.Page(ctx, a.Argument, env.MatchPaper)
			if err != nil {
				return r, fmt.Errorf("expert: read page %q: %w", a.Argument, err)
			}
			if ok && len(p.Sentences) > 0 && strings.HasPrefix(s.Observation, p.Sentences[0]) {
				page, r.current = p, env.NormalizeTitle(p.Title)
				r.mark(page, s.Observation)
			}
		case pipeline.ActionLookup:
			if r.current != "" {
				_, shown, _ := strings.Cut(s.Observation, ") ")
				r.mark(page, shown)
				r.markPart(page, shown)
			}
		}
	}
	if len(history) > 0 {
		r.last = history[len(history)-1]
	}
	return r, nil
}

// mark records the page's sentences that obs shows.
func (r *replay) mark(p env.Page, obs string) {
	for i, s := range p.Sentences {
		if strings.Contains(obs, s) {
			r.seen[key(p.Title, i)] = true
		}
	}
}

// markPart records the sentence of p that holds shown, a paper Lookup's answer: paper
// observations cut sentences at every ". " ("opened by Dr." and "Ada Vint in 1868."), so
// a Lookup may show part of a sentence, with a full stop added.
func (r *replay) markPart(p env.Page, shown string) {
	part := strings.TrimSuffix(shown, ".")
	if part == "" {
		return
	}
	for i, s := range p.Sentences {
		if strings.Contains(s, part) {
			r.seen[key(p.Title, i)] = true
			return
		}
	}
}

func key(title string, i int) string { return env.NormalizeTitle(title) + "\x00" + fmt.Sprint(i) }

// Act returns the next move of the expert for q after history.
func (e *Expert) Act(ctx context.Context, q pipeline.Question, history []pipeline.Step) (generate.Move, error) {
	r, err := e.replay(ctx, history)
	if err != nil {
		return generate.Move{}, err
	}
	answer := strings.TrimSpace(q.Answer) // a task file's answer keeps its edge white space
	finish := generate.Move{Thought: "So the answer is " + answer + ".", Action: "Finish[" + answer + "]"}
	budget := pipeline.GenerateConfig{}.MaxStepsFor(q.Task)
	last := len(history) >= budget-1 // the last step there is: answer rather than run out, if the evidence was seen
	gs := goals(q)
	if len(gs) == 0 && !(q.Task == pipeline.TaskFEVER && q.Answer == pipeline.LabelNEI) {
		// A question whose file names no supporting facts (a JSONL task of id, question
		// and answer; a claim labelled SUPPORTS or REFUTES without its evidence): the
		// expert knows no page to show, and an answer it gave would rest on nothing the
		// trajectory shows.
		return generate.Move{}, fmt.Errorf("%w: the task file names no supporting facts for this question", ErrNoEvidence)
	}
	if len(gs) == 0 {
		// A claim without evidence (NOT ENOUGH INFO): look at the entity it names once.
		if len(history) == 0 && !last {
			if name := entity(q.Question); name != "" {
				return generate.Move{Thought: "I need to search " + name + ".", Action: "Search[" + name + "]"}, nil
			}
		}
		return finish, nil
	}
	for _, g := range gs {
		p, ok, err := e.corpus.Page(ctx, g.title, env.MatchPaper)
		if err != nil {
			return generate.Move{}, fmt.Errorf("expert: read page %q: %w", g.title, err)
		}
		if !ok {
			// A gold page the corpus lacks: the answer would rest on nothing the
			// trajectory shows, and a correct episode must not be made of that.
			return generate.Move{}, fmt.Errorf("%w: gold page %q is not in the corpus", ErrNoEvidence, g.title)
		}
		missing := -1
		for _, i := range g.need {
			if i >= 0 && i < len(p.Sentences) && !r.seen[key(p.Title, i)] {
				missing = i
				break
			}
		}
		if missing < 0 {
			continue
		}
		if last {
			return generate.Move{}, fmt.Errorf("%w: the step limit came before sentence %d of %q was shown", ErrNoEvidence, missing, p.Title)
		}
		if r.current != env.NormalizeTitle(p.Title) {
			return e.search(r, p.Title), nil
		}
		kw := keyword(p.Sentences, missing)
		return generate.Move{
			Thought: "I need to look up " + kw + " on the " + p.Title + " page.",
			Action:  "Lookup[" + kw + "]",
		}, nil
	}
	return finish, nil
}

// search moves to title: directly, or, when that search already failed, through the
// best title the failed observation suggested.
func (e *Expert) search(r replay, title string) generate.Move {
	norm := env.NormalizeTitle(title)
	if !r.searched[norm] {
		return generate.Move{Thought: "I need to search " + title + ".", Action: "Search[" + title + "]"}
	}
	if alt := pickTitle(r.last.Observation, title, r.searched); alt != "" {
		return generate.Move{
			Thought: "I could not find " + title + " directly. I will search " + alt + " instead.",
			Action:  "Search[" + alt + "]",
		}
	}
	return generate.Move{Thought: "I need to search " + title + " again.", Action: "Search[" + title + "]"}
}

var quoted = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'|"([^"]*)"`)

// pickTitle chooses, from the titles a failed search listed, the untried one closest to
// want: equal after normalisation, then containing it, then sharing the most words.
func pickTitle(obs, want string, tried map[string]bool) string {
	_, list, ok := strings.Cut(obs, "Similar: ")
	if !ok {
		return ""
	}
	w := env.NormalizeTitle(want)
	best, score := "", 0
	for _, m := range quoted.FindAllStringSubmatch(list, -1) {
		t := m[1] + m[2]
		n := env.NormalizeTitle(t)
		if tried[n] || t == "" {
			continue
		}
		s := overlap(n, w)
		switch {
		case n == w:
			s = 1000
		case base(n) == base(w):
			s = 500 // the same name with a qualifier: "brisk (town)" for "brisk"
		case strings.Contains(n, w) || strings.Contains(w, n):
			s += 100
		}
		if s > score {
			best, score = t, s
		}
	}
	return best
}

// base drops a trailing parenthetical qualifier: "orla venn (painter)" → "orla venn".
func base(t string) string {
	if i := strings.LastIndex(t, " ("); i > 0 && strings.HasSuffix(t, ")") {
		return t[:i]
	}
	return t
}

func overlap(a, b string) int {
	n := 0
	bs := strings.Fields(b)
	for _, x := range strings.Fields(a) {
		for _, y := range bs {
			if x == y {
				n++
				break
			}
		}
	}
	return n
}

// stop words make poor lookup keywords.
var stop = map[string]bool{
	"the": true, "and": true, "was": true, "were": true, "for": true, "from": true, "with": true,
	"his": true, "her": true, "its": true, "are": true, "about": true, "into": true, "this": true,
	"that": true, "who": true, "has": true, "had": true, "is": true, "of": true, "in": true, "by": true,
}

// keyword picks the word of sentences[target] that the environment's Lookup reaches
// first: Lookup walks the page's sentences containing the keyword (case-insensitively)
// in order, so the best keyword occurs in no earlier sentence. Lower-case words are
// preferred (born, founded, population) because they read as a search for a fact.
// When every word occurs earlier, the sentence itself is the keyword.
func keyword(sentences []string, target int) string {
	best, bestScore := "", -1
	for _, w := range strings.FieldsFunc(sentences[target], func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}) {
		lw := strings.ToLower(w)
		if len(lw) < 3 || stop[lw] {
			continue
		}
		earlier := 0
		for _, s := range sentences[:target] {
			if strings.Contains(strings.ToLower(s), lw) {
				earlier++
			}
		}
		if earlier > 0 {
			continue
		}
		score := len(lw)
		if unicode.IsLower([]rune(w)[0]) {
			score += 100
		}
		if score > bestScore {
			best, bestScore = w, score
		}
	}
	if best == "" {
		return strings.TrimRight(sentences[target], ".")
	}
	return best
}

// connectors may join capitalised words inside a name ("The Lantern of Quell").
var connectors = map[string]bool{"of": true, "the": true, "for": true, "over": true, "and": true, "de": true, "von": true}

// entity returns the longest capitalised span of a claim, best effort: the entity it is
// about. A connector between capitalised words stays inside the span.
func entity(claim string) string {
	words := strings.Fields(claim)
	best := ""
	for i := 0; i < len(words); i++ {
		if !capitalised(words[i]) {
			continue
		}
		j := i
		for j+1 < len(words) {
			switch {
			case capitalised(words[j+1]) && !endsClause(words[j]):
				j++
				continue
			case connectors[words[j+1]] && j+2 < len(words) && capitalised(words[j+2]) && !endsClause(words[j]):
				j += 2
				continue
			}
			break
		}
		span := strings.TrimRight(strings.Join(words[i:j+1], " "), ".,;:!?")
		if len(span) > len(best) {
			best = span
		}
		i = j
	}
	return best
}

func capitalised(w string) bool {
	for _, r := range w {
		return unicode.IsUpper(r)
	}
	return false
}

func endsClause(w string) bool { return strings.ContainsAny(w[len(w)-1:], ",;:.!?") }
