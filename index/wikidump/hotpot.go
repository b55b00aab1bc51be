package wikidump

import (
	"compress/bzip2"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// hotpotWikiReader reads the HotpotQA Wikipedia dump: a tree of .bz2 files whose lines
// are {"id", "url", "title", "text"} with text a list of paragraphs, each a list of
// sentences that carry <a href="..."> link markup.
type hotpotWikiReader struct {
	opts   Options
	paths  []string
	cur    int // index of the file being read; len(paths) when done
	hf     *hashedFile
	lines  lineReader
	files  []File
	stats  Stats
	closed bool
}

func openHotpotWiki(path string, opts Options) (*hotpotWikiReader, error) {
	paths, err := bz2Files(path)
	if err != nil {
		return nil, err
	}
	return &hotpotWikiReader{opts: opts, paths: paths, cur: -1}, nil
}

// bz2Files lists the .bz2 files under path in lexical order (path itself when it is a
// file).
func bz2Files(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open corpus: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".bz2") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list corpus %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("corpus %s: no .bz2 files", path)
	}
	return out, nil
}

type hotpotRecord struct {
	Title *string         `json:"title"`
	Text  json.RawMessage `json:"text"`
}

func (r *hotpotWikiReader) Next(ctx context.Context) (Doc, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Doc{}, err
		}
		if r.closed {
			return Doc{}, io.EOF
		}
		if r.hf == nil {
			r.cur++
			if r.cur >= len(r.paths) {
				r.closed = true
				return Doc{}, io.EOF
			}
			hf, err := openHashed(r.paths[r.cur], FormatHotpotWiki)
			if err != nil {
				r.closed = true
				return Doc{}, err
			}
			r.hf, r.lines = hf, newLineReader(bzip2.NewReader(hf))
		}
		path := r.paths[r.cur]
		line, err := r.lines.record(path, r.opts.SkipBad, &r.stats)
		if errors.Is(err, io.EOF) {
			f, err := r.hf.finish()
			r.hf = nil
			if err != nil {
				r.closed = true
				return Doc{}, err
			}
			r.files = append(r.files, f)
			continue
		}
		if err != nil {
			r.Close()
			return Doc{}, err
		}
		doc, err := r.parse(line)
		if err != nil {
			if r.opts.SkipBad {
				r.stats.Skipped++
				continue
			}
			r.Close()
			return Doc{}, fmt.Errorf("%s line %d: %w", path, r.lines.Line(), err)
		}
		doc.File, doc.Line = path, r.lines.Line()
		return doc, nil
	}
}

func (r *hotpotWikiReader) parse(line []byte) (Doc, error) {
	line, err := validUTF8(line, r.opts.SkipBad, &r.stats)
	if err != nil {
		return Doc{}, err
	}
	var rec hotpotRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return Doc{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if rec.Title == nil || strings.TrimSpace(*rec.Title) == "" {
		return Doc{}, errors.New(`missing "title"`)
	}
	title := strings.TrimSpace(*rec.Title)
	paras, err := paragraphs(rec.Text)
	if err != nil {
		return Doc{}, err
	}
	// The dump's first paragraph is the title on its own; the intro follows it.
	if len(paras) > 0 && strings.EqualFold(strings.TrimSpace(stripLinks(strings.Join(paras[0], ""))), title) {
		paras = paras[1:]
	}
	// The dump's sentences carry the space before them, so a paragraph is their
	// concatenation.
	var sents []string
	var text strings.Builder
	for _, p := range paras {
		start := len(sents)
		for _, s := range p {
			sents = append(sents, stripLinks(s))
		}
		para := strings.TrimSpace(strings.Join(sents[start:], ""))
		if para == "" {
			continue
		}
		if text.Len() > 0 {
			text.WriteByte('\n')
		}
		text.WriteString(para)
	}
	return Doc{Title: title, Sentences: cleanSentences(sents), Text: text.String()}, nil
}

// paragraphs decodes the dump's "text": a list of paragraphs (lists of sentences), or a
// flat list of sentences (the abstracts edition), treated as one paragraph each.
func paragraphs(raw json.RawMessage) ([][]string, error) {
	var nested [][]string
	if err := json.Unmarshal(raw, &nested); err == nil {
		return nested, nil
	}
	var flat []string
	if err := json.Unmarshal(raw, &flat); err != nil {
		return nil, errors.New(`"text": want a list of paragraphs (lists of sentences)`)
	}
	out := make([][]string, len(flat))
	for i, s := range flat {
		out[i] = []string{s}
	}
	return out, nil
}

// stripLinks removes <a ...> and </a> tags, keeping the anchor text.
func stripLinks(s string) string {
	if !strings.Contains(s, "<a") && !strings.Contains(s, "</a>") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, "</a>"):
			s = rest[len("</a>"):]
		case strings.HasPrefix(rest, "<a ") || strings.HasPrefix(rest, "<a>"):
			j := strings.IndexByte(rest, '>')
			if j < 0 {
				b.WriteString(rest)
				return b.String()
			}
			s = rest[j+1:]
		default:
			b.WriteByte('<')
			s = rest[1:]
		}
	}
	return b.String()
}

func (r *hotpotWikiReader) Files() []File { return r.files }
func (r *hotpotWikiReader) Stats() Stats  { return r.stats }

func (r *hotpotWikiReader) Close() error {
	r.closed = true
	if r.hf != nil {
		err := r.hf.Close()
		r.hf = nil
		return err
	}
	return nil
}
