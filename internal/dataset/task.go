// Package dataset loads the questions of a run from a task file. It consumes HotpotQA's
// official JSON, the simplified HotpotQA list that the ReAct paper's code reads, FEVER
// JSONL and a generic JSONL of {id, question, answer}, and produces pipeline.Questions
// with a Report of what was read, kept and skipped.
//
// Files are streamed record by record (a JSON array through json.Decoder tokens, JSONL
// through a bufio.Reader with no line-length limit), so memory follows the questions kept,
// not the file, and reading stops as soon as Limit questions are kept. Either container
// may hold any format: a file whose first character is '[' is a JSON array, one whose
// first character is '{' is JSONL.
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
	"os"
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

// Options select what Load reads.
type Options struct {
	Task    string // pipeline.TaskHotpotQA or pipeline.TaskFEVER; empty follows the format
	Format  string // auto (or empty), hotpotqa, hotpotqa-simple, fever or jsonl
	SkipBad bool   // skip records that are invalid or duplicate instead of failing
	Limit   int    // keep at most this many questions (0 = all)
	Offset  int    // ignore this many records at the start of the file first
}

// Report says what Load did.
type Report struct {
	Format   string   // the format read (auto resolved)
	Read     int      // records examined after Offset
	Kept     int      // questions returned
	Skipped  int      // records skipped with SkipBad
	Problems []string // the first few reasons records were skipped
}

// Load reads the questions in path. A malformed file, a bad record (unless SkipBad), a
// duplicate id (unless SkipBad), an empty file or a file with no question left to keep is
// an error that names the file and the record or line. A JSON syntax error ends reading
// even with SkipBad, since a JSON array cannot be resumed past it.
func Load(path string, opts Options) ([]pipeline.Question, Report, error) {
	var rep Report
	f, err := os.Open(path)
	if err != nil {
		return nil, rep, fmt.Errorf("open task file: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)

	src, err := newSource(path, r)
	if err != nil {
		return nil, rep, err
	}
	format := opts.Format
	if format == "" {
		format = FormatAuto
	}
	switch format {
	case FormatAuto, FormatHotpotQA, FormatHotpotQASimple, FormatFEVER, FormatJSONL:
	default:
		return nil, rep, fmt.Errorf("%s: unknown format %q (want auto, hotpotqa, hotpotqa-simple, fever or jsonl)", path, format)
	}
	var (
		out   []pipeline.Question
		seen  = map[string]string{} // id -> position of the first record with it
		parse recordParser
		task  = opts.Task
	)
	for {
		rec, err := src.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, rep, err
		}
		if rec.bad == nil && format == FormatAuto {
			format = detect(rec.raw, src.array())
		}
		if rec.bad == nil && parse == nil {
			if parse, task, err = parserFor(format, task); err != nil {
				return nil, rep, fmt.Errorf("%s: %w", path, err)
			}
			rep.Format = format
		}
		if rec.index < opts.Offset {
			continue
		}
		rep.Read++
		var q pipeline.Question
		err = rec.bad // a JSON line that is not a record is a bad record like any other
		if err == nil {
			q, err = parse(rec.raw, rec.index, task)
		}
		if err == nil {
			if first, dup := seen[q.ID]; dup {
				err = fmt.Errorf("duplicate id %q (first at %s)", q.ID, first)
			}
		}
		if err != nil {
			err = fmt.Errorf("%s %s: %w", path, rec.pos, err)
			if !opts.SkipBad {
				return nil, rep, err
			}
			rep.Skipped++
			if len(rep.Problems) < maxProblems {
				rep.Problems = append(rep.Problems, err.Error())
			}
			continue
		}
		seen[q.ID] = rec.pos
		out = append(out, q)
		rep.Kept++
		if opts.Limit > 0 && rep.Kept >= opts.Limit {
			break
		}
	}
	if rep.Kept == 0 {
		switch {
		case src.count() == 0:
			return nil, rep, fmt.Errorf("%s: no records", path)
		case rep.Read == 0:
			return nil, rep, fmt.Errorf("%s: offset %d is past the last of %d records", path, opts.Offset, src.count())
		default:
			return nil, rep, fmt.Errorf("%s: no valid questions in %d records (%d skipped)", path, rep.Read, rep.Skipped)
		}
	}
	return out, rep, nil
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
	dec   *json.Decoder // for arrays
	n     int           // records yielded
	line  int           // JSONL lines read
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
			s.dec = json.NewDecoder(r)
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
		b, err := s.r.ReadBytes('\n')
		if len(b) == 0 && errors.Is(err, io.EOF) {
			s.ended = true
			return record{}, io.EOF
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

type recordParser func(raw []byte, index int, task string) (pipeline.Question, error)

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
			return fmt.Errorf("%q: want %s, found JSON %s", te.Field, te.Type, te.Value)
		}
		return fmt.Errorf("want a JSON object: %w", err)
	}
	return nil
}

func required(name string, v *string) (string, error) {
	if v == nil {
		return "", fmt.Errorf("missing %q", name)
	}
	s := strings.TrimSpace(*v)
	if s == "" {
		return "", fmt.Errorf("empty %q", name)
	}
	return s, nil
}

type hotpotRecord struct {
	ID              json.RawMessage   `json:"_id"`
	Question        *string           `json:"question"`
	Answer          *string           `json:"answer"`
	Type            string            `json:"type"`
	Level           string            `json:"level"`
	SupportingFacts []json.RawMessage `json:"supporting_facts"`
	Context         []json.RawMessage `json:"context"`
}

func parseHotpot(raw []byte, _ int, task string) (pipeline.Question, error) {
	var r hotpotRecord
	if err := decodeRecord(raw, &r); err != nil {
		return pipeline.Question{}, err
	}
	id, ok, err := idString(r.ID)
	if err != nil {
		return pipeline.Question{}, err
	}
	if !ok {
		return pipeline.Question{}, errors.New(`missing "_id"`)
	}
	q := pipeline.Question{ID: id, Task: task, Type: r.Type, Level: r.Level}
	if q.Question, err = required("question", r.Question); err != nil {
		return q, err
	}
	if q.Answer, err = required("answer", r.Answer); err != nil {
		return q, err
	}
	for i, sf := range r.SupportingFacts {
		var pair []json.RawMessage
		var f pipeline.Fact
		if json.Unmarshal(sf, &pair) != nil || len(pair) != 2 || json.Unmarshal(pair[0], &f.Title) != nil || json.Unmarshal(pair[1], &f.Sentence) != nil {
			return q, fmt.Errorf(`"supporting_facts" %d: want [title, sentence index], found %s`, i, sf)
		}
		q.SupportingFacts = append(q.SupportingFacts, f)
	}
	for i, c := range r.Context {
		var pair []json.RawMessage
		var p pipeline.Paragraph
		if json.Unmarshal(c, &pair) != nil || len(pair) != 2 || json.Unmarshal(pair[0], &p.Title) != nil || json.Unmarshal(pair[1], &p.Sentences) != nil {
			return q, fmt.Errorf(`"context" %d: want [title, [sentences]], found %.80s`, i, c)
		}
		q.Context = append(q.Context, p)
	}
	return q, nil
}

func parseHotpotSimple(raw []byte, index int, task string) (pipeline.Question, error) {
	var r struct {
		Question *string `json:"question"`
		Answer   *string `json:"answer"`
		Type     string  `json:"type"`
		Level    string  `json:"level"`
	}
	if err := decodeRecord(raw, &r); err != nil {
		return pipeline.Question{}, err
	}
	q := pipeline.Question{ID: "hotpot-" + strconv.Itoa(index), Task: task, Type: r.Type, Level: r.Level}
	var err error
	if q.Question, err = required("question", r.Question); err != nil {
		return q, err
	}
	if q.Answer, err = required("answer", r.Answer); err != nil {
		return q, err
	}
	return q, nil
}

func parseFEVER(raw []byte, _ int, task string) (pipeline.Question, error) {
	var r struct {
		ID       json.RawMessage       `json:"id"`
		Label    *string               `json:"label"`
		Claim    *string               `json:"claim"`
		Evidence [][][]json.RawMessage `json:"evidence"`
	}
	if err := decodeRecord(raw, &r); err != nil {
		return pipeline.Question{}, err
	}
	id, ok, err := idString(r.ID)
	if err != nil {
		return pipeline.Question{}, err
	}
	if !ok {
		return pipeline.Question{}, errors.New(`missing "id"`)
	}
	q := pipeline.Question{ID: id, Task: task}
	if q.Question, err = required("claim", r.Claim); err != nil {
		return q, err
	}
	label, err := required("label", r.Label)
	if err != nil {
		return q, err
	}
	if q.Answer, err = checkLabel(label); err != nil {
		return q, err
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

func parseGeneric(raw []byte, index int, task string) (pipeline.Question, error) {
	var r struct {
		ID       json.RawMessage `json:"id"`
		Question *string         `json:"question"`
		Answer   *string         `json:"answer"`
		Type     string          `json:"type"`
		Level    string          `json:"level"`
	}
	if err := decodeRecord(raw, &r); err != nil {
		return pipeline.Question{}, err
	}
	id, ok, err := idString(r.ID)
	if err != nil {
		return pipeline.Question{}, err
	}
	if !ok {
		id = task + "-" + strconv.Itoa(index)
	}
	q := pipeline.Question{ID: id, Task: task, Type: r.Type, Level: r.Level}
	if q.Question, err = required("question", r.Question); err != nil {
		return q, err
	}
	if q.Answer, err = required("answer", r.Answer); err != nil {
		return q, err
	}
	if task == pipeline.TaskFEVER {
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
