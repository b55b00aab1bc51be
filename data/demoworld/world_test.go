package demoworld

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/sentence"
)

var update = flag.Bool("update", false, "rewrite data/demo from Generate(Options{Seed: 1})")

// demoDir is the committed demo world, relative to this package.
const demoDir = "../demo"

var demoFiles = []string{"corpus.jsonl", "hotpotqa.json", "fever.jsonl"}

func generate(t *testing.T, opts Options) *World {
	t.Helper()
	w, err := Generate(opts)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", opts, err)
	}
	return w
}

func writeWorld(t *testing.T, w *World) string {
	t.Helper()
	dir := t.TempDir()
	if err := w.Write(dir); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return dir
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return b
}

// TestCommittedDemo checks that data/demo is exactly what seed 1 generates; with
// -update it rewrites data/demo instead.
func TestCommittedDemo(t *testing.T) {
	w := generate(t, Options{Seed: 1})
	if *update {
		if err := w.Write(demoDir); err != nil {
			t.Fatalf("Write %s: %v", demoDir, err)
		}
	}
	dir := writeWorld(t, w)
	total := 0
	for _, name := range demoFiles {
		want := readFile(t, filepath.Join(dir, name))
		got := readFile(t, filepath.Join(demoDir, name))
		total += len(got)
		if !bytes.Equal(got, want) {
			t.Errorf("%s/%s differs from Generate(Seed 1): run go test ./data/demoworld -run TestCommittedDemo -update", demoDir, name)
		}
	}
	if total >= 2<<20 {
		t.Errorf("demo files total %d bytes, want under 2 MB", total)
	}
}

func TestDeterministic(t *testing.T) {
	tests := []struct {
		name     string
		a, b     int64
		wantSame bool
	}{
		{"same seed", 7, 7, true},
		{"other seed", 7, 8, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			da := writeWorld(t, generate(t, Options{Seed: tt.a}))
			db := writeWorld(t, generate(t, Options{Seed: tt.b}))
			for _, name := range demoFiles {
				same := bytes.Equal(readFile(t, filepath.Join(da, name)), readFile(t, filepath.Join(db, name)))
				if same != tt.wantSame {
					t.Errorf("%s identical: got %v, want %v", name, same, tt.wantSame)
				}
			}
		})
	}
}

// TestSentencesSplit checks that the sentence splitter reads every page text back into
// exactly the sentences the page was built from, so sentence indices agree.
func TestSentencesSplit(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		w := generate(t, Options{Seed: seed})
		for _, p := range w.Pages {
			got := sentence.Split(p.Text())
			if !slices.Equal(got, p.Sentences) {
				t.Errorf("seed %d page %q: Split gave %d sentences %q, want %d %q", seed, p.Title, len(got), got, len(p.Sentences), p.Sentences)
			}
		}
	}
}

func TestPages(t *testing.T) {
	w := generate(t, Options{Seed: 1})
	titles := map[string]bool{}
	deep, disamb := 0, 0
	for _, p := range w.Pages {
		key := strings.ToLower(p.Title)
		if titles[key] {
			t.Errorf("duplicate title %q", p.Title)
		}
		titles[key] = true
		if p.Disambiguation {
			disamb++
			if !strings.HasSuffix(p.Sentences[0], "may refer to:") {
				t.Errorf("disambiguation page %q starts %q", p.Title, p.Sentences[0])
			}
			continue
		}
		if n := len(p.Sentences); n < 5 || n > 10 {
			t.Errorf("page %q has %d sentences, want 5 to 10", p.Title, n)
		}
		if len(p.Sentences) > 5 {
			deep++
		}
	}
	if disamb == 0 {
		t.Errorf("no disambiguation pages")
	}
	for _, p := range w.Pages {
		if !p.Disambiguation {
			continue
		}
		for _, s := range p.Sentences[1:] {
			title, _, _ := strings.Cut(s, ", a ")
			if !titles[strings.ToLower(title)] {
				t.Errorf("disambiguation page %q lists %q, which has no page", p.Title, title)
			}
		}
	}
	for _, want := range []string{"Dr. ", "St. ", " million", "."} {
		found := false
		for _, p := range w.Pages {
			if strings.Contains(p.Text(), want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no page text contains %q", want)
		}
	}
}

func TestQuestions(t *testing.T) {
	w := generate(t, Options{Seed: 1})
	pages := map[string]Page{}
	for _, p := range w.Pages {
		pages[p.Title] = p
	}
	if got := len(w.Questions); got < 250 {
		t.Errorf("questions: got %d, want at least 250", got)
	}
	ids := map[string]bool{}
	types := map[string]int{}
	levels := map[string]int{}
	lookup := 0
	for _, q := range w.Questions {
		if ids[q.ID] {
			t.Errorf("duplicate id %s", q.ID)
		}
		ids[q.ID] = true
		types[q.Type]++
		levels[q.Level]++
		if q.Answer == "" {
			t.Errorf("%s: empty answer", q.ID)
		}
		ctx := map[string][]string{}
		for _, c := range q.Context {
			ctx[c.Title] = c.Sentences
			if p, ok := pages[c.Title]; !ok || !slices.Equal(p.Sentences, c.Sentences) {
				t.Errorf("%s: context %q does not match its corpus page", q.ID, c.Title)
			}
		}
		answerSeen := q.Answer == "yes" || q.Answer == "no"
		for _, f := range q.SupportingFacts {
			s, ok := ctx[f.Title]
			if !ok || f.Sentence >= len(s) {
				t.Errorf("%s: supporting fact %v not in context", q.ID, f)
				continue
			}
			if f.Sentence >= 5 {
				lookup++
			}
			if strings.Contains(s[f.Sentence], q.Answer) {
				answerSeen = true
			}
		}
		if !answerSeen && q.Type == "bridge" {
			t.Errorf("%s: answer %q is in no supporting sentence", q.ID, q.Answer)
		}
	}
	for _, k := range []string{"bridge", "comparison"} {
		if types[k] == 0 {
			t.Errorf("no %s questions", k)
		}
	}
	for _, k := range []string{"easy", "medium", "hard"} {
		if levels[k] == 0 {
			t.Errorf("no %s questions", k)
		}
	}
	if lookup == 0 {
		t.Errorf("no supporting fact lies past the fifth sentence")
	}
}

func TestClaims(t *testing.T) {
	w := generate(t, Options{Seed: 1})
	pages := map[string]Page{}
	for _, p := range w.Pages {
		pages[strings.ReplaceAll(p.Title, " ", "_")] = p
	}
	if got := len(w.Claims); got < 150 {
		t.Errorf("claims: got %d, want at least 150", got)
	}
	ids := map[int]bool{}
	labels := map[string]int{}
	for _, c := range w.Claims {
		if ids[c.ID] {
			t.Errorf("duplicate id %d", c.ID)
		}
		ids[c.ID] = true
		labels[c.Label]++
		ev := c.Evidence[0][0]
		if c.Label == nei {
			if ev.Page != "" || c.Verifiable != "NOT VERIFIABLE" {
				t.Errorf("%d: NEI claim with evidence %v, %s", c.ID, ev, c.Verifiable)
			}
			continue
		}
		p, ok := pages[ev.Page]
		if !ok || ev.Sentence >= len(p.Sentences) {
			t.Errorf("%d: evidence %v is not a corpus sentence", c.ID, ev)
		}
	}
	for _, l := range []string{supports, refutes, nei} {
		if labels[l] < 50 {
			t.Errorf("label %s: got %d claims, want at least 50", l, labels[l])
		}
	}
	b, err := json.Marshal(w.Claims[2])
	if err != nil {
		t.Fatal(err)
	}
	if w.Claims[2].Label == nei && !strings.Contains(string(b), ",null,null,null]]]") {
		t.Errorf("NEI evidence encodes as %s", b)
	}
}

func TestTooSmall(t *testing.T) {
	if _, err := Generate(Options{Seed: 1, People: 3}); err == nil {
		t.Errorf("Generate with 3 people: got no error")
	}
}
