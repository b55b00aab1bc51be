// Package shareddata finds the real public data that sits beside the project in
// ../shared/data, for tests that use it as a test bed. Users' machines do not have it,
// so every lookup skips the test when the file is absent. It consumes a path relative to
// that folder and produces the file's absolute path (Path skips the test without it;
// Lookup reports whether it is there).
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Path returns the absolute path of rel under ../shared/data, or skips t when the file is
// not there.
func Path(t testing.TB, rel string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Skipf("shared data: %v", err)
	}
	p := filepath.Join(root, "..", "shared", "data", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data %s not present", rel)
	}
	return p
}

// Lookup returns the absolute path of rel under ../shared/data and whether the file is
// there, for a test that runs some cases on the project's own files either way.
func Lookup(rel string) (string, bool) {
	root, err := moduleRoot()
	if err != nil {
		return "", false
	}
	p := filepath.Join(root, "..", "shared", "data", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		return "", false
	}
	return p, true
}

// moduleRoot walks up from the working directory to the folder holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
