package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/atomicfile"
)

// TestHashedJSONLDigest: a hashed JSONL writer's digest is the file's as committed, its
// kept and rejected lines alike.
func TestHashedJSONLDigest(t *testing.T) {
	dir := t.TempDir()
	j, err := CreateHashedJSONL(filepath.Join(dir, "kept.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		line := fmt.Appendf(nil, `{"id":"e%d","text":"%s"}`, i, strings.Repeat("x", i%700))
		if i%3 == 0 {
			err = j.WriteRejected(line, []Reject{{Rule: "correct", Code: "wrong_answer"}})
		} else {
			err = j.WriteLine(line)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	tmp, err := j.Ready()
	if err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(dir, "kept.jsonl")
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	n, sum, err := j.Digest()
	if err != nil {
		t.Fatal(err)
	}
	wantN, wantSum, err := atomicfile.Digest(final)
	if err != nil {
		t.Fatal(err)
	}
	if n != wantN || sum != wantSum {
		t.Errorf("Digest = %d %s, the file on disk %d %s", n, sum, wantN, wantSum)
	}

}
