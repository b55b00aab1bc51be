package index

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envtest"
	"github.com/reactgen/reactgen/internal/filetest"
)

// TestConformance runs the environment suite against a built index: the pages' texts go
// through JSONL, Build and Open, as a user's corpus does.
func TestConformance(t *testing.T) {
	envtest.RunConformance(t, func(t *testing.T, pages []env.Page) env.Corpus {
		t.Helper()
		src := filepath.Join(t.TempDir(), "pages.jsonl")
		f, err := os.Create(src)
		if err != nil {
			t.Fatal(err)
		}
		enc := json.NewEncoder(f)
		for _, p := range pages {
			rec := struct {
				Title          string `json:"title"`
				Text           string `json:"text"`
				Disambiguation bool   `json:"disambiguation"`
			}{p.Title, env.PageText(p), p.Disambiguation}
			if err := enc.Encode(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		// The project's splitter gives the fixture's sentences back from its text.
		return buildOpen(t, src)
	})
}

func TestBuildRemovesStaleBuilds(t *testing.T) {
	src := filetest.Write(t, "a.jsonl", `{"title": "One", "text": "One page."}`)
	parent := t.TempDir()
	dir := filepath.Join(parent, "index")
	// What a killed build leaves: its temp dir (with a half-written database) and the
	// old index it had moved aside; a sibling of another name must stay.
	for _, p := range []string{".index.building-123", ".index.building-456.old", ".other.building-789"} {
		if err := os.MkdirAll(filepath.Join(parent, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(parent, p, pagesFile), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Build(t.Context(), dir, []string{src}, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{".other.building-789", "index"}
	if got := names(t, parent); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("parent after build: got %q, want %q", got, want)
	}
	if !Exists(dir) {
		t.Error("index not built")
	}
}
