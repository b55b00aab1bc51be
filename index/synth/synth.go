// Package synth generates a seeded synthetic encyclopedia for the index benchmarks: a
// Zipfian vocabulary of invented words, titles of one to four words, and pages of five to
// ten sentences (about 1 KB of text each), written as corpus JSONL. It consumes a seed
// and a vocabulary size and produces titles, query words and corpus lines; the same seed
// gives the same corpus.
package synth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"
)

var syllables = strings.Fields(`ka lo mi ra ten vor sa lin du pe qua bri osh fen tal mur
	gla ni ve hos ru dan el tor wim ba cy zen pol ar ost ith umb yel cor dra fi nel sho`)

// Generator makes pages deterministically from a seed.
type Generator struct {
	rng   *rand.Rand
	vocab []string
	zipf  *rand.Zipf
}

// New returns a generator with a vocabulary of vocab words.
func New(seed uint64, vocab int) *Generator {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	words := make([]string, 0, vocab)
	seen := map[string]bool{}
	for len(words) < vocab {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		w := b.String()
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return &Generator{rng: rng, vocab: words, zipf: rand.NewZipf(rng, 1.07, 2, uint64(vocab-1))}
}

func (g *Generator) word() string { return g.vocab[g.zipf.Uint64()] }

// rareWord draws uniformly, so titles are mostly distinct.
func (g *Generator) rareWord() string { return g.vocab[g.rng.IntN(len(g.vocab))] }

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// Title returns a title of one to four capitalised words.
func (g *Generator) Title() string {
	// Mostly two to four words: one-word titles from a finite vocabulary collide.
	n := 2 + g.rng.IntN(3)
	if g.rng.IntN(10) == 0 {
		n = 1
	}
	ws := make([]string, n)
	for i := range ws {
		if i == 0 || g.rng.IntN(2) == 0 {
			ws[i] = capitalize(g.rareWord())
		} else {
			ws[i] = capitalize(g.word())
		}
	}
	return strings.Join(ws, " ")
}

// Query returns a two-word query in the style of a missed Search.
func (g *Generator) Query() string {
	return capitalize(g.rareWord()) + " " + capitalize(g.word())
}

// Text returns five to ten sentences about title.
func (g *Generator) Text(title string) string {
	var b strings.Builder
	for s := range 5 + g.rng.IntN(6) {
		if s == 0 {
			b.WriteString(title)
			b.WriteString(" is a")
		} else {
			b.WriteString(" ")
			b.WriteString(capitalize(g.word()))
		}
		for range 10 + g.rng.IntN(12) {
			b.WriteByte(' ')
			b.WriteString(g.word())
		}
		b.WriteByte('.')
	}
	return b.String()
}

// WriteJSONL writes n pages as {"title", "text"} lines, calls each (which may be nil)
// with every title written, and returns the total bytes of text.
func (g *Generator) WriteJSONL(w io.Writer, n int, each func(title string)) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	var text int64
	for i := range n {
		t := g.Title()
		body := g.Text(t)
		text += int64(len(body))
		if err := enc.Encode(struct {
			Title string `json:"title"`
			Text  string `json:"text"`
		}{t, body}); err != nil {
			return text, fmt.Errorf("write page %d: %w", i, err)
		}
		if each != nil {
			each(t)
		}
	}
	return text, bw.Flush()
}
