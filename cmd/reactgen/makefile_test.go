package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// makeRecipe reads the Makefile's reactgen commands of target, each as its arguments
// (after $(BIN)), with the Makefile's simple variables ($(NAME) of NAME := value)
// expanded.
func makeRecipe(t *testing.T, target string) [][]string {
	t.Helper()
	f, err := os.Open("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	varDef := regexp.MustCompile(`^([A-Z_]+)\s*:?=\s*(.*)$`)
	var cmds [][]string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := varDef.FindStringSubmatch(line); m != nil {
			vars[m[1]] = m[2]
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			in = strings.HasPrefix(line, target+":")
			continue
		}
		cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "$(BIN) ")
		if !in || !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, ">") // a redirect of its output
		cmd = regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(cmd, func(v string) string {
			return vars[v[2:len(v)-1]]
		})
		cmds = append(cmds, strings.Fields(cmd))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cmds) == 0 {
		t.Fatalf("the Makefile's %s target runs no reactgen command", target)
	}
	return cmds
}

// TestMakeReportLeavesDemoAlone runs `make report`'s commands in a scratch directory
// where runs/demo holds a user's own work: the report makes and compares its own runs
// and never reads or writes the directory `make run` uses.
func TestMakeReportLeavesDemoAlone(t *testing.T) {
	root := t.TempDir()
	demo := makeRecipe(t, "run")[0]
	demoDir := demo[len(demo)-1]
	userFile := filepath.Join(root, demoDir, "export", "mine.jsonl")
	if err := os.MkdirAll(filepath.Dir(userFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(userFile, []byte(`{"a user's": "own export"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"report", "report-screenshot"} {
		for _, args := range makeRecipe(t, target) {
			for _, a := range args {
				if a == demoDir || strings.HasPrefix(a, demoDir+"/") {
					t.Errorf("make %s: `reactgen %s` names %s, the directory `make run` writes", target, strings.Join(args, " "), demoDir)
				}
			}
		}
	}
	for _, args := range makeRecipe(t, "report") {
		for i, a := range args {
			switch {
			case strings.HasPrefix(a, "configs/"):
				args[i] = filepath.Join("..", "..", a)
			case strings.HasPrefix(a, "runs/"):
				args[i] = filepath.Join(root, a)
			}
		}
		if res := invoke(t, "", nil, args...); res.code != 0 {
			t.Fatalf("make report: reactgen %s: exit %d: %s", strings.Join(args, " "), res.code, res.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "runs", "report", "report.html")); err != nil {
		t.Errorf("make report wrote no report: %v", err)
	}
	entries, err := os.ReadDir(filepath.Join(root, demoDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "export" {
		t.Errorf("make report changed %s: it holds %v", demoDir, entries)
	}
	if b, err := os.ReadFile(userFile); err != nil || string(b) != `{"a user's": "own export"}`+"\n" {
		t.Errorf("make report changed the user's %s: %q %v", userFile, b, err)
	}
}
