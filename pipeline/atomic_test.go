package pipeline

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAtomicFile: nothing stands under the final name before Commit, Commit puts the
// whole file there readable by all, Abort leaves the old file and no temporary one.
func TestAtomicFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f.jsonl")
	a, err := CreateAtomic(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	a.Buffer().WriteString("two\n")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("before Commit: stat %s gives %v, want not found", path, err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("after Commit: got %q, %v", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if err := a.Commit(); err == nil {
		t.Error("second Commit: got nil error")
	}
	a.Abort() // a no-op after Commit

	a, err = CreateAtomic(path)
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("half"))
	a.Abort()
	if b, _ := os.ReadFile(path); string(b) != "one\ntwo\n" {
		t.Errorf("after Abort: got %q, want the committed file", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("after Abort: %d entries, want only the committed file", len(entries))
	}
}
