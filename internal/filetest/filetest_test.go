package filetest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteThenSHA256(t *testing.T) {
	p := Write(t, "a.txt", "abc")
	if filepath.Base(p) != "a.txt" {
		t.Errorf("path %s: want a file called a.txt", p)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "abc" {
		t.Fatalf("read back %q, %v", b, err)
	}
	// The SHA-256 of "abc" from FIPS 180-2, appendix B.1.
	if got, want := SHA256(t, p), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("SHA256: got %s, want %s", got, want)
	}
}

func TestReadJSON(t *testing.T) {
	var got map[string]string
	ReadJSON(t, Write(t, "p.json", `{"a": "x\ny", "b": ""}`), &got)
	if len(got) != 2 || got["a"] != "x\ny" || got["b"] != "" {
		t.Errorf("ReadJSON: %q", got)
	}
}
