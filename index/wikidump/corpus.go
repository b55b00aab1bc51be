// Package wikidump reads the source files of an encyclopedia corpus and produces a stream
// of Docs (a title and its sentences) for the index builder. It reads three formats:
// JSONL pages ({"title", "text"}), the HotpotQA Wikipedia dump (a tree of .bz2 files with
// link markup), and the context paragraphs of HotpotQA question files. Readers stream in
// constant memory, hash every file they read (so a manifest can pin the corpus), and name
// the file and line of every malformed record.
package wikidump

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reactgen/reactgen/internal/safefile"
)

// Format names accepted by Open.
const (
	FormatAuto            = "auto"
	FormatJSONL           = "jsonl"
	FormatHotpotWiki      = "hotpotqa-wiki"
	FormatHotpotQuestions = "hotpotqa-questions"
)

// Formats lists the formats Open accepts, auto first.
var Formats = []string{FormatAuto, FormatJSONL, FormatHotpotWiki, FormatHotpotQuestions}

// Doc is one page as a source gives it.
type Doc struct {
	Title     string
	Sentences []string
	// Text is the page's text, one paragraph a line, from which paper observations cut
	// their own sentences: a plain-text source's text as it is, and for a source that
	// gives sentences, each paragraph's sentences joined as the source writes them
	// (HotpotQA's carry their own leading spaces; others are joined by one space).
	// Empty means the sentences joined by single spaces.
	Text string
	// Disambiguation is true when the source itself marks the page as one (JSONL
	// "disambiguation": true); the index also detects it from the title and text.
	Disambiguation bool
	File           string // source file the page came from
	Line           int    // line (JSONL, bz2 dump), or 0-based record index (question file)
}

// File is one source file read to its end.
type File struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Stats counts what a reader did not pass on unchanged.
type Stats struct {
	Skipped  int // malformed records skipped (SkipBad)
	Repaired int // records whose invalid UTF-8 was replaced (SkipBad)
}

// Reader streams Docs from one source path. It is not safe for concurrent use.
type Reader interface {
	// Next returns the next page, or io.EOF after the last one. Errors other than
	// io.EOF name the file and line; after one, the reader is done.
	Next(ctx context.Context) (Doc, error)
	// Files lists the files read so far with their sizes and hashes; after Next has
	// returned io.EOF it lists every file of the source.
	Files() []File
	// Stats reports skipped and repaired records so far.
	Stats() Stats
	Close() error
}

// Options tune a Reader.
type Options struct {
	// SkipBad skips malformed records (counting them) and repairs invalid UTF-8
	// instead of failing.
	SkipBad bool
	// Split splits a plain-text paragraph into sentences; nil uses the project's
	// sentence splitter. Sources that already give sentences never call it.
	Split func(text string) []string
}

// Open returns a Reader over path in the given format (FormatAuto detects it).
func Open(ctx context.Context, path, format string, opts Options) (Reader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if format == "" || format == FormatAuto {
		f, err := DetectFormat(path)
		if err != nil {
			return nil, err
		}
		format = f
	}
	if opts.Split == nil {
		opts.Split = defaultSplit
	}
	switch format {
	case FormatJSONL:
		return openJSONL(path, opts)
	case FormatHotpotWiki:
		return openHotpotWiki(path, opts)
	case FormatHotpotQuestions:
		return openQuestions(path, opts)
	default:
		return nil, fmt.Errorf("corpus %s: unknown format %q (want one of %s)", path, format, strings.Join(Formats, ", "))
	}
}

// DetectFormat guesses a source's format from its path: a directory or a .bz2 file is
// the HotpotQA dump, .jsonl is JSONL, and a .json file is a question file when it starts
// with an array and JSONL when it starts with an object.
func DetectFormat(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("detect corpus format: %w", err)
	}
	if st.IsDir() {
		return FormatHotpotWiki, nil
	}
	if !st.Mode().IsRegular() {
		return "", &safefile.NotRegularError{Path: path, Mode: st.Mode()}
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".bz2":
		return FormatHotpotWiki, nil
	case ".jsonl", ".ndjson":
		return FormatJSONL, nil
	case ".json":
		c, err := firstByte(path)
		if err != nil {
			return "", fmt.Errorf("detect corpus format of %s: %w", path, err)
		}
		switch c {
		case '[':
			return FormatHotpotQuestions, nil
		case '{':
			return FormatJSONL, nil
		}
		return "", fmt.Errorf("detect corpus format of %s: starts with %q, want '[' or '{'", path, c)
	}
	return "", fmt.Errorf("detect corpus format of %s: unknown extension (name the format)", path)
}

// firstByte returns the first non-space byte of a file.
func firstByte(path string) (byte, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		for _, c := range buf[:n] {
			switch c {
			case ' ', '\t', '\r', '\n', 0xEF, 0xBB, 0xBF: // whitespace and a UTF-8 BOM
				continue
			}
			return c, nil
		}
		if err != nil {
			return 0, errors.New("no content")
		}
	}
}

// cleanSentences trims sentences and drops empty ones, reusing the slice.
func cleanSentences(in []string) []string {
	out := in[:0]
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
