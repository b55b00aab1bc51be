// Package jsonl is reactgen's one reader of JSON Lines, line by line: the corpus dumps, the
// task and question files, the importers' files, batch output files and the response cache
// are read through it. It consumes a buffered byte stream and produces its lines, each of
// any length up to a bound; a longer line is read past without being held whole (memory
// stays O(bound) whatever the stream holds), reported with ErrTooLong, and reading goes on
// after it. What a line means, and whether a bad one ends the read, is the caller's.
package jsonl

import (
	"bufio"
	"errors"
	"io"
)

// ErrTooLong is Next's error for a line over the Reader's bound.
var ErrTooLong = errors.New("line too long")

// HeadBytes is how much of a line over the bound Next returns with ErrTooLong: enough for
// the fields a record carries first, such as a batch line's custom_id.
const HeadBytes = 4 << 10

// Reader reads lines. It is not safe for concurrent use.
type Reader struct {
	r    *bufio.Reader
	max  int
	buf  []byte
	line int
	size int
	torn bool
}

// NewReader reads the lines of r, each of at most max bytes without its line end.
func NewReader(r *bufio.Reader, max int) *Reader {
	return &Reader{r: r, max: max}
}

// Next returns the next line without its line end ("\n" or "\r\n"); the slice is valid
// until the next call. It returns io.EOF after the last line. A line over the bound is
// read past: Next returns at most its first HeadBytes with ErrTooLong, and the next call
// the line after it. A last line without a newline is returned as any other, and Torn
// reports it. Another read error is returned as it is, with no line.
func (r *Reader) Next() ([]byte, error) {
	r.buf = r.buf[:0]
	r.size = 0
	long := false
	var line []byte
	for {
		chunk, err := r.r.ReadSlice('\n')
		r.size += len(chunk)
		full := errors.Is(err, bufio.ErrBufferFull)
		switch {
		case long || len(r.buf)+len(chunk) > r.max+2: // over the bound whatever its line end
			long = true
			r.buf = append(r.buf, chunk[:min(len(chunk), max(0, HeadBytes-len(r.buf)))]...)
		case len(r.buf) == 0 && !full:
			line = chunk // the whole line is in the reader's buffer: no copy
		default:
			r.buf = append(r.buf, chunk...)
		}
		if full {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if line == nil {
			line = r.buf
		}
		if err != nil && len(line) == 0 && !long {
			return nil, io.EOF
		}
		r.line++
		r.torn = err != nil
		if n := len(line); !long && n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
		}
		if long || len(line) > r.max {
			return line[:min(len(line), HeadBytes)], ErrTooLong
		}
		return line, nil
	}
}

// Line is the number of the line Next last returned, from 1; 0 before the first.
func (r *Reader) Line() int { return r.line }

// Size is how many bytes of the stream the line Next last returned took, its line end
// included, however long the line: the offset of the next line is the sum of the sizes.
func (r *Reader) Size() int { return r.size }

// Torn reports whether the line Next last returned ended the stream without a newline:
// a write cut short, where the stream is a file being appended to.
func (r *Reader) Torn() bool { return r.torn }
