package wikidump

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/reactgen/reactgen/internal/dataset"
)

// jsonlReader reads {"title": ..., "text": ...} lines where text is a string, a list of
// paragraph strings, or a list of lists of sentences.
type jsonlReader struct {
	oneFile
	opts  Options
	lines lineReader
	stats Stats
}

func openJSONL(path string, opts Options) (*jsonlReader, error) {
	hf, err := openHashed(path, FormatJSONL)
	if err != nil {
		return nil, err
	}
	return &jsonlReader{oneFile: oneFile{path: path, hf: hf}, opts: opts, lines: newLineReader(hf)}, nil
}

type jsonlRecord struct {
	Title          *string         `json:"title"`
	Text           json.RawMessage `json:"text"`
	Disambiguation bool            `json:"disambiguation"`
	// FEVER's wiki-pages dump: {"id": "Page_Title", "text": ..., "lines": "0\tSentence\tlink..."}.
	ID    json.RawMessage `json:"id"`
	Lines *string         `json:"lines"`
}

func (r *jsonlReader) Next(ctx context.Context) (Doc, error) {
	if r.done {
		return Doc{}, io.EOF
	}
	for {
		if err := ctx.Err(); err != nil {
			return Doc{}, err
		}
		line, err := r.lines.record(r.path, r.opts.SkipBad, &r.stats)
		if errors.Is(err, io.EOF) {
			return r.end()
		}
		if err != nil {
			r.abort()
			return Doc{}, err
		}
		doc, err := r.parse(line)
		if errors.Is(err, errEmptyPage) {
			continue
		}
		if err != nil {
			if r.opts.SkipBad {
				r.stats.Skipped++
				continue
			}
			r.abort()
			return Doc{}, fmt.Errorf("%s line %d: %w", r.path, r.lines.Line(), err)
		}
		doc.File, doc.Line = r.path, r.lines.Line()
		return doc, nil
	}
}

func (r *jsonlReader) parse(line []byte) (Doc, error) {
	line, err := validUTF8(line, r.opts.SkipBad, &r.stats)
	if err != nil {
		return Doc{}, err
	}
	// encoding/json: a hand-written decoder for flat lines measured 1.08-1.15x on the
	// index build's CPU time (BENCHMARKS.md, "Codecs"), under the 2x that would pay for it.
	var rec jsonlRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return Doc{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if rec.Title == nil && rec.Lines != nil {
		return feverPage(rec)
	}
	if rec.Title == nil {
		return Doc{}, errors.New(`missing "title"`)
	}
	title := strings.TrimSpace(*rec.Title)
	if title == "" {
		return Doc{}, errors.New(`empty "title"`)
	}
	sents, text, err := textSentences(rec.Text, r.opts.Split)
	if err != nil {
		return Doc{}, err
	}
	return Doc{Title: title, Sentences: sents, Text: text, Disambiguation: rec.Disambiguation}, nil
}

// textSentences decodes a "text" value: a string (split into sentences), a list of
// paragraph strings (each split), or a list of lists of sentences (kept as given). It
// returns the sentences and the text as Doc.Text holds it.
func textSentences(raw json.RawMessage, split func(string) []string) ([]string, string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, "", errors.New(`missing "text"`)
	}
	switch raw[0] {
	case '"':
		s, err := jsonString(raw)
		if err != nil {
			return nil, "", fmt.Errorf(`"text": %w`, err)
		}
		return cleanSentences(split(s)), s, nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, "", fmt.Errorf(`"text": %w`, err)
		}
		var out []string
		var text strings.Builder
		for i, it := range items {
			it = bytes.TrimSpace(it)
			if len(it) == 0 {
				continue
			}
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			switch it[0] {
			case '"':
				s, err := jsonString(it)
				if err != nil {
					return nil, "", fmt.Errorf(`"text"[%d]: %w`, i, err)
				}
				out = append(out, split(s)...)
				text.WriteString(s)
			case '[':
				var ss []string
				if err := json.Unmarshal(it, &ss); err != nil {
					return nil, "", fmt.Errorf(`"text"[%d]: want a list of sentence strings: %w`, i, err)
				}
				out = append(out, ss...)
				text.WriteString(strings.Join(cleanSentences(slices.Clone(ss)), " "))
			default:
				return nil, "", fmt.Errorf(`"text"[%d]: want a string or a list of strings`, i)
			}
		}
		return cleanSentences(out), text.String(), nil
	}
	return nil, "", errors.New(`"text": want a string or a list`)
}

// jsonString decodes a JSON string value that an enclosing Unmarshal has already
// validated. Without a backslash its bytes are the string itself, so the common case
// skips a second validating pass over the page text.
func jsonString(raw []byte) (string, error) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0 {
		return string(raw[1 : n-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

func (r *jsonlReader) Stats() Stats { return r.stats }

// errEmptyPage marks the empty records FEVER's dump holds (id ""); they are skipped.
var errEmptyPage = errors.New("empty page")

// feverPage reads a page of FEVER's wiki-pages dump. Its sentences are the numbered
// "lines", kept at their numbers (FEVER's evidence cites them), so a missing number
// leaves an empty sentence in its place; the anchor texts after each sentence are dropped.
func feverPage(rec jsonlRecord) (Doc, error) {
	var id string
	if err := json.Unmarshal(rec.ID, &id); err != nil {
		return Doc{}, fmt.Errorf(`"id": want the page name as a string: %w`, err)
	}
	title := strings.TrimSpace(dataset.PageTitle(id))
	if title == "" {
		return Doc{}, errEmptyPage
	}
	var sents []string
	for i, line := range strings.Split(*rec.Lines, "\n") {
		num, rest, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 || n > 10000 {
			n = i
		}
		sentence, _, _ := strings.Cut(rest, "\t")
		for len(sents) <= n {
			sents = append(sents, "")
		}
		sents[n] = strings.TrimSpace(sentence)
	}
	for len(sents) > 0 && sents[len(sents)-1] == "" {
		sents = sents[:len(sents)-1]
	}
	return Doc{Title: title, Sentences: sents, Disambiguation: strings.HasSuffix(title, "(disambiguation)")}, nil
}
