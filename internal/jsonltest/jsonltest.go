// Package jsonltest reads JSON Lines files for tests: the shared data's trajectories and
// the files reactgen writes. It consumes a path and produces each line, or each line
// decoded into the caller's type; a file that cannot be read or a line that is not that
// JSON fails the test, naming the file and the line. Only tests import it.
package jsonltest

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/reactgen/reactgen/internal/jsonl"
)

// MaxLine is the longest line the readers take: a trajectory with long observations
// runs to a few megabytes.
const MaxLine = 16 << 20

// Lines calls fn with every line of the file at path (through jsonl.Reader, as reactgen
// reads them) and its number, from 1; the line's bytes are valid only during the call.
func Lines(tb testing.TB, path string, fn func(n int, line []byte)) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	lines := jsonl.NewReader(bufio.NewReaderSize(f, 64<<10), MaxLine)
	for {
		line, err := lines.Next()
		switch {
		case errors.Is(err, io.EOF):
			return
		case errors.Is(err, jsonl.ErrTooLong):
			tb.Fatalf("%s line %d: %v", path, lines.Line(), err)
		case err != nil:
			tb.Fatalf("%s line %d: %v", path, lines.Line()+1, err)
		}
		fn(lines.Line(), line)
	}
}

// Each decodes every line of the file at path into a new T and calls fn with it and the
// line's number, from 1.
func Each[T any](tb testing.TB, path string, fn func(n int, rec T)) {
	tb.Helper()
	Lines(tb, path, func(n int, line []byte) {
		var rec T
		if err := json.Unmarshal(line, &rec); err != nil {
			tb.Fatalf("%s line %d: %v", path, n, err)
		}
		fn(n, rec)
	})
}
