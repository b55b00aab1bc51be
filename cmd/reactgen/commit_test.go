package main

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// killedAt runs reactgen's command line (the test binary's arguments) with a commit hook
// that SIGKILLs the process after step n of stage's commit ("filter:1": after the first
// of its moves). It is the child of TestFilterKilledBetweenItsRenames.
func killedAt(at string) int {
	var stage string
	var step int
	if _, err := fmt.Sscanf(strings.Replace(at, ":", " ", 1), "%s %d", &stage, &step); err != nil {
		fmt.Fprintf(os.Stderr, "REACTGEN_TEST_KILL_AT=%q: want stage:step\n", at)
		return 2
	}
	pipeline.CommitHook = func(s string, i int) {
		if s == stage && i == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	a := newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	err := a.execute(context.Background(), os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "reactgen: %v\n", err)
	}
	return exitCode(err)
}

// killChild runs reactgen in a child process that kills itself after step of stage's
// commit, and checks that it died so.
func killChild(t *testing.T, stage string, step int, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("REACTGEN_TEST_KILL_AT=%s:%d", stage, step))
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("%v: want the process killed mid-commit, got %v:\n%s", args, err, out)
	}
}

// ids reads the episode ids of a JSONL file of episode records.
func ids(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, ep := range logLines(t, path) {
		out[ep.ID] = true
	}
	return out
}

// exportFiles lists every file under the run's export/ folder, relative to the run.
func exportFiles(t *testing.T, run string) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(filepath.Join(run, pipeline.ExportDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(run, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(files)
	return files
}

// manifestExport lists the export files the run's manifest records.
func manifestExport(t *testing.T, run string) []string {
	t.Helper()
	var files []string
	for _, o := range readManifest(t, run).Outputs {
		if o.Stage == pipeline.StageExport {
			files = append(files, o.Path)
		}
	}
	slices.Sort(files)
	return files
}

// TestFilterKilledBetweenItsRenames kills `reactgen filter` between its two renames (a
// new kept.jsonl in place, rejected.jsonl still the old one, so that episodes are in
// both): stats says a commit was cut short, and the next command completes it, so that
// the export runs on one filter result, with no episode both kept and rejected.
func TestFilterKilledBetweenItsRenames(t *testing.T) {
	srv := llmtest.NewServer(t, newFakeModel(t).handle)
	dir := t.TempDir()
	// The first filter rejects every episode (none has a single step).
	cfg := testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{"task.limit": 30,
		"filter.rules": []string{"finished", "max_steps"}, "filter.max_steps": 1})
	out := filepath.Join(dir, "run")
	// generate and filter, not run: an export of nothing kept fails.
	for _, stage := range []string{"generate", "filter"} {
		if res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "sk-test"}, stage, "--config", cfg, "--out", out); res.code != 0 {
			t.Fatalf("%s: exit %d: %s", stage, res.code, res.stderr)
		}
	}
	// Re-filter keeping the correct episodes, killed after its first rename: the new
	// kept.jsonl holds them, and the old rejected.jsonl still does too.
	killChild(t, pipeline.StageFilter, 1, "filter", "--config", cfg, "--out", out, "--set", "filter.rules=[finished,correct]")
	kept, rejected := ids(t, filepath.Join(out, pipeline.KeptFile)), ids(t, filepath.Join(out, pipeline.RejectedFile))
	both := 0
	for id := range kept {
		if rejected[id] {
			both++
		}
	}
	if both == 0 || both != len(kept) || len(rejected) != 30 {
		t.Fatalf("after the kill: %d kept, %d rejected, %d in both; want every kept one in both, which the kill leaves", len(kept), len(rejected), both)
	}
	newKept := len(kept)
	res := invoke(t, "", nil, "stats", "--run", out)
	if !strings.Contains(res.stdout, "interrupted commit") || !strings.Contains(res.stdout, "filter") {
		t.Errorf("stats does not say the filter's commit was cut short:\n%s", res.stdout)
	}
	if res := invoke(t, "", nil, "export", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("export after the kill: exit %d: %s", res.code, res.stderr)
	}
	kept, rejected = ids(t, filepath.Join(out, pipeline.KeptFile)), ids(t, filepath.Join(out, pipeline.RejectedFile))
	for id := range kept {
		if rejected[id] {
			t.Errorf("episode %s is both kept and rejected", id)
		}
	}
	if len(kept) != newKept || len(kept)+len(rejected) != 30 {
		t.Errorf("after the completed commit: %d kept, %d rejected; want the killed filter's %d and %d", len(kept), len(rejected), newKept, 30-newKept)
	}
	if _, ok := pipeline.PendingCommit(out); ok {
		t.Error("the commit journal is still there")
	}
	m := readManifest(t, out)
	if len(m.Recovered) == 0 || !strings.Contains(strings.Join(m.Recovered, ";"), "commit of stage filter") {
		t.Errorf("manifest recovered %v: want the completed filter commit", m.Recovered)
	}

	// A filter result that is not whole (a rejected.jsonl from elsewhere) is refused.
	if err := os.WriteFile(filepath.Join(out, pipeline.RejectedFile), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = invoke(t, "", nil, "export", "--config", cfg, "--out", out)
	if res.code == 0 || !strings.Contains(res.stderr, "not whole") || !strings.Contains(res.stderr, "reactgen filter") {
		t.Errorf("export of a broken filter result: exit %d, stderr %q; want a refusal naming reactgen filter", res.code, res.stderr)
	}
}

// TestExportIsOneGeneration: re-exporting with fewer shards, or after a re-filter that
// keeps fewer episodes, leaves exactly the new export on disk, the files the manifest
// and the card list; stats says when the export is older than kept.jsonl; an export
// killed between its moves is completed by the next command; and temporary files of
// killed filter and export runs are removed by the next run of that stage.
func TestExportIsOneGeneration(t *testing.T) {
	srv := llmtest.NewServer(t, newFakeModel(t).handle)
	dir := t.TempDir()
	cfg := testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{
		"task.limit": 40, "export.formats": []string{"openai-chat", "parquet"}, "export.shard_rows": 5,
	})
	out := filepath.Join(dir, "run")
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	same := func(when string) {
		t.Helper()
		disk, listed := exportFiles(t, out), manifestExport(t, out)
		if !slices.Equal(disk, listed) {
			t.Errorf("%s: on disk %v, the manifest lists %v", when, disk, listed)
		}
		card, err := os.ReadFile(filepath.Join(out, "export", "README.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range disk {
			rel := strings.TrimPrefix(f, "export/")
			if rel != "README.md" && !strings.Contains(string(card), rel) && strings.HasSuffix(rel, ".parquet") {
				t.Errorf("%s: the card does not list %s", when, rel)
			}
		}
	}
	same("first export")
	shards := len(exportFiles(t, out))

	if res := invoke(t, "", env, "export", "--config", cfg, "--out", out, "--set", "export.shard_rows=0"); res.code != 0 {
		t.Fatalf("re-export: exit %d: %s", res.code, res.stderr)
	}
	same("re-export with one shard")
	if n := len(exportFiles(t, out)); n >= shards {
		t.Errorf("re-export with one shard per split: %d files, first export %d", n, shards)
	}

	// A re-filter keeping fewer episodes (but some: an export of nothing fails): the
	// export is older than kept.jsonl until it runs again, and then holds exactly the
	// kept ones. Every other kept question becomes an evaluation question.
	var evalLines []string
	for i, ep := range logLines(t, filepath.Join(out, pipeline.KeptFile)) {
		if i%2 == 0 {
			evalLines = append(evalLines, fmt.Sprintf(`{"id": %q, "question": %q}`, ep.QuestionID, ep.Question))
		}
	}
	evalFile := writeLines(t, filepath.Join(dir, "eval.jsonl"), evalLines...)
	fewer := []string{"--set", "filter.rules=[finished,correct,decontaminate]", "--set", "filter.eval_files=[" + evalFile + "]"}
	if res := invoke(t, "", env, append([]string{"filter", "--config", cfg, "--out", out}, fewer...)...); res.code != 0 {
		t.Fatalf("re-filter: exit %d: %s", res.code, res.stderr)
	}
	if res := invoke(t, "", nil, "stats", "--run", out); !strings.Contains(res.stdout, "older than kept.jsonl") {
		t.Errorf("stats does not say the export is older than kept.jsonl:\n%s", res.stdout)
	}
	// Leftovers of killed runs, for the next filter and export to remove.
	for _, p := range []string{".kept.jsonl.tmp-1", ".rejected.jsonl.tmp-2", ".export.tmp-3/openai-chat.train.jsonl", ".export.old-4/data/train-00000-of-00001.parquet", "export/.export-tmp-5/x"} {
		os.MkdirAll(filepath.Dir(filepath.Join(out, p)), 0o755)
		os.WriteFile(filepath.Join(out, p), []byte("stale\n"), 0o644)
	}
	if res := invoke(t, "", env, append([]string{"filter", "--config", cfg, "--out", out}, fewer...)...); res.code != 0 {
		t.Fatalf("re-filter: exit %d: %s", res.code, res.stderr)
	}
	killChild(t, pipeline.StageExport, 1, "export", "--config", cfg, "--out", out)
	if _, err := os.Stat(filepath.Join(out, pipeline.ExportDir)); !os.IsNotExist(err) {
		t.Errorf("export killed between its moves: export/ is there (%v), want it put aside", err)
	}
	if res := invoke(t, "", nil, "stats", "--run", out); !strings.Contains(res.stdout, "interrupted commit") {
		t.Errorf("stats does not say the export's commit was cut short:\n%s", res.stdout)
	}
	if res := invoke(t, "", env, "export", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("export after the kill: exit %d: %s", res.code, res.stderr)
	}
	same("export after a re-filter and a killed export")
	if res := invoke(t, "", nil, "stats", "--run", out); strings.Contains(res.stdout, "older than kept.jsonl") || strings.Contains(res.stdout, "interrupted commit") {
		t.Errorf("stats after the export:\n%s", res.stdout)
	}
	keptN := len(logLines(t, filepath.Join(out, pipeline.KeptFile)))
	rows := 0
	// Every openai-chat file, of either split, sharded (export.shard_rows) or not.
	chat, err := filepath.Glob(filepath.Join(out, "export", "openai-chat.*.jsonl"))
	if err != nil || len(chat) == 0 {
		t.Fatalf("no openai-chat files in the export (%v)", err)
	}
	for _, name := range chat {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			rows++
		}
		f.Close()
	}
	if rows != keptN {
		t.Errorf("openai-chat holds %d rows, kept.jsonl %d", rows, keptN)
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left in the run directory: %s", e.Name())
		}
	}
}
