package atomicfile

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
	a, err := Create(path)
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

	a, err = Create(path)
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

// TestHashedAtomicDigest: a CreateHashed file's Digest is Digest of the file
// committed, whichever way its bytes went in: Write, the buffer's small writes, a write
// larger than the buffer (which goes past it), a copy from another file (which would be
// os.File's copy_file_range, around the hash, had bufio reached the file itself), and
// the JSONL writer's lines and rejected records; Ready and then a rename, as Run.Commit
// moves the filter's files, as well as Commit. Before Ready, or for a plain
// Create file, Digest is an error.
func TestHashedAtomicDigest(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	big := make([]byte, 3<<20+17) // past the 1 MB buffer
	for i := range big {
		big[i] = byte(i * 7)
	}
	if err := os.WriteFile(src, big[:2<<20], 0o644); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(dir, "a.bin")
	a, err := CreateHashed(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Digest(); err == nil {
		t.Error("Digest before Commit: got nil error")
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := a.Buffer().ReadFrom(f); err != nil { // with the buffer empty
		t.Fatal(err)
	}
	a.Write([]byte("head\n"))
	a.Buffer().WriteString("small\n")
	a.Write(big)
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	checkDigest(t, a.Digest, path)

	plain, err := Create(filepath.Join(dir, "plain"))
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := plain.Digest(); err == nil {
		t.Error("Digest of a Create file: got nil error")
	}
}

func checkDigest(t *testing.T, digest func() (int64, string, error), path string) {
	t.Helper()
	n, sum, err := digest()
	if err != nil {
		t.Fatal(err)
	}
	wn, wsum, err := Digest(path)
	if err != nil {
		t.Fatal(err)
	}
	if n != wn || sum != wsum {
		t.Errorf("%s: the writer's digest %d bytes %s, the file's %d bytes %s", path, n, sum, wn, wsum)
	}
}
