package jsonl_test

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/reactgen/reactgen/internal/jsonl"
)

// line is what one Next call returned.
type line struct {
	text string
	long bool
	n    int
	torn bool
}

// readAll reads every line of s through a Reader of bound max over a buffer of 16 bytes,
// so that long lines span many reads.
func readAll(t *testing.T, s string, max int) []line {
	t.Helper()
	r := jsonl.NewReader(bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(s)), 16), max)
	var out []line
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil && !errors.Is(err, jsonl.ErrTooLong) {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, line{text: string(b), long: err != nil, n: r.Line(), torn: r.Torn()})
	}
}

func TestNext(t *testing.T) {
	long := `{"custom_id":"req-7","body":"` + strings.Repeat("x", 10000) + `"}`
	tests := []struct {
		name string
		in   string
		max  int
		want []line
	}{
		{"lines and line ends", "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":3}\n", 64,
			[]line{{`{"a":1}`, false, 1, false}, {`{"b":2}`, false, 2, false}, {"", false, 3, false}, {`{"c":3}`, false, 4, false}}},
		{"a last line without a newline is torn", "{\"a\":1}\n{\"b\"", 64,
			[]line{{`{"a":1}`, false, 1, false}, {`{"b"`, false, 2, true}}},
		{"empty", "", 64, nil},
		{"a line of the bound is read whole", "0123456789\r\nx\n", 10,
			[]line{{"0123456789", false, 1, false}, {"x", false, 2, false}}},
		{"a byte over the bound is too long", "0123456789a\nx\n", 10,
			[]line{{"0123456789a", true, 1, false}, {"x", false, 2, false}}},
		{"a long line gives its head and reading goes on", long + "\n{\"a\":1}\n", 100,
			[]line{{long[:jsonl.HeadBytes], true, 1, false}, {`{"a":1}`, false, 2, false}}},
		{"a long torn last line", "{\"a\":1}\n" + long, 100,
			[]line{{`{"a":1}`, false, 1, false}, {long[:jsonl.HeadBytes], true, 2, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAll(t, tt.in, tt.max)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines %+v, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d: got %+v, want %+v", i+1, got[i], tt.want[i])
				}
			}
		})
	}
}

// A read error other than the end of the stream is returned as it is.
func TestNextReadError(t *testing.T) {
	boom := errors.New("disk gone")
	r := jsonl.NewReader(bufio.NewReader(io.MultiReader(strings.NewReader("{}\n{"), iotest.ErrReader(boom))), 64)
	if b, err := r.Next(); err != nil || string(b) != "{}" {
		t.Fatalf("first line: %q, %v", b, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("got %v, want the read error", err)
	}
}

// A line far over the bound is read past, and the line after it read.
func TestLongLineIsNotHeld(t *testing.T) {
	const size = 64 << 20
	src := io.MultiReader(strings.NewReader(`{"id":"big","x":"`), &zeros{n: size}, strings.NewReader("\"}\n{}\n"))
	r := jsonl.NewReader(bufio.NewReaderSize(src, 64<<10), 1<<20)
	b, err := r.Next()
	if !errors.Is(err, jsonl.ErrTooLong) || !strings.HasPrefix(string(b), `{"id":"big"`) || len(b) > jsonl.HeadBytes {
		t.Fatalf("got %d bytes, %v; want the head and ErrTooLong", len(b), err)
	}
	if b, err := r.Next(); err != nil || string(b) != "{}" {
		t.Errorf("the line after: %q, %v", b, err)
	}
}

// zeros reads n bytes of '0'.
type zeros struct{ n int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), z.n)
	for i := range p[:k] {
		p[i] = '0'
	}
	z.n -= k
	return k, nil
}

// The sizes of the lines, long ones and a torn last one included, add up to the stream:
// each line's offset is known.
func TestSizesAddUp(t *testing.T) {
	in := "{\"a\":1}\r\n\n" + strings.Repeat("x", 5000) + "\n{\"b\":2}\n{\"c\""
	r := jsonl.NewReader(bufio.NewReaderSize(strings.NewReader(in), 16), 100)
	off := 0
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, jsonl.ErrTooLong) {
			t.Fatal(err)
		}
		if err == nil && !strings.HasPrefix(in[off:], string(b)) {
			t.Errorf("line %d: %q does not stand at offset %d", r.Line(), b, off)
		}
		off += r.Size()
	}
	if off != len(in) {
		t.Errorf("sizes add up to %d, want %d", off, len(in))
	}
}
