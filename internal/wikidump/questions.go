package wikidump

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// questionsReader streams the context paragraphs of an official HotpotQA question file
// (a top-level array of {..., "context": [[title, [sentences...]], ...]}) with
// json.Decoder tokens, so the whole file is never in memory. A title seen before is
// skipped: the same page is the context of many questions.
type questionsReader struct {
	path    string
	opts    Options
	hf      *hashedFile
	dec     *json.Decoder
	record  int
	pending []Doc
	seen    map[string]struct{}
	files   []File
	stats   Stats
	done    bool
}

func openQuestions(path string, opts Options) (*questionsReader, error) {
	hf, err := openHashed(path, FormatHotpotQuestions)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bufio.NewReaderSize(hf, 1<<20))
	tok, err := dec.Token()
	if err != nil {
		hf.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		hf.Close()
		return nil, fmt.Errorf("%s: want a top-level array of questions, got %v", path, tok)
	}
	return &questionsReader{path: path, opts: opts, hf: hf, dec: dec, seen: map[string]struct{}{}}, nil
}

type questionRecord struct {
	Context []json.RawMessage `json:"context"`
}

func (r *questionsReader) Next(ctx context.Context) (Doc, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Doc{}, err
		}
		if len(r.pending) > 0 {
			d := r.pending[0]
			r.pending = r.pending[1:]
			return d, nil
		}
		if r.done {
			return Doc{}, io.EOF
		}
		if !r.dec.More() {
			if _, err := r.dec.Token(); err != nil { // the closing ']'
				r.fail()
				return Doc{}, fmt.Errorf("%s after record %d: %w", r.path, r.record, err)
			}
			r.done = true
			f, err := r.hf.finish()
			if err != nil {
				return Doc{}, err
			}
			r.files = append(r.files, f)
			return Doc{}, io.EOF
		}
		r.record++
		var raw json.RawMessage
		if err := r.dec.Decode(&raw); err != nil {
			// A syntax error leaves the stream unusable, so it fails even with SkipBad.
			r.fail()
			return Doc{}, fmt.Errorf("%s record %d (byte %d): %w", r.path, r.record, r.dec.InputOffset(), err)
		}
		docs, err := r.parse(raw)
		if err != nil {
			if r.opts.SkipBad {
				r.stats.Skipped++
				continue
			}
			r.fail()
			return Doc{}, fmt.Errorf("%s record %d: %w", r.path, r.record, err)
		}
		r.pending = docs
	}
}

func (r *questionsReader) parse(raw json.RawMessage) ([]Doc, error) {
	var q questionRecord
	if err := json.Unmarshal(raw, &q); err != nil {
		return nil, fmt.Errorf("invalid question: %w", err)
	}
	var docs []Doc
	for i, c := range q.Context {
		var pair []json.RawMessage
		if err := json.Unmarshal(c, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("context[%d]: want [title, [sentences...]]", i)
		}
		var title string
		var sents []string
		if err := json.Unmarshal(pair[0], &title); err != nil {
			return nil, fmt.Errorf("context[%d] title: %w", i, err)
		}
		if err := json.Unmarshal(pair[1], &sents); err != nil {
			return nil, fmt.Errorf("context[%d] sentences: %w", i, err)
		}
		title = strings.TrimSpace(title)
		if title == "" {
			return nil, fmt.Errorf("context[%d]: empty title", i)
		}
		if _, ok := r.seen[title]; ok {
			continue
		}
		r.seen[title] = struct{}{}
		docs = append(docs, Doc{Title: title, Sentences: cleanSentences(sents), File: r.path, Line: r.record})
	}
	if len(docs) == 0 && len(q.Context) == 0 {
		return nil, errors.New(`no "context"`)
	}
	return docs, nil
}

func (r *questionsReader) fail() {
	r.done = true
	r.pending = nil
	r.hf.Close()
}

func (r *questionsReader) Files() []File { return r.files }
func (r *questionsReader) Stats() Stats  { return r.stats }

func (r *questionsReader) Close() error {
	if r.done {
		return nil
	}
	r.done = true
	return r.hf.Close()
}
