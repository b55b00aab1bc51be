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

// setDirect turns direct I/O on f on or off; a file system that has none refuses it.
func setDirect(f *os.File, on bool) error {
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
		if on {
			flags |= unix.O_DIRECT
		} else {
			flags &^= unix.O_DIRECT
		}
		_, ferr = unix.FcntlInt(fd, unix.F_SETFL, flags)
	}); err != nil {
		return err
	}
	return ferr
}
