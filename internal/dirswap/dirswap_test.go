package dirswap

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// generation writes a folder at path holding one file, name, that says what.
func generation(t *testing.T, path, name, what string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, name), []byte(what), 0o644); err != nil {
		t.Fatal(err)
	}
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// useRenames makes Replace take the path of a file system that cannot exchange two
// directories until the test ends.
func useRenames(t *testing.T) {
	t.Cleanup(func() { exchangeDirs = exchange })
	exchangeDirs = func(a, b string) error { return errNoExchange }
}

func TestReplace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		renames bool
	}{{"atomic exchange", false}, {"two renames", true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.renames {
				useRenames(t)
			} else if runtime.GOOS == "linux" {
				t.Cleanup(func() { afterMoveAside = func() {} })
				afterMoveAside = func() { t.Error("took the two-rename path where Linux exchanges the directories") }
			}
			parent := t.TempDir()
			dir, staged := filepath.Join(parent, "export"), filepath.Join(parent, ".export.tmp-1")

			// Where nothing stands, staged takes dir's name.
			generation(t, staged, "a.jsonl", "first")
			if err := Replace(staged, dir); err != nil {
				t.Fatal(err)
			}
			open, err := os.Open(filepath.Join(dir, "a.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer open.Close()

			// Over an existing generation: the new one whole, nothing of the old, and a
			// file of the old one opened before reads on.
			generation(t, staged, "b.jsonl", "second")
			if err := Replace(staged, dir); err != nil {
				t.Fatal(err)
			}
			if got := entries(t, dir); !slices.Equal(got, []string{"b.jsonl"}) {
				t.Errorf("dir holds %q, want only the new generation's b.jsonl", got)
			}
			if got := entries(t, parent); !slices.Equal(got, []string{"export"}) {
				t.Errorf("parent holds %q, want only export", got)
			}
			if b, err := io.ReadAll(open); err != nil || string(b) != "first" {
				t.Errorf("a file of the old generation opened before: read %q, %v", b, err)
			}
		})
	}
}

// A kill between the two renames leaves the old generation aside under AsidePrefix and
// the new one under its staging name, nothing in dir's place: whole generations, which
// the caller puts back or removes.
func TestKillBetweenRenames(t *testing.T) {
	useRenames(t)
	t.Cleanup(func() { afterMoveAside = func() {} })
	parent := t.TempDir()
	dir, staged := filepath.Join(parent, "index"), filepath.Join(parent, ".index.building-1")
	generation(t, dir, "a", "old")
	generation(t, staged, "b", "new")
	var state []string
	afterMoveAside = func() {
		state = entries(t, parent)
		panic("killed")
	}
	func() {
		defer func() { recover() }()
		Replace(staged, dir)
	}()
	if len(state) != 2 || state[0] != ".index.building-1" || !strings.HasPrefix(state[1], AsidePrefix("index")) {
		t.Fatalf("between the renames: %q, want the staged generation and the old one aside, nothing in place", state)
	}
	if got := entries(t, filepath.Join(parent, state[1])); !slices.Equal(got, []string{"a"}) {
		t.Errorf("the generation aside holds %q, want the old one whole", got)
	}
}

// When staged cannot take dir's name, the old generation is put back in place.
func TestFailedMovePutsTheOldBack(t *testing.T) {
	useRenames(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "export")
	generation(t, dir, "a", "old")
	err := Replace(filepath.Join(parent, ".export.tmp-missing"), dir)
	if err == nil {
		t.Fatal("got no error for a staged folder that does not exist")
	}
	if got := entries(t, parent); !slices.Equal(got, []string{"export"}) {
		t.Errorf("parent holds %q, want the old export back in place", got)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"a"}) {
		t.Errorf("export holds %q, want the old generation", got)
	}
}
