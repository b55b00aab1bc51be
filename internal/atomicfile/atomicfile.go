// Package atomicfile writes files that readers may open, whole or not at all: a file is
// written under a temporary name beside its final path and renamed into place after an
// fsync, so a crash or a kill never leaves half a file under the final name. It imports
// only internal/safefile and the standard library; pipeline, the stages and the index use it.
package atomicfile

import (
	"github.com/reactgen/reactgen/internal/safefile"

	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// File is a file being written under a temporary name beside its final path:
// Commit syncs it and renames it into place, Abort removes it, and until Commit nothing
// stands under the final name, so a crash or a kill never leaves half a file there. It
// is reactgen's one way to write a file that readers may open (run directory files,
// the MediaWiki cache, the demo world). Writes are buffered; it is not safe for
// concurrent use.
type File struct {
	path string
	f    *os.File
	w    *bufio.Writer
	sum  *hashingFile // CreateHashed's, or nil
	done bool         // Ready wrote, synced and closed the whole file
}

var _ io.Writer = (*File)(nil)

// Create starts an atomic file at path, creating its folder.
func Create(path string) (*File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	return &File{path: path, f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// CreateHashed is Create for a file whose size and sha256 the caller wants
// (a manifest's Output): every byte is hashed on its way to the file, and Digest gives
// what Digest would read back, without reading it. They are the file's bytes: the
// temporary file is new and empty (os.CreateTemp opens it O_EXCL), only this
// File's descriptor writes it, each write at the end of the last one (no seek),
// every byte passes through hashingFile.Write, which hashes exactly the bytes the
// kernel accepted, and a rename moves a file without changing its content.
func CreateHashed(path string) (*File, error) {
	a, err := Create(path)
	if err != nil {
		return nil, err
	}
	a.sum = &hashingFile{f: a.f, h: sha256.New()}
	// hashingFile has no ReadFrom, so a copy into the buffer cannot go around the hash
	// (bufio would hand it to os.File's copy_file_range).
	a.w = bufio.NewWriterSize(a.sum, 1<<20)
	return a, nil
}

// hashingFile writes to f and hashes what f took.
type hashingFile struct {
	f *os.File
	h hash.Hash
	n int64
}

func (w *hashingFile) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	return n, err
}

// Digest is the size and sha256 (hex) of a file from CreateHashed, once Ready or
// Commit has written all of it: Digest's answer for the committed file.
func (a *File) Digest() (int64, string, error) {
	switch {
	case a.sum == nil:
		return 0, "", fmt.Errorf("digest %s: not created by CreateHashed", a.path)
	case !a.done:
		return 0, "", fmt.Errorf("digest %s: not written (Ready or Commit has not succeeded)", a.path)
	}
	return a.sum.n, hex.EncodeToString(a.sum.h.Sum(nil)), nil
}

// Write buffers p. Its error names the final path.
func (a *File) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("write %s: %w", a.path, err)
	}
	return n, nil
}

// Buffer is the file's buffered writer, for callers that write many small pieces.
// Errors surface in Commit.
func (a *File) Buffer() *bufio.Writer { return a.w }

// Commit flushes, syncs and closes the file, makes it readable by all (0644, as
// os.Create would under the usual umask), and renames it into place. On error the
// temporary file is removed and the final path is untouched.
func (a *File) Commit() error {
	if a.f == nil {
		return fmt.Errorf("commit %s: already committed or aborted", a.path)
	}
	tmp, err := a.Ready()
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, a.path); err != nil {
		os.Remove(tmp)
		a.done = false
		return fmt.Errorf("rename into %s: %w", a.path, err)
	}
	SyncDir(filepath.Dir(a.path))
	return nil
}

// Ready flushes, syncs and closes the file and makes it readable by all, like Commit,
// but leaves it under its temporary name, which it returns, for Run.Commit to move with
// others as one unit. After Ready, Abort does nothing: the temporary file is the
// commit's (a journal names it), and a later stage's CleanTemps removes it if no commit
// took it.
func (a *File) Ready() (string, error) {
	if a.f == nil {
		return "", fmt.Errorf("finish %s: already committed or aborted", a.path)
	}
	tmp := a.f.Name()
	err := a.w.Flush()
	if err != nil {
		err = fmt.Errorf("write %s: %w", a.path, err)
	} else if err = a.f.Sync(); err != nil {
		err = fmt.Errorf("sync %s: %w", a.path, err)
	}
	if cerr := a.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", a.path, cerr)
	}
	a.f = nil
	if err == nil {
		if cerr := os.Chmod(tmp, 0o644); cerr != nil {
			err = fmt.Errorf("chmod %s: %w", a.path, cerr)
		}
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	a.done = true
	return tmp, nil
}

// Abort removes the temporary file; the final path is untouched. It is a no-op after
// Commit or a previous Abort.
func (a *File) Abort() {
	if a.f != nil {
		name := a.f.Name()
		a.f.Close()
		os.Remove(name)
		a.f = nil
	}
}

// WriteFile writes a file through fn with an File. On any error the
// temporary file is removed and path is untouched.
func WriteFile(path string, fn func(w io.Writer) error) error {
	a, err := Create(path)
	if err != nil {
		return err
	}
	if err := fn(a); err != nil {
		a.Abort()
		return err
	}
	return a.Commit()
}

// SyncDir makes a rename in dir durable. Errors are ignored: some file systems do not
// support syncing a directory, and the rename itself has already succeeded.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Digest returns the size and sha256 (hex) of a file.
func Digest(path string) (int64, string, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("read %s: %w", path, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// RemoveStale removes what killed writers left in dir: the temporary files of
// AtomicFiles for each of names (".<name>.tmp-*"), and every entry whose name starts with
// one of prefixes (a stage's staging folders). A kill leaves them, and no later commit
// would; the caller holds the run directory's lock, so no live writer owns them. It
// returns the paths removed.
func RemoveStale(dir string, names, prefixes []string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		n := e.Name()
		stale := false
		for _, name := range names {
			stale = stale || strings.HasPrefix(n, "."+name+".tmp-")
		}
		for _, p := range prefixes {
			stale = stale || strings.HasPrefix(n, p)
		}
		if stale && os.RemoveAll(filepath.Join(dir, n)) == nil {
			removed = append(removed, filepath.Join(dir, n))
		}
	}
	return removed
}
