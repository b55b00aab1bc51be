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

// compare --out writes only into a new or empty directory or over its own earlier report:
// a directory holding other files, or a link at it, at charts/ or at report.html, is
// refused (exit 2) before anything is written, and nothing reaches the link's target.
// A killed compare's temporary files are removed by the next.
func TestCompareOutNeverOverwritesOrWritesThroughLinks(t *testing.T) {
	dir, _ := demoRun(t)
	out := filepath.Join(t.TempDir(), "report")
	if res := invoke(t, "", nil, "compare", dir, "--out", out); res.code != 0 {
		t.Fatalf("compare: exit %d: %s", res.code, res.stderr)
	}
	leftover := filepath.Join(out, "charts", ".steps.svg.tmp-123")
	if err := os.WriteFile(leftover, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := invoke(t, "", nil, "compare", dir, "--out", out); res.code != 0 {
		t.Fatalf("compare over its own report: exit %d: %s", res.code, res.stderr)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("a killed compare's temporary file is still there: %v", err)
	}
	target := t.TempDir() // what a link points at: must stay empty
	for name, plant := range map[string]func(out string) error{
		"a directory of other files": func(out string) error {
			os.MkdirAll(out, 0o755)
			return os.WriteFile(filepath.Join(out, "thesis.tex"), []byte("mine"), 0o644)
		},
		"a link as --out": func(out string) error { return os.Symlink(target, out) },
		"a link at charts": func(out string) error {
			os.MkdirAll(out, 0o755)
			return os.Symlink(target, filepath.Join(out, "charts"))
		},
		"a link at report.html": func(out string) error {
			os.MkdirAll(out, 0o755)
			return os.Symlink(filepath.Join(target, "x.html"), filepath.Join(out, "report.html"))
		},
		"another file among the charts": func(out string) error {
			os.MkdirAll(filepath.Join(out, "charts"), 0o755)
			return os.WriteFile(filepath.Join(out, "charts", "notes.txt"), []byte("mine"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "report")
			if err := plant(out); err != nil {
				t.Fatal(err)
			}
			res := invoke(t, "", nil, "compare", dir, "--out", out)
			if res.code != exitUsage || !strings.Contains(res.stderr, "choose another --out") {
				t.Errorf("exit %d, want %d; stderr:\n%s", res.code, exitUsage, res.stderr)
			}
			if res.stdout != "" {
				t.Errorf("printed before refusing:\n%s", res.stdout)
			}
			if ents, _ := os.ReadDir(target); len(ents) > 0 {
				t.Errorf("wrote through the link: %v", ents)
			}
			if _, err := os.Lstat(filepath.Join(out, "report.html")); err == nil && name == "a directory of other files" {
				t.Error("wrote report.html into a directory of other files")
			}
		})
	}
}
