// Package envtest holds what tests of environment backends share: Memory, an in-memory
// env.Corpus built from a list of pages, and RunConformance, the suite every env.Corpus
// implementation passes through env.Wiki. Memory consumes pages and produces a corpus;
// RunConformance consumes a constructor of the backend under test and produces test
// failures where it breaks the env.Corpus contract.
package envtest

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode"

	"github.com/reactgen/reactgen/env"
)

// Memory is an env.Corpus over pages held in memory. It is safe for concurrent use.
type Memory struct {
	pages  []env.Page
	byKey  map[string][]int // env.NormalizeTitle(title) -> indices in pages, in order
	tokens []memTokens
}

type memTokens struct {
	title map[string]bool
	text  map[string]bool
}

var _ env.Corpus = (*Memory)(nil)

// NewMemory returns a Memory over pages. Of pages with the same env.TitleKey the first
// is kept, as an index keeps it; which of the pages whose titles normalise alike a Search
// finds is env.Match.Pick's choice. Similar ranks pages by how many distinct query words occur in
// the title (weighing three) and in the text (one), ties broken by title.
func NewMemory(pages []env.Page) env.Corpus {
	m := &Memory{byKey: make(map[string][]int, len(pages))}
	seen := map[string]bool{}
	for _, p := range pages {
		exact := env.TitleKey(p.Title)
		if seen[exact] {
			continue
		}
		seen[exact] = true
		key := env.NormalizeTitle(p.Title)
		m.byKey[key] = append(m.byKey[key], len(m.pages))
		m.pages = append(m.pages, p)
		m.tokens = append(m.tokens, memTokens{
			title: setOf(words(p.Title)),
			text:  setOf(words(strings.Join(p.Sentences, " "))),
		})
	}
	return m
}

// Page returns the page a Search for title finds under match.
func (m *Memory) Page(ctx context.Context, title string, match env.Match) (env.Page, bool, error) {
	if err := ctx.Err(); err != nil {
		return env.Page{}, false, err
	}
	idx := m.byKey[env.NormalizeTitle(title)]
	titles := make([]string, len(idx))
	for j, i := range idx {
		titles[j] = m.pages[i].Title
	}
	j, ok := match.Pick(title, titles)
	if !ok {
		return env.Page{}, false, nil
	}
	p := m.pages[idx[j]]
	p.Sentences = slices.Clone(p.Sentences)
	return p, true, nil
}

// Similar returns at most k titles that share a word with query, best first.
func (m *Memory) Similar(ctx context.Context, query string, k int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type hit struct {
		title string
		score int
	}
	q := setOf(words(query))
	var hits []hit
	for i, p := range m.pages {
		score := 0
		for w := range q {
			if m.tokens[i].title[w] {
				score += 3
			}
			if m.tokens[i].text[w] {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, hit{p.Title, score})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		return cmp.Or(cmp.Compare(b.score, a.score), strings.Compare(a.title, b.title))
	})
	var out []string
	for _, h := range hits {
		if len(out) == k {
			break
		}
		out = append(out, h.title)
	}
	return out, nil
}

// words splits s into lower-cased runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

func setOf(ws []string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}
