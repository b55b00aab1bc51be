package pipeline

import (
	"io"
	"os"

	"github.com/reactgen/reactgen/internal/safefile"
)

// The file-safety rules live in internal/safefile; these names stay for the packages that
// use them through pipeline. Files reactgen owns in a run directory are opened without
// following symbolic links (OpenNoFollow, NotLink); files a user names as input may be
// links but must be regular files (OpenInput), read within a bound (ReadBounded); files
// that belong to a directory are read inside it (safefile.OpenIn).

type (
	// LinkError is a path reactgen owns in a run directory that is a symbolic link.
	LinkError = safefile.LinkError
	// NotRegularError is an input path that is not a regular file.
	NotRegularError = safefile.NotRegularError
	// TooLargeError is an input over its size bound.
	TooLargeError = safefile.TooLargeError
)

// OpenNoFollow is safefile.OpenNoFollow.
func OpenNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	return safefile.OpenNoFollow(path, flag, perm)
}

// NotLink is safefile.NotLink.
func NotLink(path string) error { return safefile.NotLink(path) }

// OpenInput is safefile.Open: a regular file the user named, links followed.
func OpenInput(path string) (*os.File, error) { return safefile.Open(path) }

// ReadBounded is safefile.ReadBounded.
func ReadBounded(r io.Reader, what string, limit int64) ([]byte, error) {
	return safefile.ReadBounded(r, what, limit)
}

// ReadInputFile is safefile.ReadFile.
func ReadInputFile(path string, limit int64) ([]byte, error) { return safefile.ReadFile(path, limit) }

// FormatBytes is safefile.FormatBytes.
func FormatBytes(n int64) string { return safefile.FormatBytes(n) }
