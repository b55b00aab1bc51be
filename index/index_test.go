package index

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/filetest"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
)

// The fixture world: invented pages, written for these tests.
const fixtureJSONL = `{"title": "Marlow Ferry", "text": "Marlow Ferry is a small cable ferry on the River Tamsin. It has carried passengers since 1887."}
{"title": "River Tamsin", "text": ["The River Tamsin is a river in the county of Oakshire. It rises in the Fell Hills.", "The river is 84 kilometres long."]}
{"title": "Quillon Bay", "text": [["Quillon Bay is a sheltered inlet.", "Its lighthouse dates from 1901."]]}
{"title": "Quillon (disambiguation)", "text": [["Quillon may refer to:", "Quillon Bay, an inlet.", "Quillon, the crossguard of a sword."]]}
{"title": "Ferrier", "text": "Ferrier may refer to:"}
{"title": "Tamsin_Orchard", "text": "Tamsin Orchard is an apple orchard beside the River Tamsin."}
{"title": "\"Hollow Song\"", "text": "\"Hollow Song\" is a ballad recorded by the band Ash Lantern in 1974."}
{"title": "Marlow_Ferry", "text": "A second page with the same title, which Build drops."}
{"title": "MARLOW FERRY", "text": "MARLOW FERRY is a song by the Oakshire band Quillon, a page of its own."}
{"title": "Élan Vital Club", "text": "The Élan Vital Club is a cycling club in Oakshire."}
`

// buildFixture builds the fixture world and opens it.
func buildFixture(t *testing.T) (*Index, string) {
	t.Helper()
	src := filetest.Write(t, "pages.jsonl", fixtureJSONL)
	return buildOpen(t, src), src
}

// buildOpen builds the index of src with the default options in a new directory and
// opens it; it is closed when the test ends.
func buildOpen(t *testing.T, src string) *Index {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := Build(t.Context(), dir, []string{src}, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// TestNormalizeTitleIsEnvs: the index keys pages as every backend does; what the keys
// are is env's TestNormalizeTitle, which holds the fixture's titles too.
func TestNormalizeTitleIsEnvs(t *testing.T) {
	for _, in := range []string{"Marlow Ferry", "  marlow   FERRY ", "\u2018 Marlow\tFerry \u2019", "\"'Marlow Ferry'\"", "Ash's Lantern", "ÉLAN", "", "\"\""} {
		if got, want := NormalizeTitle(in), env.NormalizeTitle(in); got != want {
			t.Errorf("NormalizeTitle(%q): got %q, env.NormalizeTitle %q", in, got, want)
		}
	}
}

func TestPage(t *testing.T) {
	ix, _ := buildFixture(t)
	tests := []struct {
		query        string
		paper, rules string // the title found under env.MatchPaper and env.MatchRules; "" for none
		disamb       bool
		first        string
	}{
		{"Marlow Ferry", "Marlow Ferry", "Marlow Ferry", false, "Marlow Ferry is a small cable ferry on the River Tamsin."},
		{"marlow ferry", "Marlow Ferry", "Marlow Ferry", false, ""},
		{"MARLOW_FERRY", "MARLOW FERRY", "MARLOW FERRY", false, "MARLOW FERRY is a song by the Oakshire band Quillon, a page of its own."},
		{"Marlow_Ferry", "Marlow Ferry", "Marlow Ferry", false, "Marlow Ferry is a small cable ferry on the River Tamsin."},
		{"  Marlow \n Ferry  ", "Marlow Ferry", "Marlow Ferry", false, ""},
		// wikienv.py searched what the model wrote: only MediaWiki's pair of double quotes goes.
		{"\u201cMarlow Ferry\u201d", "", "Marlow Ferry", false, ""},
		{"'marlow ferry'", "", "Marlow Ferry", false, ""},
		{`"Marlow Ferry"`, "Marlow Ferry", "Marlow Ferry", false, ""},
		{"tamsin orchard", "Tamsin_Orchard", "Tamsin_Orchard", false, ""},
		{"Hollow Song", "", "\"Hollow Song\"", false, ""},
		{`"Hollow Song"`, "\"Hollow Song\"", "\"Hollow Song\"", false, ""},
		{"élan vital club", "Élan Vital Club", "Élan Vital Club", false, ""},
		// A missing title is missing: the rules Wiki, not the corpus, tries "(disambiguation)".
		{"Quillon", "", "", false, ""},
		{"quillon (disambiguation)", "Quillon (disambiguation)", "Quillon (disambiguation)", true, "Quillon may refer to:"},
		{"Ferrier", "Ferrier", "Ferrier", true, ""},
		{"Marlow", "", "", false, ""},
		{"", "", "", false, ""},
	}
	for _, tt := range tests {
		for m, want := range map[env.Match]string{env.MatchPaper: tt.paper, env.MatchRules: tt.rules} {
			p, ok, err := ix.Page(t.Context(), tt.query, m)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (want != "") || p.Title != want || ok && p.Disambiguation != tt.disamb {
				t.Errorf("Page(%q, match %d): got %q ok=%v disamb=%v, want %q disamb=%v", tt.query, m, p.Title, ok, p.Disambiguation, want, tt.disamb)
			}
			if ok && tt.first != "" && (len(p.Sentences) == 0 || p.Sentences[0] != tt.first) {
				t.Errorf("Page(%q) first sentence: got %q, want %q", tt.query, p.Sentences, tt.first)
			}
		}
	}
}

func TestPageSentences(t *testing.T) {
	ix, _ := buildFixture(t)
	p, _, err := ix.Page(t.Context(), "River Tamsin", env.MatchPaper)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"The River Tamsin is a river in the county of Oakshire.", "It rises in the Fell Hills.", "The river is 84 kilometres long."}
	if !slices.Equal(p.Sentences, want) {
		t.Errorf("sentences: got %q, want %q", p.Sentences, want)
	}
}

func TestPageText(t *testing.T) {
	ix, _ := buildFixture(t)
	tests := []struct{ title, text string }{
		{"Marlow Ferry", "Marlow Ferry is a small cable ferry on the River Tamsin. It has carried passengers since 1887."},
		{"River Tamsin", "The River Tamsin is a river in the county of Oakshire. It rises in the Fell Hills.\nThe river is 84 kilometres long."},
		{"Quillon Bay", "Quillon Bay is a sheltered inlet. Its lighthouse dates from 1901."},
	}
	for _, tt := range tests {
		p, ok, err := ix.Page(t.Context(), tt.title, env.MatchPaper)
		if err != nil || !ok || p.Text != tt.text {
			t.Errorf("Page(%s) text: got %q ok=%v err=%v, want %q", tt.title, p.Text, ok, err, tt.text)
		}
	}
}

func TestLayoutBody(t *testing.T) {
	tests := []struct {
		name, text string
		sents      []string
		want       string // the text read back
	}{
		{"plain", "One two. Three four.", []string{"One two.", "Three four."}, "One two. Three four."},
		{"spacing kept", "  One two.\u00a0Three four.\n\nFive.  ", []string{"One two.", "Three four.", "Five."}, "  One two.\u00a0Three four.\n\nFive.  "},
		{"empty sentence", "A. B.", []string{"A.", "", "B."}, "A. B."},
		{"no text", "", []string{"A.", "B."}, "A. B."},
		{"sentence not in text", "A. C.", []string{"A.", "B."}, "A. B."},
		{"no sentences", "Just text.", nil, "Just text."},
		{"nothing", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sents, text, err := readBody(layoutBody(tt.text, tt.sents))
			if err != nil || text != tt.want || !slices.Equal(sents, tt.sents) {
				t.Errorf("read back: got %q %q %v, want %q %q", sents, text, err, tt.sents, tt.want)
			}
		})
	}
	if _, _, err := readBody("a" + sentenceSep + "b"); err == nil {
		t.Error("readBody with an odd number of marks: got no error")
	}
}

func TestInfo(t *testing.T) {
	ix, src := buildFixture(t)
	info := ix.Info()
	if info.Pages != 9 || info.Duplicates != 1 || info.Disambiguation != 2 {
		t.Errorf("counts: got pages %d dup %d disamb %d, want 9, 1, 2", info.Pages, info.Duplicates, info.Disambiguation)
	}
	if info.FormatVersion != FormatVersion || info.BuiltAt.IsZero() {
		t.Errorf("info: got version %d built %v", info.FormatVersion, info.BuiltAt)
	}
	if len(info.Sources) != 1 || info.Sources[0].SHA256 != filetest.SHA256(t, src) || info.Sources[0].Path != src {
		t.Fatalf("sources: got %+v, want %s with sha %s", info.Sources, src, filetest.SHA256(t, src))
	}
	st, _ := os.Stat(src)
	if info.Sources[0].Bytes != st.Size() {
		t.Errorf("source bytes: got %d, want %d", info.Sources[0].Bytes, st.Size())
	}
	if want := fingerprint(info.Sources); info.Fingerprint != want || len(info.Fingerprint) != 64 {
		t.Errorf("fingerprint: got %q, want %q", info.Fingerprint, want)
	}
}

// checkRanked checks what a ranked query (Similar, Retrieve) returned: no error, from
// atLeast to k results, and first, unless it is "", at the top.
func checkRanked[T any](t *testing.T, what, query string, k, atLeast int, first string, got []T, err error, title func(T) string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < atLeast || len(got) > k {
		t.Fatalf("%s(%q, %d): got %+v, want %d to %d results", what, query, k, got, atLeast, k)
	}
	if first != "" && title(got[0]) != first {
		t.Errorf("%s(%q)[0]: got %q, want %q (all %+v)", what, query, title(got[0]), first, got)
	}
}

func TestSimilar(t *testing.T) {
	ix, _ := buildFixture(t)
	tests := []struct {
		query, first string
		k, atLeast   int
	}{
		{"Marlow", "Marlow Ferry", 5, 1},
		{"tamsin", "", 5, 3}, // order checked below
		{"orchard apples tamsin", "Tamsin_Orchard", 3, 3},
		{"lighthouse", "Quillon Bay", 5, 1},
		{"ELAN", "Élan Vital Club", 5, 1},
		{"zzzz nothing", "", 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got, err := ix.Similar(t.Context(), tt.query, tt.k)
			checkRanked(t, "Similar", tt.query, tt.k, tt.atLeast, tt.first, got, err, func(title string) string { return title })
			seen := map[string]bool{}
			for _, g := range got {
				if seen[g] {
					t.Errorf("Similar(%q): %q twice", tt.query, g)
				}
				seen[g] = true
			}
		})
	}
	// Titles first, then pages that only mention the word.
	got, err := ix.Similar(t.Context(), "tamsin", 5)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(got, "Marlow Ferry"); i < 2 {
		t.Errorf("Similar(tamsin): Marlow Ferry at %d in %q, want after both Tamsin titles", i, got)
	}
}

func TestRetrieve(t *testing.T) {
	ix, _ := buildFixture(t)
	tests := []struct {
		query, first string
		k, atLeast   int
	}{
		{"lighthouse", "Quillon Bay", 3, 1},
		{"apple orchard", "Tamsin_Orchard", 3, 1},
		{"cable ferry passengers", "Marlow Ferry", 2, 1},
		{"zzzz nothing", "", 5, 0},
		{"\"\" AND OR * :", "", 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got, err := ix.Retrieve(t.Context(), tt.query, tt.k)
			checkRanked(t, "Retrieve", tt.query, tt.k, tt.atLeast, tt.first, got, err, func(h Hit) string { return h.Title })
			for i := 1; i < len(got); i++ {
				if got[i].Score > got[i-1].Score {
					t.Errorf("Retrieve(%q): scores not best first: %+v", tt.query, got)
				}
			}
			for _, h := range got {
				if h.Score <= 0 {
					t.Errorf("Retrieve(%q): %q scores %v, want a positive bm25 score", tt.query, h.Title, h.Score)
				}
			}
		})
	}
}

func TestSimilarHostileQueries(t *testing.T) {
	ix, _ := buildFixture(t)
	for _, q := range []string{
		`"Marlow`, `Marlow"`, `"""`, `Marlow AND`, `AND`, `OR OR NOT`, `NEAR(marlow ferry)`,
		`marl*`, `*`, `-ferry`, `ferry -`, `title:marlow`, `:`, `(marlow`, `)`, `{title}: x`,
		`^marlow`, `marlow + ferry`, "😀", "ferry 🚢", `C++`, `'; DROP TABLE pages; --`, "\x00", "e\u0301",
		strings.Repeat("ferry ", 500),
	} {
		t.Run(q, func(t *testing.T) {
			if _, err := ix.Similar(t.Context(), q, 5); err != nil {
				t.Errorf("Similar(%q): %v", q, err)
			}
			if _, _, err := ix.Page(t.Context(), q, env.MatchPaper); err != nil {
				t.Errorf("Page(%q): %v", q, err)
			}
		})
	}
	got, err := ix.Similar(t.Context(), `"Marlow" AND (ferry*)`, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0] != "Marlow Ferry" {
		t.Errorf("Similar with operators: got %q, want Marlow Ferry first", got)
	}
}

func TestConcurrentReaders(t *testing.T) {
	ix, _ := buildFixture(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				p, ok, err := ix.Page(t.Context(), "river tamsin", env.MatchPaper)
				if err != nil || !ok || p.Title != "River Tamsin" {
					errs <- fmt.Errorf("goroutine %d page %d: %q %v %v", g, i, p.Title, ok, err)
					return
				}
				s, err := ix.Similar(t.Context(), "quillon bay", 3)
				if err != nil || len(s) == 0 || s[0] != "Quillon Bay" {
					errs <- fmt.Errorf("goroutine %d similar %d: %q %v", g, i, s, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestBuildRefusesExisting(t *testing.T) {
	src := filetest.Write(t, "a.jsonl", `{"title": "One", "text": "One page."}`)
	dir := filepath.Join(t.TempDir(), "index")
	if _, err := Build(t.Context(), dir, []string{src}, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if !Exists(dir) {
		t.Fatal("Exists: got false after Build")
	}
	_, err := Build(t.Context(), dir, []string{src}, BuildOptions{})
	if !errors.Is(err, ErrExists) {
		t.Errorf("second build: got %v, want ErrExists", err)
	}
	src2 := filetest.Write(t, "b.jsonl", `{"title": "Two", "text": "Two page."}`+"\n"+`{"title": "Three", "text": "Three."}`)
	info, err := Build(t.Context(), dir, []string{src2}, BuildOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.Pages != 2 {
		t.Errorf("forced rebuild pages: got %d, want 2", info.Pages)
	}
	got, err := ReadInfo(dir)
	if err != nil || got.Fingerprint != info.Fingerprint {
		t.Errorf("ReadInfo: got %q %v, want %q", got.Fingerprint, err, info.Fingerprint)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("parent after rebuild: got %d entries, want only the index", len(entries))
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Build(t.Context(), other, []string{src}, BuildOptions{Force: true}); err == nil {
		t.Error("build over a non-index directory with force: no error")
	}
}

func TestBuildFailsAtomically(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "{\"title\": \"Page %d\", \"text\": \"Text of page %d.\"}\n", i, i)
	}
	b.WriteString("{\"title\": \"Broken\", \"text\": \n")
	b.WriteString(`{"title": "After", "text": "After."}` + "\n")
	src := filetest.Write(t, "bad.jsonl", b.String())
	parent := t.TempDir()
	dir := filepath.Join(parent, "index")
	_, err := Build(t.Context(), dir, []string{src}, BuildOptions{BatchPages: 1000})
	if err == nil || !strings.Contains(err.Error(), src+" line 3001") {
		t.Fatalf("error: got %v, want it to name %s line 3001", err, src)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("index dir after failed build: stat err %v, want not exist", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("parent after failed build: got %v, want empty", entries)
	}

	info, err := Build(t.Context(), dir, []string{src}, BuildOptions{SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.Pages != 3001 || info.Skipped != 1 {
		t.Errorf("skip bad: got %d pages, %d skipped, want 3001 and 1", info.Pages, info.Skipped)
	}
}

func TestBuildCancelled(t *testing.T) {
	src := filetest.Write(t, "a.jsonl", `{"title": "One", "text": "One page."}`)
	parent := t.TempDir()
	ctx, cancel := contextWithCancel(t)
	cancel()
	if _, err := Build(ctx, filepath.Join(parent, "index"), []string{src}, BuildOptions{}); err == nil {
		t.Error("cancelled build: no error")
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("parent after cancelled build: got %v, want empty", entries)
	}
}

func TestBuildFormats(t *testing.T) {
	questions := filetest.Write(t, "dev.json", `[{"_id": "a", "question": "Is Birch Moor windy?", "context": [["Birch Moor", ["Birch Moor is a heath.", " It is windy."]], ["Cold Tarn", ["Cold Tarn is a lake."]]]},
{"_id": "b", "question": "What is Cold Tarn?", "context": [["Cold Tarn", ["Cold Tarn is a lake."]]]}]`)
	wiki, _ := filepath.Abs(filepath.Join("wikidump", "testdata", "hotpotwiki"))
	tests := []struct {
		name, source, format string
		pages                int64
		title                string
		sentences            []string
		files                int
	}{
		{"questions", questions, "auto", 2, "Birch Moor", []string{"Birch Moor is a heath.", "It is windy."}, 1},
		{"hotpotqa-wiki", wiki, "auto", 4, "Marlow Ferry", []string{"Marlow Ferry is a small cable ferry on the River Tamsin.", "It has carried passengers since 1887.", "The ferry was rebuilt in 1952 after a flood."}, 3},
		{"hotpotqa-wiki named", wiki, "hotpotqa-wiki", 4, "Quillon (disambiguation)", []string{"Quillon may refer to:", "Quillon Bay, an inlet.", "Quillon, a crossguard part of a sword."}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ix")
			var progress int
			info, err := Build(t.Context(), dir, []string{tt.source}, BuildOptions{Format: tt.format, Progress: func(n int) { progress = n }})
			if err != nil {
				t.Fatal(err)
			}
			if info.Pages != tt.pages || len(info.Sources) != tt.files || progress != int(tt.pages) {
				t.Errorf("info: got %d pages, %d files, progress %d, want %d, %d", info.Pages, len(info.Sources), progress, tt.pages, tt.files)
			}
			for _, f := range info.Sources {
				if f.SHA256 != filetest.SHA256(t, f.Path) {
					t.Errorf("%s sha: got %s, want %s", f.Path, f.SHA256, filetest.SHA256(t, f.Path))
				}
			}
			ix, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			p, ok, err := ix.Page(t.Context(), tt.title, env.MatchPaper)
			if err != nil || !ok || !slices.Equal(p.Sentences, tt.sentences) {
				t.Errorf("Page(%q): got %q %v %v, want %q", tt.title, p.Sentences, ok, err, tt.sentences)
			}
		})
	}
}

func TestSharedFeverIntros(t *testing.T) {
	src := shareddata.Path(t, "react-transcripts/wiki_intros_from_fever_transcripts.jsonl")
	dir := filepath.Join(t.TempDir(), "ix")
	info, err := Build(t.Context(), dir, []string{src}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Pages+info.Duplicates < 300 || info.Sources[0].SHA256 != filetest.SHA256(t, src) {
		t.Errorf("info: got %d pages + %d duplicates, sha %s", info.Pages, info.Duplicates, info.Sources[0].SHA256)
	}
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	p, ok, err := ix.Page(t.Context(), "14th dalai lama", env.MatchPaper)
	if err != nil || !ok || len(p.Sentences) < 3 {
		t.Errorf("Page(14th dalai lama): got %q %v %v, want a page of several sentences", p.Title, ok, err)
	}
	s, err := ix.Similar(t.Context(), "Dalai Lama", 5)
	if err != nil || len(s) == 0 || !strings.Contains(s[0], "Dalai Lama") {
		t.Errorf("Similar(Dalai Lama): got %q %v, want a Dalai Lama title first", s, err)
	}
}

// TestTextKeepsSeparators checks that a page's text keeps every character the source
// gives, the index's own sentence marks aside: U+001E and the other information
// separators are text (Python's str.split("\n") and ". " do not split there; str.strip
// strips them at a line's ends), and invalid UTF-8, which the readers refuse, cannot
// reach the store.
func TestTextKeepsSeparators(t *testing.T) {
	src := filetest.Write(t, "sep.jsonl", `{"title": "Record Hall", "text": "Record Hall stands\u001eon the quay. It keeps\u001fthe ledgers.\nThe hall opened in 1890.\u001e"}
{"id": "Unit_Hall", "text": "", "lines": "0\tUnit Hall\u001ehas two doors .\n1\tIt was built in 1901 ."}
`)
	ix := buildOpen(t, src)
	p, ok, err := ix.Page(t.Context(), "Record Hall", env.MatchPaper)
	if want := "Record Hall stands\u001eon the quay. It keeps\u001fthe ledgers.\nThe hall opened in 1890.\u001e"; err != nil || !ok || p.Text != want {
		t.Errorf("text: got %q ok=%v err=%v, want %q", p.Text, ok, err, want)
	}
	// What wikienv.py shows for that text: no break at U+001E, which strip() drops at
	// the end of the line.
	res, err := env.New(ix, env.Options{}).Step(t.Context(), "Search[Record Hall]")
	if want := "Record Hall stands\u001eon the quay. It keeps\u001fthe ledgers.. The hall opened in 1890.."; err != nil || res.Observation != want {
		t.Errorf("paper Search: got %q err=%v, want %q", res.Observation, err, want)
	}
	p, ok, err = ix.Page(t.Context(), "Unit Hall", env.MatchPaper)
	if want := []string{"Unit Hall\u001ehas two doors .", "It was built in 1901 ."}; err != nil || !ok || !slices.Equal(p.Sentences, want) {
		t.Errorf("FEVER lines: got %q ok=%v err=%v, want %q", p.Sentences, ok, err, want)
	}
	for _, s := range []string{"a\xffb", "\xff", "ok"} {
		if got := validText(s); !utf8.ValidString(got) || strings.Contains(got, sentenceSep) {
			t.Errorf("validText(%q) = %q, want valid UTF-8 without the mark", s, got)
		}
	}
}

func TestBuildDuplicatesAcrossInsertBatches(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "{\"title\": \"Page %d\", \"text\": \"First text of page %d.\"}\n", i, i)
		if i%10 == 0 {
			fmt.Fprintf(&b, "{\"title\": \"Page_%d\", \"text\": \"Second text.\"}\n", i)
		}
	}
	src := filetest.Write(t, "dups.jsonl", b.String())
	dir := filepath.Join(t.TempDir(), "ix")
	info, err := Build(t.Context(), dir, []string{src}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Pages != 100 || info.Duplicates != 10 {
		t.Errorf("counts: got %d pages, %d duplicates, want 100 and 10", info.Pages, info.Duplicates)
	}
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, i := range []int{0, 50, 90, 99} {
		p, ok, err := ix.Page(t.Context(), fmt.Sprintf("page %d", i), env.MatchPaper)
		want := fmt.Sprintf("First text of page %d.", i)
		if err != nil || !ok || len(p.Sentences) != 1 || p.Sentences[0] != want {
			t.Errorf("Page(page %d): got %q %v %v, want %q", i, p.Sentences, ok, err, want)
		}
	}
}

// TestSimilarAcrossShards checks that Similar ranks over every FTS shard: the pages go
// to the shards in alternate batches of jobPages, so with three shards the two best
// matches for "zephyrine" live in different shards.
func TestSimilarAcrossShards(t *testing.T) {
	var b strings.Builder
	n := 3 * jobPages
	for i := range n {
		switch i {
		case 10, jobPages + 10, 2*jobPages + 10:
			fmt.Fprintf(&b, "{\"title\": \"Zephyrine %d\", \"text\": \"Zephyrine page number %d.\"}\n", i, i)
		case jobPages + 20:
			fmt.Fprintf(&b, "{\"title\": \"Quiet %d\", \"text\": \"A page that mentions zephyrine once.\"}\n", i)
		default:
			fmt.Fprintf(&b, "{\"title\": \"Filler %d\", \"text\": \"Filler page %d about nothing much.\"}\n", i, i)
		}
	}
	src := filetest.Write(t, "shards.jsonl", b.String())
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ix")
			info, err := Build(t.Context(), dir, []string{src}, BuildOptions{FTSShards: shards})
			if err != nil {
				t.Fatal(err)
			}
			if info.FTSShards != shards || info.Pages != int64(n) {
				t.Errorf("info: got %d shards, %d pages, want %d, %d", info.FTSShards, info.Pages, shards, n)
			}
			ix, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			got, err := ix.Similar(t.Context(), "zephyrine", 5)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"Zephyrine 10", "Zephyrine 522", "Zephyrine 1034", fmt.Sprintf("Quiet %d", jobPages+20)}
			slices.Sort(got[:min(3, len(got))])
			slices.Sort(want[:3])
			if !slices.Equal(got, want) {
				t.Errorf("Similar(zephyrine): got %q, want the three titles (any order) then the text mention %q", got, want)
			}
		})
	}
}

// TestStageRebuildsOtherFormat checks that the index stage rebuilds an index this build
// cannot read (one of another format version) from the corpus, and leaves a current one.
func TestStageRebuildsOtherFormat(t *testing.T) {
	src := filetest.Write(t, "pages.jsonl", fixtureJSONL)
	dir := filepath.Join(t.TempDir(), "index")
	st := Stage{Corpus: src, Dir: dir}
	id, _, err := Identity(dir, src)
	if err != nil {
		t.Fatal(err)
	}
	run := &pipeline.Run{Manifest: &pipeline.Manifest{Results: map[string]string{pipeline.CorpusKey: id}}}
	if !st.Needed(run) {
		t.Fatal("Needed without an index: got false")
	}
	if _, err := st.Run(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	if st.Needed(run) {
		t.Fatal("Needed after a build: got true")
	}
	// What an older build left: the same files, an older format version.
	info, err := ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	info.FormatVersion = FormatVersion - 1
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, infoFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("format version %d, this build reads only %d", FormatVersion-1, FormatVersion)) ||
		!strings.Contains(err.Error(), "--force") {
		t.Fatalf("Open of an older format: got %v, want an error naming both versions and the rebuild", err)
	}

	if !st.Needed(run) {
		t.Fatal("Needed with an older format: got false")
	}
	if _, err := st.Run(t.Context(), run); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	ix, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after the rebuild: %v", err)
	}
	defer ix.Close()
	if p, ok, err := ix.Page(t.Context(), "Marlow Ferry", env.MatchPaper); err != nil || !ok || p.Text == "" {
		t.Errorf("Page after the rebuild: got %+v ok=%v err=%v", p, ok, err)
	}
}
