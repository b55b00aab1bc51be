package filter

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// NGram is the overlap length decontaminate looks for, in normalised tokens.
const NGram = 13

type evalRef struct {
	id, file string
}

// decontaminate drops episodes whose question is an evaluation question: the same
// normalised text (NormalizeAnswer), or a shared run of NGram normalised tokens.
type decontaminate struct {
	exact    map[string]evalRef
	grams    map[uint64]evalRef
	reported map[string]bool
	found    []Contamination
}

func (*decontaminate) Name() string { return "decontaminate" }

func (d *decontaminate) Keep(ep *pipeline.Episode) (bool, pipeline.Reject) {
	ref, match, ok := d.match(ep.Question)
	if !ok {
		return true, pipeline.Reject{}
	}
	if d.reported != nil && !d.reported[ep.QuestionID] {
		d.reported[ep.QuestionID] = true
		d.found = append(d.found, Contamination{QuestionID: ep.QuestionID, EvalID: ref.id, EvalFile: ref.file, Match: match})
	}
	return reject("decontaminate", CodeContaminated, fmt.Sprintf("%s match with %s in %s", match, ref.id, ref.file))
}

func (d *decontaminate) match(q string) (evalRef, string, bool) {
	norm := score.NormalizeAnswer(q)
	if ref, ok := d.exact[norm]; ok {
		return ref, "exact", true
	}
	toks := strings.Fields(norm)
	for i := 0; i+NGram <= len(toks); i++ {
		if ref, ok := d.grams[gramHash(toks[i:i+NGram])]; ok {
			return ref, fmt.Sprintf("%d-gram", NGram), true
		}
	}
	return evalRef{}, "", false
}

func gramHash(toks []string) uint64 {
	h := fnv.New64a()
	for _, t := range toks {
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

func loadDecontaminate(files []string) (*decontaminate, error) {
	if len(files) == 0 {
		return nil, &pipeline.ConfigError{Key: "filter.eval_files", Message: ErrNoEvalFiles.Error()}
	}
	d := &decontaminate{exact: map[string]evalRef{}, grams: map[uint64]evalRef{}}
	for _, f := range files {
		err := ReadEvalQuestions(f, func(id, text string) {
			ref := evalRef{id: id, file: filepath.Base(f)}
			norm := score.NormalizeAnswer(text)
			if _, ok := d.exact[norm]; !ok {
				d.exact[norm] = ref
			}
			toks := strings.Fields(norm)
			for i := 0; i+NGram <= len(toks); i++ {
				if h := gramHash(toks[i : i+NGram]); d.grams[h] == (evalRef{}) {
					d.grams[h] = ref
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return d, nil
}

// evalRecord is the union of the shapes ReadEvalQuestions reads.
type evalRecord struct {
	ID       json.RawMessage `json:"id"`
	UID      string          `json:"_id"`
	Question string          `json:"question"`
	Claim    string          `json:"claim"`
}

// ReadEvalQuestions calls fn with the id and text of every question in an evaluation
// file: a JSON array (HotpotQA, full or simplified) or JSONL (FEVER, or any records with
// a question or claim field). Records without an id get their 0-based position.
func ReadEvalQuestions(path string, fn func(id, text string)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("filter.eval_files: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	first, err := peekNonSpace(br)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	emit := func(n int, r evalRecord) {
		text := r.Question
		if text == "" {
			text = r.Claim
		}
		if text == "" {
			return
		}
		id := r.UID
		if id == "" && len(r.ID) > 0 {
			id = string(bytes.Trim(r.ID, `"`))
		}
		if id == "" {
			id = strconv.Itoa(n)
		}
		fn(id, text)
	}
	if first == '[' {
		dec := json.NewDecoder(br)
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		for n := 0; dec.More(); n++ {
			var r evalRecord
			if err := dec.Decode(&r); err != nil {
				return fmt.Errorf("read %s record %d: %w", path, n+1, err)
			}
			emit(n, r)
		}
		return nil
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line, n := 0, 0; sc.Scan(); {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var r evalRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("read %s line %d: %w", path, line, err)
		}
		emit(n, r)
		n++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

func peekNonSpace(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n', 0xEF, 0xBB, 0xBF:
			continue
		}
		return b, br.UnreadByte()
	}
}
