package safefile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reactgen/reactgen/internal/safefile"
)

// hostileDir is a directory holding a regular file, a link inside it, links out of it
// (to a secret file and to /dev/zero), a named pipe and a subdirectory.
func hostileDir(t *testing.T) (dir, secret string) {
	t.Helper()
	dir = t.TempDir()
	secret = filepath.Join(t.TempDir(), "shadow")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(secret, []byte("root:$6$secret"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "ok.svg"), []byte("<svg/>"), 0o644))
	must(os.Symlink("ok.svg", filepath.Join(dir, "inside.svg")))
	must(os.Symlink(secret, filepath.Join(dir, "shadow.svg")))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero.svg")))
	must(os.Symlink("../"+filepath.Base(filepath.Dir(secret)), filepath.Join(dir, "up")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.svg"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "sub.svg"), 0o755))
	return dir, secret
}

func TestReadInRefusesWhatIsNotARegularFileOfItsDirectory(t *testing.T) {
	dir, _ := hostileDir(t)
	for _, c := range []struct {
		name string
		ok   bool
		what any // the error type wanted
	}{
		{"ok.svg", true, nil},
		{"inside.svg", true, nil},
		{"shadow.svg", false, &safefile.EscapeError{}},
		{"zero.svg", false, &safefile.EscapeError{}},
		{"up/shadow", false, &safefile.EscapeError{}},
		{"../etc/passwd", false, &safefile.EscapeError{}},
		{"fifo.svg", false, &safefile.NotRegularError{}},
		{"sub.svg", false, &safefile.NotRegularError{}},
	} {
		b, err := safefile.ReadIn(dir, c.name, 1<<20)
		if c.ok {
			if err != nil || string(b) != "<svg/>" {
				t.Errorf("%s: %q, %v", c.name, b, err)
			}
			continue
		}
		switch c.what.(type) {
		case *safefile.EscapeError:
			var e *safefile.EscapeError
			if !errors.As(err, &e) || !strings.Contains(err.Error(), "leads out of") {
				t.Errorf("%s: %v, want an EscapeError", c.name, err)
			}
		case *safefile.NotRegularError:
			var e *safefile.NotRegularError
			if !errors.As(err, &e) {
				t.Errorf("%s: %v, want a NotRegularError", c.name, err)
			}
		}
		if b != nil {
			t.Errorf("%s: read %d bytes", c.name, len(b))
		}
	}
	if _, err := safefile.ReadIn(dir, "missing.svg", 1<<20); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dir) {
		t.Errorf("a missing file: %v, want ErrNotExist naming the path", err)
	}
	if _, err := safefile.ReadIn(dir, "ok.svg", 3); !strings.Contains(err.Error(), "over 3 bytes") {
		t.Errorf("over the bound: %v", err)
	}
}

// A file the user names may be a link, but never a pipe or a device: /dev/zero through a
// link is refused, not read forever.
func TestReadFileRefusesPipesAndDevices(t *testing.T) {
	dir, secret := hostileDir(t)
	if b, err := safefile.ReadFile(filepath.Join(dir, "shadow.svg"), 1<<20); err != nil || len(b) == 0 {
		t.Errorf("a link the user named: %v", err)
	}
	_ = secret
	for _, name := range []string{"zero.svg", "fifo.svg", "sub.svg"} {
		var e *safefile.NotRegularError
		if _, err := safefile.ReadFile(filepath.Join(dir, name), 1<<20); !errors.As(err, &e) {
			t.Errorf("%s: %v, want a NotRegularError", name, err)
		}
	}
}
