package wikidump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/reactgen/reactgen/internal/dataset"
)

// questionsReader streams the context paragraphs of an official HotpotQA question file
// (records with "context": [[title, [sentences...]], ...]). The file is read record by
// record by the project's question reader (dataset), so the whole file is never in
// memory and its records are checked as a task file's are; answers may be missing (a
// test split). A title seen before is skipped: the same page is the context of many
// questions.
type questionsReader struct {
	oneFile
	qs      *dataset.Reader
	pending []Doc
	seen    map[string]struct{}
	skipBad bool
	skipped int // records skipped here; the question reader counts its own
}

func openQuestions(path string, opts Options) (*questionsReader, error) {
	hf, err := openHashed(path, FormatHotpotQuestions)
	if err != nil {
		return nil, err
	}
	qs, err := dataset.NewReader(hf, path, dataset.Options{Format: dataset.FormatHotpotQA, SkipBad: opts.SkipBad, AnswersOptional: true})
	if err != nil {
		hf.Close()
		return nil, err
	}
	return &questionsReader{oneFile: oneFile{path: path, hf: hf}, qs: qs, seen: map[string]struct{}{}, skipBad: opts.SkipBad}, nil
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
		rec, err := r.qs.Next()
		if errors.Is(err, io.EOF) {
			return r.end()
		}
		if err != nil {
			r.fail()
			return Doc{}, err
		}
		docs, err := r.docs(rec)
		if err != nil {
			if r.skipBad {
				r.skipped++
				continue
			}
			r.fail()
			return Doc{}, fmt.Errorf("%s %s: %w", r.path, rec.Where, err)
		}
		r.pending = docs
	}
}

// docs returns the pages of a record's context not seen before.
func (r *questionsReader) docs(rec dataset.Record) ([]Doc, error) {
	if len(rec.Context) == 0 {
		return nil, errors.New(`no "context"`)
	}
	var docs []Doc
	for i, p := range rec.Context {
		title := strings.TrimSpace(p.Title)
		if title == "" {
			return nil, fmt.Errorf(`"context" %d: empty title`, i)
		}
		if _, ok := r.seen[title]; ok {
			continue
		}
		r.seen[title] = struct{}{}
		// HotpotQA's context sentences carry the space before them: the paragraph is
		// their concatenation.
		text := strings.TrimSpace(strings.Join(p.Sentences, ""))
		docs = append(docs, Doc{Title: title, Sentences: cleanSentences(p.Sentences), Text: text, File: r.path, Line: rec.Index})
	}
	return docs, nil
}

func (r *questionsReader) fail() {
	r.pending = nil
	r.abort()
}

func (r *questionsReader) Stats() Stats {
	return Stats{Skipped: r.skipped + r.qs.Report().Skipped}
}
