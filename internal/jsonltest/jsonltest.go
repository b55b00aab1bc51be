// Package jsonltest reads JSON Lines files for tests: the shared data's trajectories and
// the files reactgen writes. It consumes a path and produces each line, or each line
// decoded into the caller's type; a file that cannot be read or a line that is not that
// JSON fails the test, naming the file and the line. Only tests import it.
package jsonltest

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// MaxLine is the longest line the readers take: a trajectory with long observations
// runs to a few megabytes.
const MaxLine = 16 << 20

// Lines calls fn with every line of the file at path and its number, from 1; the line's
// bytes are valid only during the call.
func Lines(tb testing.TB, path string, fn func(n int, line []byte)) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		fn(n, sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s line %d: %v", path, n+1, err)
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
