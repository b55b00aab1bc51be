//go:build !linux

package export

import "os"

// openOut creates path for writing; direct I/O is used on Linux only.
func openOut(path string) (*os.File, bool, error) {
	f, err := os.Create(path)
	return f, false, err
}

// endDirect does nothing: no file is opened for direct I/O here.
func endDirect(*os.File) error { return nil }
