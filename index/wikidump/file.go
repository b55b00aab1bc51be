package wikidump

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/jsonl"
	"github.com/reactgen/reactgen/internal/safefile"
)

// hashedFile reads a file through a SHA-256 so its hash is known once it is read to
// the end.
type hashedFile struct {
	path   string
	format string
	f      *os.File
	h      hash.Hash
	n      int64
}

func openHashed(path, format string) (*hashedFile, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open corpus: %w", err)
	}
	return &hashedFile{path: path, format: format, f: f, h: sha256.New()}, nil
}

func (h *hashedFile) Read(p []byte) (int, error) {
	n, err := h.f.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

// finish reads whatever the parser left unread (trailing whitespace, say) into the hash
// and closes the file.
func (h *hashedFile) finish() (File, error) {
	if _, err := io.Copy(io.Discard, h); err != nil {
		h.f.Close()
		return File{}, fmt.Errorf("read %s: %w", h.path, err)
	}
	if err := h.f.Close(); err != nil {
		return File{}, fmt.Errorf("close %s: %w", h.path, err)
	}
	return File{Path: h.path, Format: h.format, Bytes: h.n, SHA256: hex.EncodeToString(h.h.Sum(nil))}, nil
}

func (h *hashedFile) Close() error { return h.f.Close() }

// oneFile is what a reader of a single corpus file keeps of it: the file, hashed as it
// is read, and its record once it is read to the end. Readers embed it for their end,
// Files and Close.
type oneFile struct {
	path  string
	hf    *hashedFile
	files []File
	done  bool
}

// end is the reader's io.EOF: the file is hashed to its end and closed, its record kept.
func (o *oneFile) end() (Doc, error) {
	o.done = true
	f, err := o.hf.finish()
	if err != nil {
		return Doc{}, err
	}
	o.files = append(o.files, f)
	return Doc{}, io.EOF
}

// abort stops the reader after an error: the file is closed and nothing more is read.
func (o *oneFile) abort() {
	o.done = true
	o.hf.Close()
}

func (o *oneFile) Files() []File { return o.files }

func (o *oneFile) Close() error {
	if o.done {
		return nil
	}
	o.done = true
	return o.hf.Close()
}

// HashFile returns the File record (size and SHA-256) of a file on disk.
func HashFile(path, format string) (File, error) {
	h, err := openHashed(path, format)
	if err != nil {
		return File{}, err
	}
	return h.finish()
}

// HashSource lists the files a source path consists of, in the order a Reader reads
// them, with their formats, sizes and SHA-256 hashes, without parsing them: what an
// index built from path would record as its sources. format may be FormatAuto.
func HashSource(path, format string) ([]File, error) {
	if format == "" || format == FormatAuto {
		f, err := DetectFormat(path)
		if err != nil {
			return nil, err
		}
		format = f
	}
	paths := []string{path}
	if format == FormatHotpotWiki {
		var err error
		if paths, err = bz2Files(path); err != nil {
			return nil, err
		}
	}
	out := make([]File, 0, len(paths))
	for _, p := range paths {
		f, err := HashFile(p, format)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// MaxLineBytes bounds one line of a corpus (one page): the longest Wikipedia article is
// about 1.5 MB, and a line over the bound is a malformed record (skipped with SkipBad),
// read past without being held in memory.
const MaxLineBytes = 64 << 20

// errLineTooLong is a line over MaxLineBytes.
var errLineTooLong = fmt.Errorf("line over %s (the most reactgen reads of one page)", safefile.FormatBytes(MaxLineBytes))

// lineReader reads a corpus file's lines through jsonl.Reader, a line over MaxLineBytes
// being errLineTooLong.
type lineReader struct{ *jsonl.Reader }

func newLineReader(r io.Reader) lineReader {
	return lineReader{jsonl.NewReader(bufio.NewReaderSize(r, 1<<20), MaxLineBytes)}
}

// next returns the next line without its line end; the slice is valid until the next
// call. It returns io.EOF after the last line, and errLineTooLong, having read past it,
// for a line over the bound.
func (l lineReader) next() ([]byte, error) {
	b, err := l.Next()
	if errors.Is(err, jsonl.ErrTooLong) {
		return nil, errLineTooLong
	}
	return b, err
}

// record returns the next non-blank line of the corpus file path, and io.EOF after the
// last. A line over the bound is skipped and counted in stats under skipBad, and an
// error naming its line otherwise; so is a read error.
func (l lineReader) record(path string, skipBad bool, stats *Stats) ([]byte, error) {
	for {
		line, err := l.next()
		switch {
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		case errors.Is(err, errLineTooLong) && skipBad:
			stats.Skipped++
			continue
		case errors.Is(err, errLineTooLong):
			return nil, fmt.Errorf("%s line %d: %w", path, l.Line(), err)
		case err != nil:
			return nil, fmt.Errorf("read %s line %d: %w", path, l.Line()+1, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

// validUTF8 returns line, or under skipBad the line with its invalid UTF-8 replaced
// (counted in stats as repaired); without skipBad invalid UTF-8 is an error.
func validUTF8(line []byte, skipBad bool, stats *Stats) ([]byte, error) {
	if utf8.Valid(line) {
		return line, nil
	}
	if !skipBad {
		return nil, errors.New("invalid UTF-8")
	}
	stats.Repaired++
	return bytes.ToValidUTF8(line, []byte("\uFFFD")), nil
}
