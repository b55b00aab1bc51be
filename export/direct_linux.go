package export

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openOut creates path for writing, for direct I/O (O_DIRECT) when the file system
// allows it, and says whether it does.
func openOut(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|unix.O_DIRECT, 0o666)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, syscall.EINVAL) {
		return nil, false, err
	}
	f, err = os.Create(path)
	return f, false, err
}

// endDirect turns direct I/O on f off: later writes go through the page cache.
func endDirect(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil {
			ferr = err
			return
		}
		_, ferr = unix.FcntlInt(fd, unix.F_SETFL, flags&^unix.O_DIRECT)
	}); err != nil {
		return err
	}
	return ferr
}
