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
	byKey  map[string]int // env.NormalizeTitle(title) -> index in pages; the first page wins
	tokens []memTokens
}

type memTokens struct {
	title map[string]bool
	text  map[string]bool
}

var _ env.Corpus = (*Memory)(nil)

// NewMemory returns a Memory over pages. Pages whose titles normalise alike are reached
// by the first of them. Similar ranks pages by how many distinct query words occur in
// the title (weighing three) and in the text (one), ties broken by title.
func NewMemory(pages []env.Page) env.Corpus {
	m := &Memory{pages: slices.Clone(pages), byKey: make(map[string]int, len(pages))}
	for i, p := range m.pages {
		key := env.NormalizeTitle(p.Title)
		if _, dup := m.byKey[key]; !dup {
			m.byKey[key] = i
		}
		m.tokens = append(m.tokens, memTokens{
			title: setOf(words(p.Title)),
			text:  setOf(words(strings.Join(p.Sentences, " "))),
		})
	}
	return m
}

// Page returns the page whose normalised title equals the normalised title asked for.
func (m *Memory) Page(ctx context.Context, title string) (env.Page, bool, error) {
	if err := ctx.Err(); err != nil {
		return env.Page{}, false, err
	}
	i, ok := m.byKey[env.NormalizeTitle(title)]
	if !ok {
		return env.Page{}, false, nil
	}
	p := m.pages[i]
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
