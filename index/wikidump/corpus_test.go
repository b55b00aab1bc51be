package wikidump

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/filetest"
)

// readAll drains a reader and returns its docs.
func readAll(t *testing.T, path, format string, opts Options) ([]Doc, Reader, error) {
	t.Helper()
	r, err := Open(t.Context(), path, format, opts)
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { r.Close() })
	var docs []Doc
	for {
		d, err := r.Next(t.Context())
		if errors.Is(err, io.EOF) {
			return docs, r, nil
		}
		if err != nil {
			return docs, r, err
		}
		docs = append(docs, d)
	}
}

func TestJSONLTextShapes(t *testing.T) {
	p := filetest.Write(t, "pages.jsonl", `{"title": "Alpha", "text": "Alpha is first. Beta is second."}

{"title": "Beta", "text": ["Beta one. Beta two.", "Beta three."]}
{"title": " Gamma ", "text": [["Gamma one.", " Gamma two. Still two."], ["Gamma three."]], "disambiguation": true}
`)
	docs, r, err := readAll(t, p, FormatAuto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Doc{
		{Title: "Alpha", Sentences: []string{"Alpha is first.", "Beta is second."}, Text: "Alpha is first. Beta is second.", Line: 1},
		{Title: "Beta", Sentences: []string{"Beta one.", "Beta two.", "Beta three."}, Text: "Beta one. Beta two.\nBeta three.", Line: 3},
		{Title: "Gamma", Sentences: []string{"Gamma one.", "Gamma two. Still two.", "Gamma three."}, Text: "Gamma one. Gamma two. Still two.\nGamma three.", Disambiguation: true, Line: 4},
	}
	if len(docs) != len(want) {
		t.Fatalf("docs: got %d, want %d", len(docs), len(want))
	}
	for i, w := range want {
		d := docs[i]
		if d.Title != w.Title || !slices.Equal(d.Sentences, w.Sentences) || d.Text != w.Text || d.Disambiguation != w.Disambiguation || d.Line != w.Line || d.File != p {
			t.Errorf("doc %d: got %+v, want %+v", i, d, w)
		}
	}
	files := r.Files()
	if len(files) != 1 || files[0].SHA256 != filetest.SHA256(t, p) || files[0].Path != p {
		t.Errorf("files: got %+v, want one with sha %s", files, filetest.SHA256(t, p))
	}
}

func TestJSONLTextEscapes(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"plain", `"Plain words here."`, []string{"Plain words here."}},
		{"quote", `"A \"quoted\" word."`, []string{`A "quoted" word.`}},
		{"unicode escape", `"Caf\u00e9 and \ud83d\ude00."`, []string{"Café and \U0001F600."}},
		{"slash and tab", `"a\/b\tc."`, []string{"a/b\tc."}},
		{"raw utf-8", `"Zélie Marché."`, []string{"Zélie Marché."}},
		{"list items", `["One.", "T\u0077o."]`, []string{"One.", "Two."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filetest.Write(t, "pages.jsonl", `{"title": "X", "text": `+tt.text+"}\n")
			docs, _, err := readAll(t, p, FormatJSONL, Options{Split: func(s string) []string { return []string{s} }})
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 || !slices.Equal(docs[0].Sentences, tt.want) {
				t.Errorf("sentences: got %+v, want %q", docs, tt.want)
			}
		})
	}
}

func TestJSONLLongLine(t *testing.T) {
	long := strings.Repeat("word ", 400_000) // 2 MB, far past bufio.Scanner's limit
	p := filetest.Write(t, "long.jsonl", `{"title": "Long", "text": "`+long+`"}`+"\n"+`{"title": "Short", "text": "Tiny."}`)
	docs, _, err := readAll(t, p, FormatJSONL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[1].Title != "Short" {
		t.Fatalf("docs: got %d (%v), want Long and Short", len(docs), docs)
	}
	if got := len(docs[0].Sentences[0]); got != len(strings.TrimSpace(long)) {
		t.Errorf("long sentence: got %d bytes, want %d", got, len(strings.TrimSpace(long)))
	}
}

func TestJSONLLineOverTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 65 MB line")
	}
	p := filepath.Join(t.TempDir(), "huge.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"title": "First", "text": "First page."}` + "\n" + `{"title": "Huge", "text": "`)
	chunk := strings.Repeat("word ", 1<<16)
	for range MaxLineBytes/len(chunk) + 1 {
		f.WriteString(chunk)
	}
	f.WriteString("\"}\n" + `{"title": "Last", "text": "Last page."}` + "\n")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, err = readAll(t, p, FormatJSONL, Options{})
	if err == nil || !strings.Contains(err.Error(), p+" line 2") || !strings.Contains(err.Error(), "64 MiB") {
		t.Fatalf("got %v, want an error naming %s line 2 and the bound", err, p)
	}
	docs, r, err := readAll(t, p, FormatJSONL, Options{SkipBad: true})
	if err != nil || len(docs) != 2 || docs[1].Title != "Last" || docs[1].Line != 3 || r.Stats().Skipped != 1 {
		t.Errorf("with SkipBad: %d docs, %v; want First and Last (line 3), one skipped", len(docs), err)
	}
}

func TestJSONLErrors(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"bad json", "{\"title\": \"A\", \"text\": \"x\"}\n{\"title\": \"B\", \"text\": \n", "line 2: invalid JSON"},
		{"no title", `{"text": "x"}`, `line 1: missing "title"`},
		{"no text", `{"title": "A"}`, `line 1: missing "text"`},
		{"text number", `{"title": "A", "text": 3}`, `line 1: "text": want a string`},
		{"bad utf8", "{\"title\": \"A\", \"text\": \"ok\"}\n{\"title\": \"B\xff\", \"text\": \"x\"}\n", "line 2: invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filetest.Write(t, "c.jsonl", tt.content)
			_, _, err := readAll(t, p, FormatJSONL, Options{})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error: got %q, want it to name %s and contain %q", err, p, tt.want)
			}
		})
	}
}

func TestJSONLSkipBad(t *testing.T) {
	p := filetest.Write(t, "c.jsonl", "{\"title\": \"A\", \"text\": \"ok\"}\nnot json\n{\"title\": \"B\xff\", \"text\": \"x\"}\n{\"text\": \"x\"}\n{\"title\": \"C\", \"text\": \"fine\"}\n")
	docs, r, err := readAll(t, p, FormatJSONL, Options{SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A", "B\uFFFD", "C"}; !slices.Equal(titles(docs), want) {
		t.Errorf("titles: got %q, want %q", titles(docs), want)
	}
	if got, want := r.Stats(), (Stats{Skipped: 2, Repaired: 1}); got != want {
		t.Errorf("stats: got %+v, want %+v", got, want)
	}
}

func TestHotpotWikiTree(t *testing.T) {
	dir := filepath.Join("testdata", "hotpotwiki")
	docs, r, err := readAll(t, dir, FormatAuto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Doc{
		{Title: "Marlow Ferry", Sentences: []string{"Marlow Ferry is a small cable ferry on the River Tamsin.", "It has carried passengers since 1887.", "The ferry was rebuilt in 1952 after a flood."}},
		{Title: "Quillon Bay", Sentences: []string{"Quillon Bay is a sheltered inlet known for its seagrass meadows.", "Its lighthouse dates from 1901."}},
		{Title: "Quillon (disambiguation)", Sentences: []string{"Quillon may refer to:", "Quillon Bay, an inlet.", "Quillon, a crossguard part of a sword."}},
		{Title: "Tamsin Orchard", Sentences: []string{"Tamsin Orchard is an apple orchard beside the River Tamsin."}},
	}
	if len(docs) != len(want) {
		t.Fatalf("docs: got %d, want %d", len(docs), len(want))
	}
	for i, w := range want {
		if docs[i].Title != w.Title || !slices.Equal(docs[i].Sentences, w.Sentences) {
			t.Errorf("doc %d: got %q %q, want %q %q", i, docs[i].Title, docs[i].Sentences, w.Title, w.Sentences)
		}
	}
	// The text keeps the dump's paragraphs, each its sentences as the dump spaces them.
	if got, want := docs[0].Text, "Marlow Ferry is a small cable ferry on the River Tamsin. It has carried passengers since 1887.\nThe ferry was rebuilt in 1952 after a flood."; got != want {
		t.Errorf("Marlow Ferry text: got %q, want %q", got, want)
	}
	files := r.Files()
	if len(files) != 3 {
		t.Fatalf("files: got %d, want 3", len(files))
	}
	for _, f := range files {
		if f.SHA256 != filetest.SHA256(t, f.Path) {
			t.Errorf("%s sha: got %s, want %s", f.Path, f.SHA256, filetest.SHA256(t, f.Path))
		}
	}
}

func TestHotpotWikiBadLine(t *testing.T) {
	p := filepath.Join("testdata", "hotpotbad", "wiki_00.bz2")
	readBad(t, p, FormatAuto, p+" line 2:", 2, 1)
}

// readBad reads a file with a bad record twice: without SkipBad the error must name
// where (the path and the line or record); with SkipBad it gives wantDocs documents and
// skips wantSkipped. It returns the second reader.
func readBad(t *testing.T, path, format, where string, wantDocs, wantSkipped int) Reader {
	t.Helper()
	_, _, err := readAll(t, path, format, Options{})
	if err == nil || !strings.Contains(err.Error(), where) {
		t.Errorf("error: got %v, want it to name %s", err, where)
	}
	docs, r, err := readAll(t, path, format, Options{SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != wantDocs || r.Stats().Skipped != wantSkipped {
		t.Errorf("skip bad: got %d docs, %d skipped, want %d and %d", len(docs), r.Stats().Skipped, wantDocs, wantSkipped)
	}
	return r
}

// titles lists the documents' titles in order.
func titles(docs []Doc) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.Title)
	}
	return out
}

func TestQuestionsContext(t *testing.T) {
	p := filetest.Write(t, "dev.json", `[
 {"_id": "q1", "question": "Which?", "answer": "x", "context": [["Ferry Lane", ["Ferry Lane is a road.", " It is short."]], ["Oak Hill", ["Oak Hill is a hill."]]]},
 {"_id": "q2", "question": "What?", "answer": "y", "context": [["Oak Hill", ["Oak Hill is a hill."]], ["Elm Park", ["Elm Park is a park."]]]}
]
`)
	docs, r, err := readAll(t, p, FormatAuto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Ferry Lane", "Oak Hill", "Elm Park"}; !slices.Equal(titles(docs), want) {
		t.Errorf("titles: got %q, want %q", titles(docs), want)
	}
	if got, want := docs[0].Sentences, []string{"Ferry Lane is a road.", "It is short."}; !slices.Equal(got, want) {
		t.Errorf("sentences: got %q, want %q", got, want)
	}
	if got, want := docs[0].Text, "Ferry Lane is a road. It is short."; got != want {
		t.Errorf("text: got %q, want %q", got, want)
	}
	if f := r.Files(); len(f) != 1 || f[0].SHA256 != filetest.SHA256(t, p) {
		t.Errorf("files: got %+v, want sha %s", f, filetest.SHA256(t, p))
	}
}

func TestQuestionsErrors(t *testing.T) {
	// Records are numbered from 0, as the question reader (dataset) numbers them.
	bad := `[{"_id": "a", "question": "A?", "context": [["A", ["a."]]]},
		{"_id": "b", "question": "B?", "context": [["B", "not a list"]]},
		{"_id": "c", "question": "C?", "context": [["C", ["c."]]]},
		{"_id": "d", "question": "D?"}]`
	p := filetest.Write(t, "dev.json", bad)
	// Skipped: record 1 (bad context, by the question reader) and record 3 (no context).
	r := readBad(t, p, FormatHotpotQuestions, p+" record 1", 2, 2)
	if f := r.Files(); len(f) != 1 || f[0].SHA256 != filetest.SHA256(t, p) {
		t.Errorf("files: got %+v, want sha %s", f, filetest.SHA256(t, p))
	}
}

func TestDetectFormat(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a.jsonl": "{}", "q.json": " [ ]", "p.json": "{\"title\": 1}", "x.txt": "hi"}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path, want string
		err        bool
	}{
		{filepath.Join(dir, "a.jsonl"), FormatJSONL, false},
		{filepath.Join(dir, "q.json"), FormatHotpotQuestions, false},
		{filepath.Join(dir, "p.json"), FormatJSONL, false},
		{dir, FormatHotpotWiki, false},
		{filepath.Join("testdata", "hotpotbad", "wiki_00.bz2"), FormatHotpotWiki, false},
		{filepath.Join(dir, "x.txt"), "", true},
		{filepath.Join(dir, "missing.jsonl"), "", true},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			got, err := DetectFormat(tt.path)
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("DetectFormat(%s): got %q, %v, want %q (error %v)", tt.path, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestStripLinks(t *testing.T) {
	tests := []struct{ in, want string }{
		{`plain`, `plain`},
		{`the <a href="River%20X">River X</a> flows`, `the River X flows`},
		{`a < b and <b>bold</b>`, `a < b and <b>bold</b>`},
		{`broken <a href="x`, `broken <a href="x`},
	}
	for _, tt := range tests {
		if got := stripLinks(tt.in); got != tt.want {
			t.Errorf("stripLinks(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFEVERWikiPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wiki-001.jsonl")
	body := `{"id": "", "text": "", "lines": ""}` + "\n" +
		`{"id": "Orla_Venn_-LRB-sculptor-RRB-", "text": "Orla Venn is a sculptor . She lives in Teshmar .", "lines": "0\tOrla Venn is a sculptor .\tsculptor\n1\t\n2\tShe lives in Teshmar .\tTeshmar\tcity"}` + "\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(t.Context(), path, "auto", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	doc, err := r.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "Orla Venn (sculptor)" {
		t.Errorf("title: got %q", doc.Title)
	}
	want := []string{"Orla Venn is a sculptor .", "", "She lives in Teshmar ."}
	if !slices.Equal(doc.Sentences, want) {
		t.Errorf("sentences: got %q, want %q (kept at FEVER's line numbers)", doc.Sentences, want)
	}
	if _, err := r.Next(t.Context()); err != io.EOF {
		t.Errorf("after the last page: got %v, want io.EOF", err)
	}
}
