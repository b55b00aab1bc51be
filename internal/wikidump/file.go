package wikidump

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/reactgen/reactgen/pipeline"
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
	f, err := pipeline.OpenInput(path)
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

// lineReader reads lines of any length: bufio.Scanner would stop at its token limit,
// and one page of a dump can be hundreds of megabytes.
type lineReader struct {
	r    *bufio.Reader
	buf  []byte
	line int
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 1<<20)}
}

// next returns the next line without its newline; the slice is valid until the next
// call. It returns io.EOF after the last line.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			l.buf = append(l.buf, chunk...)
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if err != nil && len(chunk) == 0 && len(l.buf) == 0 {
			return nil, io.EOF
		}
		l.line++
		var line []byte
		if len(l.buf) > 0 {
			l.buf = append(l.buf, chunk...)
			line = l.buf
		} else {
			line = chunk
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		return line, nil
	}
}
