// Package dataset is reactgen's one reader of question files: the task file of a run,
// the evaluation files of decontamination, the gold file of an import and a HotpotQA
// question file read as a corpus all come through it, so a format is detected, and a bad
// record reported, in one way. It consumes HotpotQA's official JSON, the simplified
// HotpotQA list that the ReAct paper's code reads, FEVER JSONL and a generic JSONL of
// {id, question, answer}, and produces pipeline.Questions (Load, or a Reader record by
// record) with a Report of what was read, kept and skipped.
//
// Files are streamed record by record (a JSON array through json.Decoder tokens, JSONL
// line by line), each record within MaxRecordBytes and its question and answer within
// MaxTextBytes, so memory follows the questions kept, not the file, and reading stops as
// soon as Limit questions are kept. Either container
// may hold any format: a file whose first character is '[' is a JSON array, one whose
// first character is '{' is JSONL. With Format auto, the first record decides: a "claim"
// key means FEVER; "_id", "context" or "supporting_facts" official HotpotQA; otherwise an
// array is the simplified list and JSON lines are generic JSONL.
//
// Messages name the file and the record: "line 18" (1-based) in JSON lines, "record 17"
// (0-based, the index that hotpotqa-simple ids carry) in an array.
//
// Question ids:
//   - hotpotqa: the record's _id.
//   - hotpotqa-simple: "hotpot-<i>", i being the 0-based position of the record in the
//     file (the paper's question index), whatever Offset is.
//   - fever: the claim's numeric id, in decimal.
//   - jsonl: the record's id (a string or a number); without one, "<task>-<i>" as above.
//
// Labels of FEVER claims (and answers of task fever in generic JSONL) are checked with
// score.Label, the rule answers are scored by, and returned in the dataset's spelling:
// "supports" and "Refutes." are accepted, "NOT ENOUGH INFORMATION" is not (only NOT
// ENOUGH INFO).
package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/jsonl"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

// Formats Load reads.
const (
	FormatAuto           = "auto"
	FormatHotpotQA       = "hotpotqa"
	FormatHotpotQASimple = "hotpotqa-simple"
	FormatFEVER          = "fever"
	FormatJSONL          = "jsonl"
)

// maxProblems is how many problem descriptions a Report keeps.
const maxProblems = 10

// Bounds on what one record may hold, so that memory follows them and not a malformed
// file: a record (a JSON line or an array element, context included; HotpotQA's largest
// is under 100 KB) and the question and answer text a prompt and an export carry. A
// record over them is a bad record (a JSON line is read past without being held).
const (
	MaxRecordBytes = 4 << 20
	MaxTextBytes   = 64 << 10
)

// errRecordTooLarge is a record over MaxRecordBytes.
var errRecordTooLarge = fmt.Errorf("record over %s (the most reactgen reads of one question)", safefile.FormatBytes(MaxRecordBytes))

// Options select what a Reader reads.
type Options struct {
	Task    string // pipeline.TaskHotpotQA or pipeline.TaskFEVER; empty follows the format
	Format  string // auto (or empty), hotpotqa, hotpotqa-simple, fever or jsonl
	SkipBad bool   // skip records that are invalid or duplicate instead of failing
	Limit   int    // keep at most this many questions (0 = all)
	Offset  int    // ignore this many records at the start of the file first
	// AnswersOptional reads files whose records may lack the answer or label (test
	// splits, read for their questions or their context paragraphs); an answer that is
	// there is still checked.
	AnswersOptional bool
}

// Report says what a Reader did.
type Report struct {
	Format   string   // the format read (auto resolved)
	Read     int      // records examined after Offset
	Kept     int      // questions returned
	Skipped  int      // records skipped with SkipBad
	Problems []string // the first few reasons records were skipped
}

// Record is one question and where it sits in its file.
type Record struct {
	pipeline.Question
	Index int    // 0-based position among the file's records, whatever Offset is
	Where string // "line 18" (JSON lines) or "record 17" (a JSON array), for messages
}

// Load reads every question in path (see Reader for the rules).
func Load(path string, opts Options) ([]pipeline.Question, Report, error) {
	r, err := Open(path, opts)
	if err != nil {
		return nil, Report{}, err
	}
	defer r.Close()
	var out []pipeline.Question
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.Report(), nil
		}
		if err != nil {
			return nil, r.Report(), err
		}
		out = append(out, rec.Question)
	}
}

// Reader streams the questions of one question file, the only code in reactgen that
// reads one: the task file of a run, the evaluation files of decontamination, the gold
// file of an import and a question file used as a corpus all come through it. It is not
// safe for concurrent use.
type Reader struct {
	name   string
	opts   Options
	src    *source
	closer io.Closer
	format string
	parse  recordParser
	task   string
	seen   map[string]string // id -> position of the first record with it
	rep    Report
	done   bool
}

// Open opens the question file at path. Close it when done.
func Open(path string, opts Options) (*Reader, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open question file: %w", err)
	}
	r, err := NewReader(f, path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads a question file from in; name is the file named in messages.
func NewReader(in io.Reader, name string, opts Options) (*Reader, error) {
	if opts.Format == "" {
		opts.Format = FormatAuto
	}
	switch opts.Format {
	case FormatAuto, FormatHotpotQA, FormatHotpotQASimple, FormatFEVER, FormatJSONL:
	default:
		return nil, fmt.Errorf("%s: unknown format %q (want auto, hotpotqa, hotpotqa-simple, fever or jsonl)", name, opts.Format)
	}
	src, err := newSource(name, bufio.NewReaderSize(in, 1<<16))
	if err != nil {
		return nil, err
	}
	return &Reader{name: name, opts: opts, src: src, format: opts.Format, task: opts.Task, seen: map[string]string{}}, nil
}

// Next returns the next question, or io.EOF after the last one (or after Limit kept).
// A malformed file, a bad record (unless SkipBad), a duplicate id (unless SkipBad), an
// empty file or a file with no question left to keep is an error that names the file and
// the record or line; after one, the Reader is done. A JSON syntax error in an array
// ends reading even with SkipBad, since a JSON array cannot be resumed past it.
func (r *Reader) Next() (Record, error) {
	if r.done {
		return Record{}, io.EOF
	}
	rec, err := r.next()
	if err != nil {
		r.done = true
	}
	return rec, err
}

func (r *Reader) next() (Record, error) {
	for {
		if r.opts.Limit > 0 && r.rep.Kept >= r.opts.Limit {
			return Record{}, io.EOF
		}
		raw, err := r.src.next()
		if errors.Is(err, io.EOF) {
			return Record{}, r.end()
		}
		if err != nil {
			return Record{}, err
		}
		if raw.bad == nil && r.format == FormatAuto {
			r.format = detect(raw.raw, r.src.array())
		}
		if raw.bad == nil && r.parse == nil {
			if r.parse, r.task, err = parserFor(r.format, r.task); err != nil {
				return Record{}, fmt.Errorf("%s: %w", r.name, err)
			}
			r.rep.Format = r.format
		}
		if raw.index < r.opts.Offset {
			continue
		}
		r.rep.Read++
		var q pipeline.Question
		err = raw.bad // a JSON line that is not a record is a bad record like any other
		if err == nil {
			q, err = r.parse(raw.raw, raw.index, parseOpts{task: r.task, answersOptional: r.opts.AnswersOptional})
		}
		if err == nil && max(len(q.Question), len(q.Answer)) > MaxTextBytes {
			err = fmt.Errorf("question or answer over %s (%d and %d bytes)", safefile.FormatBytes(MaxTextBytes), len(q.Question), len(q.Answer))
		}
		if err == nil {
			if first, dup := r.seen[q.ID]; dup {
				err = fmt.Errorf("duplicate id %q (first at %s)", q.ID, first)
			}
		}
		if err != nil {
			err = fmt.Errorf("%s %s: %w", r.name, raw.pos, err)
			if !r.opts.SkipBad {
				return Record{}, err
			}
			r.rep.Skipped++
			if len(r.rep.Problems) < maxProblems {
				r.rep.Problems = append(r.rep.Problems, err.Error())
			}
			continue
		}
		r.seen[q.ID] = raw.pos
		r.rep.Kept++
		return Record{Question: q, Index: raw.index, Where: raw.pos}, nil
	}
}

// end is what reading past the last record returns: io.EOF, or why nothing was kept.
func (r *Reader) end() error {
	if r.rep.Kept > 0 {
		return io.EOF
	}
	switch {
	case r.src.count() == 0:
		return fmt.Errorf("%s: no records", r.name)
	case r.rep.Read == 0:
		return fmt.Errorf("%s: offset %d is past the last of %d records", r.name, r.opts.Offset, r.src.count())
	}
	return fmt.Errorf("%s: no valid questions in %d records (%d skipped)", r.name, r.rep.Read, r.rep.Skipped)
}

// Report says what the Reader has read so far.
func (r *Reader) Report() Report { return r.rep }

// Task is the task of the questions: Options.Task, or the one the format implies once
// Next has returned a question.
func (r *Reader) Task() string { return r.task }

// Close closes the file Open opened; a Reader from NewReader has nothing to close.
func (r *Reader) Close() error {
	r.done = true
	if r.closer == nil {
		return nil
	}
	c := r.closer
	r.closer = nil
	return c.Close()
}

// record is one raw record and where it sits.
type record struct {
	raw   []byte
	index int    // 0-based position among the file's records
	pos   string // "record 17" or "line 18", for messages
	bad   error  // a line that is not a JSON record (JSON lines only)
}

// source yields the records of a JSON array or a JSONL file.
type source struct {
	path  string
	dec   *RecordDecoder // for arrays
	lines *jsonl.Reader  // for JSON lines
	n     int            // records yielded
	line  int            // JSONL lines read
	ended bool
}

func newSource(path string, r *bufio.Reader) (*source, error) {
	// Skip a byte-order mark and leading white space to see the container.
	if b, err := r.Peek(3); err == nil && bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		r.Discard(3)
	}
	s := &source{path: path}
	for {
		b, err := r.Peek(1)
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file", path)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		switch b[0] {
		case ' ', '\t', '\r':
			r.Discard(1)
			continue
		case '\n':
			r.Discard(1)
			s.line++
			continue
		case '[':
			s.dec = NewRecordDecoder(r)
			s.dec.Token() // the '['
			return s, nil
		case '{':
			s.lines = jsonl.NewReader(r, MaxRecordBytes)
			return s, nil
		}
		return nil, fmt.Errorf("%s: want a JSON array or JSON lines, found %q at the start", path, b[0])
	}
}

func (s *source) array() bool { return s.dec != nil }
func (s *source) count() int  { return s.n }

func (s *source) next() (record, error) {
	if s.ended {
		return record{}, io.EOF
	}
	if s.dec != nil {
		return s.nextElement()
	}
	return s.nextLine()
}

func (s *source) nextElement() (record, error) {
	pos := fmt.Sprintf("record %d", s.n)
	if !s.dec.More() {
		if _, err := s.dec.Token(); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // not the clean end Load loops for
			}
			return record{}, fmt.Errorf("%s %s: want ']' closing the array: %w", s.path, pos, err)
		}
		s.ended = true
		return record{}, io.EOF
	}
	var raw json.RawMessage
	if err := s.dec.Decode(&raw); err != nil {
		if errors.Is(err, errRecordTooLarge) {
			return record{}, fmt.Errorf("%s %s: %w", s.path, pos, err)
		}
		return record{}, fmt.Errorf("%s %s: malformed JSON: %w", s.path, pos, err)
	}
	if !utf8.Valid(raw) {
		return record{}, fmt.Errorf("%s %s: invalid UTF-8", s.path, pos)
	}
	s.n++
	return record{raw: raw, index: s.n - 1, pos: pos}, nil
}

func (s *source) nextLine() (record, error) {
	for {
		b, err := s.readLine()
		if len(b) == 0 && errors.Is(err, io.EOF) {
			s.ended = true
			return record{}, io.EOF
		}
		if errors.Is(err, errRecordTooLarge) {
			s.line++
			s.n++
			return record{index: s.n - 1, pos: fmt.Sprintf("line %d", s.line), bad: err}, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return record{}, fmt.Errorf("read %s line %d: %w", s.path, s.line+1, err)
		}
		s.line++
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		pos := fmt.Sprintf("line %d", s.line)
		s.n++
		// A bad line is handed back as such: JSON lines can be read on past it, so
		// Load can skip it under SkipBad.
		if !utf8.Valid(b) {
			return record{index: s.n - 1, pos: pos, bad: errors.New("invalid UTF-8")}, nil
		}
		if !json.Valid(b) {
			var v any
			err := json.Unmarshal(b, &v)
			return record{index: s.n - 1, pos: pos, bad: fmt.Errorf("malformed JSON: %w", err)}, nil
		}
		return record{raw: b, index: s.n - 1, pos: pos}, nil
	}
}

// readLine reads one line of a JSONL file, without its line end, and reads past a line
// over MaxRecordBytes without holding it, returning errRecordTooLarge.
func (s *source) readLine() ([]byte, error) {
	b, err := s.lines.Next()
	if errors.Is(err, jsonl.ErrTooLong) {
		return nil, errRecordTooLarge
	}
	return b, err
}

// RecordDecoder is a json.Decoder for a stream of records (the elements of an array,
// the values of an object) whose Decode fails with an error naming MaxRecordBytes once
// one value runs past it, before the decoder has buffered much more: a malformed file
// cannot make it hold the whole file.
type RecordDecoder struct {
	*json.Decoder
	b *boundedReader
}

// NewRecordDecoder returns a RecordDecoder reading r.
func NewRecordDecoder(r io.Reader) *RecordDecoder {
	b := &boundedReader{r: r, max: MaxRecordBytes}
	return &RecordDecoder{Decoder: json.NewDecoder(b), b: b}
}

// Decode decodes the next value, as json.Decoder.Decode does, within MaxRecordBytes.
func (d *RecordDecoder) Decode(v any) error {
	d.b.start = d.InputOffset()
	return d.Decoder.Decode(v)
}

// boundedReader is what a RecordDecoder reads through: it fails once the value being
// decoded (from start, the decoder's offset when it began) runs past max bytes.
type boundedReader struct {
	r     io.Reader
	read  int64
	start int64
	max   int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	left := b.start + b.max + 1 - b.read
	if left <= 0 {
		return 0, errRecordTooLarge
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}
