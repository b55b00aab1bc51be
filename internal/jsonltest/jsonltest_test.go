package jsonltest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEachDecodesEveryLineWithItsNumber(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	long := strings.Repeat("x", 1<<20) // longer than bufio's default 64 KiB token
	if err := os.WriteFile(path, []byte(`{"n":"a"}`+"\n"+`{"n":"`+long+`"}`+"\n"+`{"n":"c"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	Each(t, path, func(line int, rec struct{ N string }) {
		got = append(got, strings.Repeat("#", line)+rec.N[:1])
	})
	if want := "#a ##x ###c"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
}
