package export

import (
	"slices"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/jsonenc"
)

// escapedText is a text escaped once, with the offset in the escape of each cut of the
// text, so that a part of the text between two cuts is a part of the escape. A cut is
// kept only where the escape of the parts is the escape of the whole: where a byte next
// to it is ASCII, which no character of more bytes holds (an invalid byte is replaced on
// its own).
type escapedText struct {
	esc  []byte
	cuts []int // offsets in the text, ascending
	at   []int // offsets of the cuts in esc
}

// fill escapes text with the cuts that are kept of cuts (ascending; 0 and the end are
// always kept).
func (t *escapedText) fill(text string, cuts []int) {
	if cap(t.esc) < len(text)+len(text)/8 {
		t.esc = make([]byte, 0, len(text)+len(text)/8+64)
	}
	if cap(t.cuts) < len(cuts)+2 {
		t.cuts, t.at = make([]int, 0, len(cuts)+2), make([]int, 0, len(cuts)+2)
	}
	t.esc, t.cuts, t.at = t.esc[:0], append(t.cuts[:0], 0), append(t.at[:0], 0)
	prev := 0
	for _, c := range cuts {
		if c <= prev || c >= len(text) || (text[c-1] >= utf8.RuneSelf && text[c] >= utf8.RuneSelf) {
			continue
		}
		t.esc = jsonenc.AppendEscaped(t.esc, text[prev:c])
		t.cuts, t.at = append(t.cuts, c), append(t.at, len(t.esc))
		prev = c
	}
	t.esc = jsonenc.AppendEscaped(t.esc, text[prev:])
	t.cuts, t.at = append(t.cuts, len(text)), append(t.at, len(t.esc))
}

// span returns the escape of text[a:b], or false when a or b is not a kept cut.
func (t *escapedText) span(a, b int) ([]byte, bool) {
	i, ok := slices.BinarySearch(t.cuts, a)
	if !ok {
		return nil, false
	}
	j, ok := slices.BinarySearch(t.cuts[i:], b)
	if !ok {
		return nil, false
	}
	return t.esc[t.at[i]:t.at[i+j]], true
}

// textCuts are the cuts of ex.Text that the completion and alpaca rows take: the end of
// the prompt and each step's start and end.
func textCuts(ex *Example, cuts []int) []int {
	cuts = append(cuts[:0], len(ex.Prompt()))
	for _, sp := range ex.spans {
		cuts = append(cuts, sp.start, sp.end)
	}
	return cuts
}

// rowWriter appends one JSONL format's rows. It keeps what the format's rows of every
// example share (the options, the system message escaped, the tools of the last task
// and view) and the example being written, with its text escaped once for the
// completion layout's rows, which repeat it (each step's history is every step before).
//
// The texts that several formats repeat (turns, tool turns, steps) are escaped by each:
// escaped once per example for every format and copied into the rows, they cost more
// than escaping them again (docs/bench-export.md, "Third round: JSONL rows").
type rowWriter struct {
	o      lineOptions
	system []byte // o.System escaped
	ex     *Example
	// text is ex.Text escaped at textCuts, once textFor says it is ex's.
	text    escapedText
	textFor bool
	cuts    []int
	ts      *toolSet // toolsOf(tsTask, tsView)
	tsTask  string
	tsView  string
}

func newRowWriter(o lineOptions) *rowWriter {
	return &rowWriter{o: o, system: jsonenc.AppendEscaped(nil, o.System)}
}

// start makes ex the example the writer writes.
func (w *rowWriter) start(ex *Example) {
	w.ex, w.textFor = ex, false
}

// tools returns the tools of the example's task and view.
func (w *rowWriter) tools() *toolSet {
	if w.ts == nil || w.tsTask != w.ex.Task || w.tsView != w.ex.View {
		w.ts, w.tsTask, w.tsView = toolsOf(w.ex.Task, w.ex.View), w.ex.Task, w.ex.View
	}
	return w.ts
}

// textSpan appends ex.Text[a:b] escaped.
func (w *rowWriter) textSpan(dst []byte, a, b int) []byte {
	if !w.textFor {
		w.cuts = textCuts(w.ex, w.cuts)
		w.text.fill(w.ex.Text, w.cuts)
		w.textFor = true
	}
	if esc, ok := w.text.span(a, b); ok {
		return append(dst, esc...)
	}
	return jsonenc.AppendEscaped(dst, w.ex.Text[a:b])
}
