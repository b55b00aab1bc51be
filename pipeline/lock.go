package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
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

// LockedError is returned when another live process holds the run directory.
type LockedError struct {
	Dir    string
	Holder Holder
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("run directory %s is in use by pid %d on %s (%s, since %s); wait for it to finish or stop it",
		e.Dir, e.Holder.PID, e.Holder.Host, e.Holder.Command, e.Holder.Since.Format(time.RFC3339))
}

// Lock is an exclusive hold on a run directory. It is an flock(2) on dir/lock, so the
// kernel releases it when the holding process dies: a stale lock left by a killed process
// is taken over by the next one, and two live processes can never both hold it.
type Lock struct {
	f *os.File
}

// AcquireLock takes the run directory's lock without waiting, creating dir if needed.
func AcquireLock(dir, command string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			var h Holder
			if b, rerr := os.ReadFile(path); rerr == nil {
				json.Unmarshal(b, &h)
			}
			return nil, &LockedError{Dir: dir, Holder: h}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	h := Holder{PID: os.Getpid(), Host: host, Command: command, Since: time.Now().UTC()}
	b, _ := json.Marshal(h)
	if err := f.Truncate(0); err == nil {
		f.WriteAt(append(b, '\n'), 0)
		f.Sync()
	}
	return &Lock{f: f}, nil
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
