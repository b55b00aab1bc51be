package index

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/index/wikidump"
	"github.com/reactgen/reactgen/internal/dirswap"
	"github.com/reactgen/reactgen/internal/filetest"
	"github.com/reactgen/reactgen/pipeline"
)

// pageOf reports whether the open index serves a page of that title.
func pageOf(t *testing.T, ix *Index, title string) bool {
	t.Helper()
	_, ok, err := ix.Page(t.Context(), title, env.MatchPaper)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// names lists the entries of dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestIdentityIsKnownBeforeTheBuild(t *testing.T) {
	src := filetest.Write(t, "a.jsonl", `{"title": "One", "text": "One page."}`)
	other := filetest.Write(t, "b.jsonl", `{"title": "Two", "text": "Two pages."}`)
	dir := filepath.Join(t.TempDir(), "index")
	want, ins, err := Identity(dir, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 2 || ins[0].Role != "corpus-index" || ins[0].SHA256 != want || ins[1].Role != "corpus" || ins[1].Path != src {
		t.Errorf("inputs: got %+v", ins)
	}
	info, err := Build(t.Context(), dir, []string{src}, BuildOptions{Format: wikidump.FormatJSONL})
	if err != nil {
		t.Fatal(err)
	}
	if info.Identity != want {
		t.Errorf("built identity %s, want %s (known before the build, format auto)", info.Identity, want)
	}
	if got, _, _ := Identity(dir, ""); got != want {
		t.Errorf("identity from the index alone: got %s, want %s", got, want)
	}
	if o, _, _ := Identity(dir, other); o == want {
		t.Error("another corpus has the same identity")
	}
	if IdentityOf(info.Sources, -5) == want {
		t.Error("another fts_chars has the same identity")
	}
	// An edited corpus is another identity, though the index is unchanged.
	if err := os.WriteFile(src, []byte(`{"title": "One", "text": "One page, edited."}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := Identity(dir, src); got == want {
		t.Error("an edited corpus kept its identity")
	}
}

func TestSecondBuildIsRefusedAndTouchesNothing(t *testing.T) {
	src := filetest.Write(t, "a.jsonl", `{"title": "One", "text": "One page."}`)
	parent := t.TempDir()
	dir := filepath.Join(parent, "index")
	// The first build, as another process sees it: the lock held and its files in
	// progress.
	first, err := pipeline.AcquireLockFile(filepath.Join(parent, ".index.lock"), "index", dir, "the first build")
	if err != nil {
		t.Fatal(err)
	}
	inProgress := filepath.Join(parent, ".index.building-1")
	if err := os.MkdirAll(inProgress, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Build(t.Context(), dir, []string{src}, BuildOptions{})
	var le *pipeline.LockedError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "the first build") {
		t.Fatalf("second build: got %v, want a LockedError naming the first", err)
	}
	if _, err := os.Stat(inProgress); err != nil {
		t.Errorf("the refused build removed the first one's files: %v", err)
	}
	first.Release()
	if _, err := Build(t.Context(), dir, []string{src}, BuildOptions{}); err != nil {
		t.Fatalf("build once the first is gone: %v", err)
	}
	if got := names(t, parent); !slices.Equal(got, []string{"index"}) {
		t.Errorf("parent after the build: %q, want only the index", got)
	}
}

// A forced rebuild exchanges the two indexes (dirswap.Replace, whose tests also take the
// two-rename path of file systems that cannot exchange): an index opened before it
// serves on.
func TestForcedRebuildKeepsTheOldIndexServing(t *testing.T) {
	a := filetest.Write(t, "a.jsonl", `{"title": "Alder", "text": "Alder is a tree."}`)
	b := filetest.Write(t, "b.jsonl", `{"title": "Birch", "text": "Birch is a tree."}`)
	parent := t.TempDir()
	dir := filepath.Join(parent, "index")
	if _, err := Build(t.Context(), dir, []string{a}, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	old, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := Build(t.Context(), dir, []string{b}, BuildOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if !pageOf(t, old, "Alder") {
		t.Error("the index opened before the rebuild stopped serving its pages")
	}
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if !pageOf(t, ix, "Birch") || pageOf(t, ix, "Alder") {
		t.Error("the rebuilt index does not hold the new corpus alone")
	}
	if got := names(t, parent); !slices.Equal(got, []string{"index"}) {
		t.Errorf("parent after the rebuild: %q, want only the index", got)
	}
}

func TestKillBetweenRenamesLosesNoIndex(t *testing.T) {
	a := filetest.Write(t, "a.jsonl", `{"title": "Alder", "text": "Alder is a tree."}`)
	b := filetest.Write(t, "b.jsonl", `{"title": "Birch", "text": "Birch is a tree."}`)
	killed := t.TempDir()
	dir := filepath.Join(killed, "index")
	built, err := Build(t.Context(), dir, []string{a}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What a kill between the two renames of a forced rebuild leaves where the file
	// system cannot exchange directories (dirswap's TestKillBetweenRenames stops
	// dirswap.Replace there): the build's lock file, the new index whole under its
	// building name, the old one moved aside and nothing in place.
	building := filepath.Join(t.TempDir(), "index")
	if _, err := Build(t.Context(), building, []string{b}, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(building, filepath.Join(killed, ".index.building-2")); err != nil {
		t.Fatal(err)
	}
	lock, err := pipeline.AcquireLockFile(filepath.Join(killed, ".index.lock"), "index", dir, "the killed build")
	if err != nil {
		t.Fatal(err)
	}
	lock.Release()
	if err := os.Rename(dir, filepath.Join(killed, dirswap.AsidePrefix("index")+"1")); err != nil {
		t.Fatal(err)
	}

	// The next reader of the index puts the old one back, whole.
	if err := Recover(dir, nil); err != nil {
		t.Fatal(err)
	}
	info, err := ReadInfo(dir)
	if err != nil || info.Identity != built.Identity {
		t.Fatalf("after recovery: %+v %v, want the old index %s", info.Identity, err, built.Identity)
	}
	// And the next build replaces it and leaves nothing else.
	if _, err := Build(t.Context(), dir, []string{b}, BuildOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if !pageOf(t, ix, "Birch") {
		t.Error("the rebuild after the kill does not serve the new corpus")
	}
	if got := names(t, killed); !slices.Equal(got, []string{"index"}) {
		t.Errorf("after the rebuild: %q, want only the index", got)
	}
}
