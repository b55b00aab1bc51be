package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

// inSmallDisk runs the reactgen binary with dir mounted as a tmpfs of size bytes (ro:
// read-only), in a mount namespace of its own (unshare -rm), and returns its exit code
// and stderr. The test is skipped where unshare cannot make one.
func inSmallDisk(t *testing.T, dir string, size int, ro bool, args ...string) (int, string) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	if err := exec.Command("unshare", "-rm", "true").Run(); err != nil {
		t.Skipf("no mount namespace: %v", err)
	}
	opts := fmt.Sprintf("size=%d", size)
	if ro {
		opts += ",ro"
	}
	script := fmt.Sprintf(`mount -t tmpfs -o %s tmpfs "$1" || exit 99; shift; exec "$@"`, opts)
	cmd := exec.Command("unshare", append([]string{"-rm", "sh", "-c", script, "sh", dir, reactgenBinary(t)}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code == 99 {
		t.Skipf("cannot mount a tmpfs: %s", stderr.String())
	}
	return code, stderr.String()
}

// A full or read-only disk is a runtime failure (exit 1), never a usage error (exit 2):
// index, and a whole run, on a read-only directory and on a disk with no room.
func TestDiskFailuresExitOne(t *testing.T) {
	corpus := mustAbs(t, demoCorpus)
	for _, c := range []struct {
		name string
		size int
		ro   bool
		args func(dir string) []string
	}{
		{"index on a read-only disk", 1 << 20, true, func(dir string) []string {
			return []string{"index", "--corpus", corpus, "--out", filepath.Join(dir, "idx")}
		}},
		{"index on a full disk", 64 << 10, false, func(dir string) []string {
			return []string{"index", "--corpus", corpus, "--out", filepath.Join(dir, "idx")}
		}},
		{"run on a full disk", 64 << 10, false, func(dir string) []string {
			return []string{"run", "--config", mustAbs(t, "../../configs/demo.yaml"), "--out", filepath.Join(dir, "run")}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			code, stderr := inSmallDisk(t, dir, c.size, c.ro, c.args(dir)...)
			if code != exitFailure {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitFailure, stderr)
			}
			t.Logf("%s", lastLine(stderr))
		})
	}
	// The mapping itself, for what a test cannot make a disk do.
	for _, err := range []error{
		&pipeline.InputError{Err: &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}},
		&pipeline.ConfigError{Key: "corpus.path", Message: "x"},
	} {
		want := exitUsage
		if pipeline.IsDiskFailure(err) {
			want = exitFailure
		}
		if got := exitCode(err); got != want {
			t.Errorf("exitCode(%v) = %d, want %d", err, got, want)
		}
	}
	if !pipeline.IsDiskFailure(&pipeline.InputError{Err: &os.PathError{Op: "write", Path: "x", Err: syscall.EROFS}}) {
		t.Error("EROFS is no disk failure")
	}
}
