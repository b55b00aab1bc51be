package pipeline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Files reactgen owns in a run directory are opened without following symbolic links: a
// link planted there (a lock, an episode log or an export folder pointing at another
// file) would have reactgen write through it. OpenNoFollow and NotLink refuse one with
// a *LinkError naming the path. Files a user names as input (a task file, a corpus, a
// config) may be links, but must be regular files: OpenInput refuses a named pipe, a
// device such as /dev/zero or a directory before reading a byte, and ReadBounded bounds
// what is read.

// LinkError is a path reactgen owns in a run directory that is a symbolic link.
type LinkError struct{ Path string }

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link: reactgen does not write through links in a run directory (remove the link, or choose another --out)", e.Path)
}

// OpenNoFollow opens path as os.OpenFile does, except that a symbolic link at path is
// refused with a *LinkError, and so is anything that is not a regular file.
func OpenNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &LinkError{Path: path}
	}
	if err != nil {
		return nil, err
	}
	if err := regular(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// NotLink returns a *LinkError when path is a symbolic link; a missing path is no error.
func NotLink(path string) error {
	st, err := os.Lstat(path)
	if err == nil && st.Mode()&os.ModeSymlink != 0 {
		return &LinkError{Path: path}
	}
	return nil
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

// regular fails with a *NotRegularError when f is not a regular file.
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

// OpenInput opens a file the user named for reading. It follows links, but refuses
// what is not a regular file (*NotRegularError) without blocking: opening a named pipe
// waits for a writer, and a device such as /dev/zero never ends.
func OpenInput(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := regular(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// TooLargeError is an input over its size bound.
type TooLargeError struct {
	What  string // "config file /a/b.yaml", "response body from http://...", ...
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is over %s, the most reactgen reads of it", e.What, FormatBytes(e.Limit))
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

// ReadInputFile reads a regular file the user named (OpenInput), at most limit bytes.
func ReadInputFile(path string, limit int64) ([]byte, error) {
	f, err := OpenInput(path)
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
