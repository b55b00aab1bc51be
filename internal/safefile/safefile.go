// Package safefile is the one rule for every file reactgen reads that a user or a server
// can point anywhere, and for the files it owns in a run directory. It consumes paths and
// produces open files or bounded contents:
//
//   - regular files only: a named pipe, a socket, a directory or a device such as
//     /dev/zero is refused before a byte is read, and opened without blocking (opening a
//     pipe would wait for a writer, where no signal could stop the process);
//   - a file that belongs to a directory (a chart of a compare report, a cache segment,
//     a batch directory's state, a shard's episode log, an export file to upload) is
//     opened inside that directory (OpenIn, ReadIn): a symbolic link that leads out of it
//     is refused with an *EscapeError, one that stays inside is followed;
//   - a file a user names on its own (a config, a task file, a corpus) may be a link,
//     but must be regular (Open, ReadFile);
//   - files reactgen writes in a run directory are opened without following a link at
//     all (OpenNoFollow, NotLink);
//   - what is read whole is bounded (ReadBounded, ReadFile, ReadIn): over the bound is a
//     *TooLargeError naming the file and the bound, never an exhausted machine.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// LinkError is a path reactgen owns in a run directory that is a symbolic link.
type LinkError struct{ Path string }

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link: reactgen does not write through links in a run directory (remove the link, or choose another --out)", e.Path)
}

// EscapeError is a file that should lie in Dir but is reached through a symbolic link
// (or a path) leading out of it.
type EscapeError struct{ Path, Dir string }

func (e *EscapeError) Error() string {
	return fmt.Sprintf("%s leads out of %s (a symbolic link to elsewhere): reactgen reads only files inside it", e.Path, e.Dir)
}

// NotRegularError is an input path that is not a regular file.
type NotRegularError struct {
	Path string
	Mode os.FileMode
}

func (e *NotRegularError) Error() string {
	what := "not a regular file"
	switch m := e.Mode; {
	case m.IsDir():
		what = "a directory, not a file"
	case m&os.ModeNamedPipe != 0:
		what = "a named pipe, not a regular file"
	case m&os.ModeSocket != 0:
		what = "a socket, not a regular file"
	case m&os.ModeDevice != 0:
		what = "a device, not a regular file"
	}
	return fmt.Sprintf("%s is %s", e.Path, what)
}

// TooLargeError is an input over its size bound.
type TooLargeError struct {
	What  string // "config file /a/b.yaml", "response body from http://...", ...
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is over %s, the most reactgen reads of it", e.What, FormatBytes(e.Limit))
}

// OpenNoFollow opens path as os.OpenFile does, except that a symbolic link at path is
// refused with a *LinkError, and so is anything that is not a regular file.
func OpenNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := openRegular(path, flag|syscall.O_NOFOLLOW, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &LinkError{Path: path}
	}
	return f, err
}

// NotLink returns a *LinkError when path is a symbolic link; a missing path is no error.
func NotLink(path string) error {
	st, err := os.Lstat(path)
	if err == nil && st.Mode()&os.ModeSymlink != 0 {
		return &LinkError{Path: path}
	}
	return nil
}

// regular fails with a *NotRegularError when f is not a regular file. (O_NONBLOCK, with
// which f was opened so that a pipe could not hang the open, changes nothing for a
// regular file.)
func regular(f *os.File, path string) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return nil
}

// Open opens a file the user named for reading. It follows links, but refuses what is
// not a regular file (*NotRegularError) without blocking.
func Open(path string) (*os.File, error) { return openRegular(path, os.O_RDONLY, 0) }

// openRegular opens path as os.OpenFile does, without blocking, and refuses what is not a
// regular file.
func openRegular(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	if err := regular(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenIn opens name, a path relative to dir, for reading: a regular file inside dir.
// Links inside dir are followed; a link (or a "..") that leads out of dir is an
// *EscapeError, and what is not a regular file a *NotRegularError, found without
// blocking. A missing file is an error that is fs.ErrNotExist.
func OpenIn(dir, name string) (*os.File, error) {
	full := filepath.Join(dir, name)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
			return nil, &EscapeError{Path: full, Dir: dir}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &fs.PathError{Op: "open", Path: full, Err: fs.ErrNotExist}
		}
		return nil, err
	}
	if err := regular(f, full); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenPath is OpenIn for a path: the file named by path's last element inside path's
// directory.
func OpenPath(path string) (*os.File, error) {
	return OpenIn(filepath.Dir(path), filepath.Base(path))
}

// ReadIn reads name inside dir (OpenIn), at most limit bytes.
func ReadIn(dir, name string, limit int64) ([]byte, error) {
	f, err := OpenIn(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadBounded(f, filepath.Join(dir, name), limit)
}

// ReadBounded reads r to its end, failing with a *TooLargeError naming what when it
// holds more than limit bytes. It never holds more than limit+1 bytes.
func ReadBounded(r io.Reader, what string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{What: what, Limit: limit}
	}
	return b, nil
}

// ReadFile reads a regular file the user named (Open), at most limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadBounded(f, path, limit)
}

// FormatBytes writes a byte count the way the docs state bounds: "64 MiB".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
