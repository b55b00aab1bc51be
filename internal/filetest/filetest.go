// Package filetest writes, reads and hashes the files that tests hand to the code under
// test: a source, task or config file in a temporary directory, a JSON file a test reads
// its expectations from, and the SHA-256 a test compares before and after. Only tests
// import it.
package filetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Write writes content to a file called name in a new temporary directory of t and
// returns its path.
func Write(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// SHA256 is the hex SHA-256 of the file at path.
func SHA256(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// ReadJSON decodes the JSON file at path into v.
func ReadJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
