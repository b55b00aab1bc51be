//go:build !linux

package export

import (
	"errors"
	"os"
)

// openOut creates path for writing; direct I/O is used on Linux only.
func openOut(path string) (*os.File, bool, error) {
	f, err := os.Create(path)
	return f, false, err
}

// setDirect turns nothing off and refuses to turn direct I/O on: it is used on Linux only.
func setDirect(_ *os.File, on bool) error {
	if on {
		return errors.ErrUnsupported
	}
	return nil
}
