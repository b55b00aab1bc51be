package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

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
