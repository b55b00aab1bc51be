package jsonltest

import (
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/filetest"
)

func TestEachDecodesEveryLineWithItsNumber(t *testing.T) {
	long := strings.Repeat("x", 1<<20) // longer than bufio's default 64 KiB token
	path := filetest.Write(t, "a.jsonl", `{"n":"a"}`+"\n"+`{"n":"`+long+`"}`+"\n"+`{"n":"c"}`)
	var got []string
	Each(t, path, func(line int, rec struct{ N string }) {
		got = append(got, strings.Repeat("#", line)+rec.N[:1])
	})
	if want := "#a ##x ###c"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
}
