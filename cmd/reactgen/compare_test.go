package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompareCommand(t *testing.T) {
	dir, _ := demoRun(t)
	out := filepath.Join(t.TempDir(), "report")
	res := invoke(t, "", nil, "compare", dir, "--out", out, "--details")
	if res.code != 0 {
		t.Fatalf("compare exit %d: %s", res.code, res.stderr)
	}
	lines := strings.Split(res.stdout, "\n")
	if !strings.HasPrefix(lines[0], "method") || !strings.Contains(lines[0], "HotpotQA EM") || !strings.HasPrefix(lines[1], "react") ||
		!strings.Contains(lines[1], "expert") {
		t.Errorf("table:\n%s", res.stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Error(err)
	}
	if res := invoke(t, "", nil, "compare", t.TempDir()); res.code != exitUsage {
		t.Errorf("a directory without a run: exit %d, want %d", res.code, exitUsage)
	}
}
