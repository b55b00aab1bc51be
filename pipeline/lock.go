package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/reactgen/reactgen/internal/safefile"
)

// LockFile is the name of the lock inside a run directory.
const LockFile = "lock"

// Holder says which process holds a run directory's lock.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// LockedError is returned when another live process holds the run directory (or, with
// What set, another lock: "index" for an index build).
type LockedError struct {
	Dir    string
	What   string // what is locked; empty means "run directory"
	Holder Holder
}

func (e *LockedError) Error() string {
	what := e.What
	if what == "" {
		what = "run directory"
	}
	return fmt.Sprintf("%s %s is in use by pid %d on %s (%s, since %s); wait for it to finish or stop it",
		what, e.Dir, e.Holder.PID, e.Holder.Host, e.Holder.Command, e.Holder.Since.Format(time.RFC3339))
}

// Lock is an exclusive hold on a run directory. It is an flock(2) on dir/lock, so the
// kernel releases it when the holding process dies: a stale lock left by a killed process
// is taken over by the next one, and two live processes can never both hold it.
type Lock struct {
	f    *os.File
	path string
}

// AcquireLock takes the run directory's lock without waiting, creating dir if needed.
func AcquireLock(dir, command string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory %s: %w", dir, err)
	}
	return acquire(filepath.Join(dir, LockFile), dir, "", command)
}

// AcquireLockFile takes the lock file at path without waiting, for what (such as
// "index") at target, which a refusal names. The file is created when missing and
// stays after Release.
func AcquireLockFile(path, what, target, command string) (*Lock, error) {
	return acquire(path, target, what, command)
}

func acquire(path, target, what, command string) (*Lock, error) {
	for {
		f, err := safefile.OpenNoFollow(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open lock: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			defer f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				var h Holder
				if b, rerr := safefile.ReadBounded(f, path, 64<<10); rerr == nil {
					json.Unmarshal(b, &h)
				}
				return nil, &LockedError{Dir: target, What: what, Holder: h}
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		// A holder that removed the file (Remove) between our open and our flock left
		// us holding a file no one else will open: lock the one at path instead.
		if !samePath(f, path) {
			f.Close()
			continue
		}
		host, _ := os.Hostname()
		h := Holder{PID: os.Getpid(), Host: host, Command: command, Since: time.Now().UTC()}
		b, _ := json.Marshal(h)
		if err := f.Truncate(0); err == nil {
			f.WriteAt(append(b, '\n'), 0)
			f.Sync()
		}
		return &Lock{f: f, path: path}, nil
	}
}

// samePath reports whether path still names the open file f.
func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// Remove deletes the lock file and gives the lock up, for a lock whose directory is
// left as it was found (a new run that failed on bad input, an index build). A process
// waiting on the removed file finds it gone and takes a new one.
func (l *Lock) Remove() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := os.Remove(l.path)
	if rerr := l.Release(); err == nil {
		err = rerr
	}
	return err
}

// Release gives the lock up. The lock file stays; its content is only informative.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.f.Truncate(0)
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	return err
}
