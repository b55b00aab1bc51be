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
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/score"
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
var errRecordTooLarge = fmt.Errorf("record over %s (the most reactgen reads of one question)", pipeline.FormatBytes(MaxRecordBytes))

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
	f, err := pipeline.OpenInput(path)
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
			err = fmt.Errorf("question or answer over %s (%d and %d bytes)", pipeline.FormatBytes(MaxTextBytes), len(q.Question), len(q.Answer))
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
	r     *bufio.Reader
	dec   *RecordDecoder // for arrays
	n     int            // records yielded
	line  int            // JSONL lines read
	ended bool
}

func newSource(path string, r *bufio.Reader) (*source, error) {
	// Skip a byte-order mark and leading white space to see the container.
	if b, err := r.Peek(3); err == nil && bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		r.Discard(3)
	}
	s := &source{path: path, r: r}
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

// readLine reads one line, as bufio.Reader.ReadBytes does, but reads past a line over
// MaxRecordBytes without holding it, returning errRecordTooLarge.
func (s *source) readLine() ([]byte, error) {
	var line []byte
	long := false
	for {
		chunk, err := s.r.ReadSlice('\n')
		if !long && len(line)+len(chunk) > MaxRecordBytes+2 {
			long, line = true, nil
		}
		if !long {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if long && (err == nil || errors.Is(err, io.EOF)) {
			return nil, errRecordTooLarge
		}
		return line, err
	}
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

// detect picks the format from the first record.
func detect(raw []byte, array bool) string {
	var keys map[string]json.RawMessage
	json.Unmarshal(raw, &keys)
	_, claim := keys["claim"]
	_, id := keys["_id"]
	_, ctx := keys["context"]
	_, facts := keys["supporting_facts"]
	switch {
	case claim:
		return FormatFEVER
	case id || ctx || facts:
		return FormatHotpotQA
	case array:
		return FormatHotpotQASimple
	}
	return FormatJSONL
}

// parseOpts is what a record parser needs besides the record.
type parseOpts struct {
	task            string
	answersOptional bool
}

type recordParser func(raw []byte, index int, o parseOpts) (pipeline.Question, error)

// parserFor returns the parser of format and the task it implies.
func parserFor(format, task string) (recordParser, string, error) {
	want := pipeline.TaskHotpotQA
	var p recordParser
	switch format {
	case FormatHotpotQA:
		p = parseHotpot
	case FormatHotpotQASimple:
		p = parseHotpotSimple
	case FormatFEVER:
		p, want = parseFEVER, pipeline.TaskFEVER
	case FormatJSONL:
		if task == "" {
			task = pipeline.TaskHotpotQA
		}
		if task != pipeline.TaskHotpotQA && task != pipeline.TaskFEVER {
			return nil, "", fmt.Errorf("unknown task %q (want hotpotqa or fever)", task)
		}
		return parseGeneric, task, nil
	}
	if task == "" {
		task = want
	}
	if task != want {
		return nil, "", fmt.Errorf("format %s holds %s questions, not task %q", format, want, task)
	}
	return p, task, nil
}

// idString renders a JSON string or number id; ok is false when there is none.
func idString(raw json.RawMessage) (string, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s = strings.TrimSpace(s); s == "" {
			return "", false, errors.New(`empty "id"`)
		}
		return s, true, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), true, nil
	}
	return "", false, fmt.Errorf(`"id": want a string or a number, found %s`, raw)
}

// decodeRecord unmarshals raw into v, describing type mismatches by field.
func decodeRecord(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// A field of the embedded qaFields is named by its JSON key alone, as in the file.
			return fmt.Errorf("%q: want %s, found JSON %s", strings.TrimPrefix(te.Field, "qaFields."), te.Type, te.Value)
		}
		return fmt.Errorf("want a JSON object: %w", err)
	}
	return nil
}

// answer is a required field, or with optional one that may be missing or empty ("").
func answer(name string, v *string, optional bool) (string, error) {
	if optional && (v == nil || strings.TrimSpace(*v) == "") {
		return "", nil
	}
	return required(name, v)
}

// required is a field that must hold more than white space. Its text is returned as the
// file has it, edge white space included: the notebooks put a question into the prompt
// as it is ("Question: " + question + "\n"), and 504 of HotpotQA's 7,405 dev questions end
// in a space or begin with one.
func required(name string, v *string) (string, error) {
	if v == nil {
		return "", fmt.Errorf("missing %q", name)
	}
	if strings.TrimSpace(*v) == "" {
		return "", fmt.Errorf("empty %q", name)
	}
	return *v, nil
}

type hotpotRecord struct {
	ID json.RawMessage `json:"_id"`
	qaFields
	SupportingFacts []json.RawMessage `json:"supporting_facts"`
	Context         []json.RawMessage `json:"context"`
}

// qaFields are the fields every HotpotQA-shaped record has.
type qaFields struct {
	Question *string `json:"question"`
	Answer   *string `json:"answer"`
	Type     string  `json:"type"`
	Level    string  `json:"level"`
}

// question is the record's question under id: the question required, the answer too
// unless answers are optional.
func (f *qaFields) question(id string, o parseOpts) (pipeline.Question, error) {
	q := pipeline.Question{ID: id, Task: o.task, Type: f.Type, Level: f.Level}
	var err error
	if q.Question, err = required("question", f.Question); err != nil {
		return q, err
	}
	q.Answer, err = answer("answer", f.Answer, o.answersOptional)
	return q, err
}

// recordID is a record's id under key; a record without one gets fallback or, when
// fallback is empty, an error.
func recordID(raw json.RawMessage, key, fallback string) (string, error) {
	id, ok, err := idString(raw)
	switch {
	case err != nil:
		return "", err
	case ok:
		return id, nil
	case fallback == "":
		return "", fmt.Errorf("missing %q", key)
	}
	return fallback, nil
}

// pair decodes a two-element JSON array into a and b.
func pair(raw json.RawMessage, a, b any) bool {
	var p []json.RawMessage
	return json.Unmarshal(raw, &p) == nil && len(p) == 2 && json.Unmarshal(p[0], a) == nil && json.Unmarshal(p[1], b) == nil
}

func parseHotpot(raw []byte, _ int, o parseOpts) (pipeline.Question, error) {
	var r hotpotRecord
	if err := decodeRecord(raw, &r); err != nil {
		return pipeline.Question{}, err
	}
	id, err := recordID(r.ID, "_id", "")
	if err != nil {
		return pipeline.Question{}, err
	}
	q, err := r.question(id, o)
	if err != nil {
		return q, err
	}
	for i, sf := range r.SupportingFacts {
		var f pipeline.Fact
		if !pair(sf, &f.Title, &f.Sentence) {
			return q, fmt.Errorf(`"supporting_facts" %d: want [title, sentence index], found %s`, i, sf)
		}
		q.SupportingFacts = append(q.SupportingFacts, f)
	}
	for i, c := range r.Context {
		var p pipeline.Paragraph
		if !pair(c, &p.Title, &p.Sentences) {
			return q, fmt.Errorf(`"context" %d: want [title, [sentences]], found %.80s`, i, c)
		}
		q.Context = append(q.Context, p)
	}
	return q, nil
}

func parseHotpotSimple(raw []byte, index int, o parseOpts) (pipeline.Question, error) {
	var r qaFields
	if err := decodeRecord(raw, &r); err != nil {
		return pipeline.Question{}, err
	}
	return r.question("hotpot-"+strconv.Itoa(index), o)
}

func parseFEVER(raw []byte, _ int, o parseOpts) (pipeline.Question, error) {
	var r struct {
		ID       json.RawMessage       `json:"id"`
		Label    *string               `json:"label"`
		Claim    *string               `json:"claim"`
		Evidence [][][]json.RawMessage `json:"evidence"`
	}
	if err := decodeRecord(raw, &r); err != nil {
		return pipeline.Question{}, err
	}
	id, err := recordID(r.ID, "id", "")
	if err != nil {
		return pipeline.Question{}, err
	}
	q := pipeline.Question{ID: id, Task: o.task}
	if q.Question, err = required("claim", r.Claim); err != nil {
		return q, err
	}
	label, err := answer("label", r.Label, o.answersOptional)
	if err != nil {
		return q, err
	}
	if label != "" {
		if q.Answer, err = checkLabel(label); err != nil {
			return q, err
		}
	}
	q.Type = q.Answer
	seen := map[pipeline.Fact]bool{}
	for i, set := range r.Evidence {
		for j, ev := range set {
			if len(ev) != 4 {
				return q, fmt.Errorf(`"evidence" %d.%d: want [annotation, evidence, page, sentence], found %d items`, i, j, len(ev))
			}
			var title *string
			var sent *int
			if json.Unmarshal(ev[2], &title) != nil || json.Unmarshal(ev[3], &sent) != nil {
				return q, fmt.Errorf(`"evidence" %d.%d: want a page title and a sentence index, found %s and %s`, i, j, ev[2], ev[3])
			}
			if title == nil || sent == nil {
				continue // NOT ENOUGH INFO claims carry annotations without a page
			}
			f := pipeline.Fact{Title: PageTitle(*title), Sentence: *sent}
			if !seen[f] {
				seen[f] = true
				q.SupportingFacts = append(q.SupportingFacts, f)
			}
		}
	}
	return q, nil
}

func parseGeneric(raw []byte, index int, o parseOpts) (pipeline.Question, error) {
	var r struct {
		ID json.RawMessage `json:"id"`
		qaFields
	}
	if err := decodeRecord(raw, &r); err != nil {
		return pipeline.Question{}, err
	}
	id, err := recordID(r.ID, "id", o.task+"-"+strconv.Itoa(index))
	if err != nil {
		return pipeline.Question{}, err
	}
	q, err := r.question(id, o)
	if err != nil {
		return q, err
	}
	if o.task == pipeline.TaskFEVER && q.Answer != "" {
		if q.Answer, err = checkLabel(q.Answer); err != nil {
			return q, err
		}
	}
	return q, nil
}

// checkLabel accepts a FEVER label under score.Label, the rule answers are scored by,
// and returns it in the dataset's spelling.
func checkLabel(s string) (string, error) {
	if l, ok := score.Label(s); ok {
		return l, nil
	}
	return "", fmt.Errorf("label %q: want SUPPORTS, REFUTES or NOT ENOUGH INFO", s)
}

// pageTitles decodes the escapes of FEVER's Wikipedia dump in page names.
var pageTitles = strings.NewReplacer(
	"_", " ", "-LRB-", "(", "-RRB-", ")", "-LSB-", "[", "-RSB-", "]",
	"-LCB-", "{", "-RCB-", "}", "-COLON-", ":",
)

// PageTitle turns a FEVER page name such as Soul_Food_-LRB-film-RRB- into the title
// Soul Food (film).
func PageTitle(name string) string { return pageTitles.Replace(name) }
