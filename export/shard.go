package export

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
)

// File is one written file, as the manifest lists it.
type File struct {
	Path   string `json:"path"`   // relative to the export directory, slash-separated
	Format string `json:"format"` // an export.formats name, or "arrow-meta", "pairs", "card"
	View   string `json:"view,omitempty"`
	Split  string `json:"split,omitempty"` // empty for files that hold every split
	Rows   int    `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// outBuffer is an outFile's buffer: the size of its write system calls. An export holds
// one per file it writes at once (two dozen for every format), so it is kept small.
const outBuffer = 256 << 10

// outFile is a file being written: buffered, hashed and counted as it goes. On Linux it
// is opened for direct I/O where the file system takes it (openOut): the export writes
// gigabytes once and reads back only a few files, so copying them through the page
// cache cost more CPU than everything else the export does (docs/bench-export.md). Full
// buffers, aligned in memory and in the file, go straight to the disk; the last partial
// one goes through the page cache at close.
type outFile struct {
	path   string
	f      *os.File
	buf    []byte // the buffered bytes, in an aligned array of outBuffer bytes
	direct bool   // f is open for direct I/O
	h      hash.Hash
	n      int64
	err    error // the first write error; every later write returns it
}

func createOut(path string) (*outFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	f, direct, err := openOut(path)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &outFile{path: path, f: f, buf: alignedBuffer(outBuffer), direct: direct, h: sha256.New()}, nil
}

// alignedBuffer returns an empty slice of capacity n whose array starts on a 4 KiB
// boundary, as direct I/O requires.
func alignedBuffer(n int) []byte {
	const align = 4096
	b := make([]byte, n+align)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) & (align - 1)); r != 0 {
		off = align - r
	}
	return b[off : off : off+n]
}

func (o *outFile) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n := len(p)
	for len(p) > 0 {
		k := copy(o.buf[len(o.buf):cap(o.buf)], p)
		o.buf = o.buf[:len(o.buf)+k]
		p = p[k:]
		if len(o.buf) == cap(o.buf) {
			if err := o.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	o.n += int64(n)
	return n, nil
}

// flush hashes and writes the buffer. A file system that opened the file for direct
// I/O but refuses a write (EINVAL: it wants a larger alignment, or a short write left
// the rest of the buffer unaligned) gets what is left through the page cache, and so
// does the rest of the file.
func (o *outFile) flush() error {
	o.h.Write(o.buf)
	k, err := o.f.Write(o.buf)
	if err != nil && o.direct && errors.Is(err, syscall.EINVAL) {
		o.direct = false
		if err = setDirect(o.f, false); err == nil {
			_, err = o.f.Write(o.buf[k:])
		}
	}
	o.buf = o.buf[:0]
	o.err = err
	return err
}

// directReader reads a file through an aligned buffer of outBuffer bytes, with direct
// I/O where the file system takes it: the loss-mask check reads back gigabytes that
// outFile wrote past the page cache, and copying them through it would cost what writing
// them did. A read the file system refuses (EINVAL) is made again through the cache.
type directReader struct {
	f      *os.File
	buf    []byte // the unread bytes are buf[r:]
	r      int
	direct bool
	err    error // the error of the last read, returned once buf is drained
}

func newDirectReader(f *os.File) *directReader {
	return &directReader{f: f, buf: alignedBuffer(4 * outBuffer), direct: setDirect(f, true) == nil}
}

func (d *directReader) Read(p []byte) (int, error) {
	if d.r == len(d.buf) {
		if d.err != nil {
			return 0, d.err
		}
		b := d.buf[:cap(d.buf)]
		n, err := d.f.Read(b)
		if n == 0 && d.direct && errors.Is(err, syscall.EINVAL) {
			d.direct = false
			if err = setDirect(d.f, false); err == nil {
				n, err = d.f.Read(b)
			}
		}
		d.buf, d.r, d.err = b[:n], 0, err
		if n == 0 {
			return 0, err
		}
	}
	n := copy(p, d.buf[d.r:])
	d.r += n
	return n, nil
}

// Seek reports the write position; it supports only Seek(0, io.SeekCurrent), which is all
// the Arrow IPC file writer asks of it.
func (o *outFile) Seek(offset int64, whence int) (int64, error) {
	if offset != 0 || whence != io.SeekCurrent {
		return 0, fmt.Errorf("seek %s: only the current position can be asked", o.path)
	}
	return o.n, nil
}

// close flushes and closes the file and returns its size and sha256.
func (o *outFile) close() (int64, string, error) {
	err := o.err
	if err == nil && o.direct {
		// The last buffer is shorter than a block: it goes through the page cache.
		err = setDirect(o.f, false)
		o.direct = false
	}
	if err == nil && len(o.buf) > 0 {
		err = o.flush()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, "", fmt.Errorf("write %s: %w", o.path, err)
	}
	return o.n, hex.EncodeToString(o.h.Sum(nil)), nil
}

// writeWhole writes data to path as a finished file.
func writeWhole(path string, data []byte) (int64, string, error) {
	o, err := createOut(path)
	if err != nil {
		return 0, "", err
	}
	if _, err := o.Write(data); err != nil {
		o.close()
		return 0, "", fmt.Errorf("write %s: %w", path, err)
	}
	return o.close()
}

// encoder writes rows of one format into one shard.
type encoder interface {
	// write encodes ex and returns the rows it wrote (one, but for the completion and
	// alpaca formats' rows per step) and the bytes they count against export.shard_bytes.
	write(ex *Example) (rows int, n int64, err error)
	// finish flushes everything into the underlying writer (which it does not close).
	finish() error
}

// shardSet writes the rows of one format and view, one shard sequence per split. Shards
// are written under temporary names and renamed to their final names at close, when the
// shard count N is known.
type shardSet struct {
	stage    string // the staging directory
	format   string
	view     string
	maxRows  int
	maxBytes int64
	newEnc   func(w io.Writer) (encoder, error)
	name     func(split string, i, n int) string // the final path relative to stage
	splits   map[string]*splitShards
	order    []string
	tmpSeq   int
}

type splitShards struct {
	done []*shard
	cur  *shard
}

type shard struct {
	tmp   string
	out   *outFile
	enc   encoder
	rows  int
	bytes int64
	size  int64
	sum   string
}

func (s *shardSet) splitOf(split string) *splitShards {
	if s.splits == nil {
		s.splits = map[string]*splitShards{}
	}
	ss := s.splits[split]
	if ss == nil {
		ss = &splitShards{}
		s.splits[split] = ss
		s.order = append(s.order, split)
	}
	return ss
}

func (s *shardSet) open(ss *splitShards) error {
	s.tmpSeq++
	tmp := filepath.Join(s.stage, fmt.Sprintf(".%s.%s.%d.tmp", s.format, s.view, s.tmpSeq))
	out, err := createOut(tmp)
	if err != nil {
		return err
	}
	enc, err := s.newEnc(out)
	if err != nil {
		out.close()
		return fmt.Errorf("start %s: %w", tmp, err)
	}
	ss.cur = &shard{tmp: tmp, out: out, enc: enc}
	return nil
}

func (s *shardSet) closeShard(ss *splitShards) error {
	sh := ss.cur
	ss.cur = nil
	err := sh.enc.finish()
	size, sum, cerr := sh.out.close()
	if err != nil {
		return fmt.Errorf("finish %s: %w", sh.tmp, err)
	}
	if cerr != nil {
		return cerr
	}
	sh.size, sh.sum = size, sum
	ss.done = append(ss.done, sh)
	return nil
}

// write adds ex to its split's current shard, closing the shard once it reaches
// export.shard_rows rows or export.shard_bytes bytes.
func (s *shardSet) write(ex *Example, split string) error {
	ss := s.splitOf(split)
	if ss.cur == nil {
		if err := s.open(ss); err != nil {
			return err
		}
	}
	rows, n, err := ss.cur.enc.write(ex)
	if err != nil {
		return fmt.Errorf("write example %s to %s: %w", ex.ID, s.format, err)
	}
	ss.cur.rows += rows
	ss.cur.bytes += n
	if (s.maxRows > 0 && ss.cur.rows >= s.maxRows) || (s.maxBytes > 0 && ss.cur.bytes >= s.maxBytes) {
		return s.closeShard(ss)
	}
	return nil
}

// recordEncoder is an encoder that also takes record batches built elsewhere.
type recordEncoder interface {
	encoder
	writeRecord(rec arrow.Record) error
}

// writeRecord adds a batch of rows rows and n bytes (as write counts them) to split's
// current shard, closing the shard once it reaches its limits. The caller ends batches
// where a shard must end, so the shards come out as write would make them.
func (s *shardSet) writeRecord(rec arrow.Record, split string, rows int, n int64) error {
	ss := s.splitOf(split)
	if ss.cur == nil {
		if err := s.open(ss); err != nil {
			return err
		}
	}
	enc, ok := ss.cur.enc.(recordEncoder)
	if !ok {
		return fmt.Errorf("%s: the encoder takes no record batches", s.format)
	}
	if err := enc.writeRecord(rec); err != nil {
		return fmt.Errorf("write to %s: %w", s.format, err)
	}
	ss.cur.rows += rows
	ss.cur.bytes += n
	if (s.maxRows > 0 && ss.cur.rows >= s.maxRows) || (s.maxBytes > 0 && ss.cur.bytes >= s.maxBytes) {
		return s.closeShard(ss)
	}
	return nil
}

// ensure makes split exist with at least one (possibly empty) shard.
func (s *shardSet) ensure(split string) error {
	ss := s.splitOf(split)
	if ss.cur == nil && len(ss.done) == 0 {
		return s.open(ss)
	}
	return nil
}

// close finishes every split and renames its shards into place.
func (s *shardSet) close() ([]File, error) {
	var files []File
	var errs []error
	for _, split := range s.order {
		ss := s.splits[split]
		if ss.cur != nil {
			if err := s.closeShard(ss); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		for i, sh := range ss.done {
			rel := s.name(split, i, len(ss.done))
			final := filepath.Join(s.stage, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
				errs = append(errs, fmt.Errorf("rename %s: %w", sh.tmp, err))
				continue
			}
			if err := os.Rename(sh.tmp, final); err != nil {
				errs = append(errs, fmt.Errorf("rename %s: %w", sh.tmp, err))
				continue
			}
			files = append(files, File{Path: rel, Format: s.format, View: s.view, Split: split, Rows: sh.rows, Bytes: sh.size, SHA256: sh.sum})
		}
	}
	return files, errors.Join(errs...)
}

// shardName is Hugging Face's shard naming: 00000-of-00001.
func shardName(i, n int) string { return fmt.Sprintf("%05d-of-%05d", i, n) }
