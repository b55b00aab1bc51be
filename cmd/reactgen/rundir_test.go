package main

// Writes where they must not go: reactgen does not write through symbolic links in a run
// directory, refuses "/" and directories holding files it did not write, never moves a
// user's files with --force-new, and a new run that fails on bad input leaves nothing.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

// demoArgs runs the demo config (the expert policy: no model) on a few questions.
func demoArgs(cmd, out string, extra ...string) []string {
	return append([]string{cmd, "--config", "../../configs/demo.yaml", "--out", out, "--set", "task.limit=6",
		"--set", "export.formats=[openai-chat]"}, extra...)
}

func TestLinksInARunDirectoryAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dir    bool // the victim is a folder
		resume bool // planted in a finished run, not a new one
	}{
		{name: pipeline.LockFile},
		{name: pipeline.EpisodesFile},
		{name: pipeline.EpisodesFile, resume: true},
		{name: pipeline.ManifestFile, resume: true},
		{name: pipeline.KeptFile, resume: true},
		{name: pipeline.ExportDir, dir: true},
		{name: pipeline.ExportDir, dir: true, resume: true},
		{name: pipeline.LLMCacheDir, dir: true},
	} {
		what := "new run"
		if tc.resume {
			what = "resume"
		}
		t.Run(tc.name+" "+what, func(t *testing.T) {
			tmp := t.TempDir()
			out := filepath.Join(tmp, "run")
			if tc.resume {
				if r := invoke(t, "", nil, demoArgs("run", out)...); r.code != 0 {
					t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
				}
			}
			// The victim: a file or folder of the user's that the link points at.
			victim := filepath.Join(tmp, "victim")
			if tc.dir {
				if err := os.MkdirAll(victim, 0o755); err != nil {
					t.Fatal(err)
				}
			} else {
				writeLines(t, victim, `{"the user's": "data"}`, `{"and a last line": "without a newline"`)
			}
			link := filepath.Join(out, tc.name)
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(link)
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, tmp)
			r := invoke(t, "", nil, demoArgs("run", out)...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, link) || !strings.Contains(r.stderr, "symbolic link") {
				t.Errorf("the error does not name the link %s:\n%s", link, r.stderr)
			}
			sameSnapshot(t, "after the refusal", before, snapshot(t, tmp))
		})
	}
}

func TestRunDirectoryOfOtherFilesIsRefused(t *testing.T) {
	// The task file does not exist, so that a regression fails on it instead of writing
	// a run into "/": the config check comes first.
	r := invoke(t, "", nil, demoArgs("run", "/", "--set", "task.path=/nonexistent/tasks.json")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "run.out") {
		t.Errorf("--out /: exit %d, want %d naming run.out: %s", r.code, exitUsage, r.stderr)
	}

	tmp := t.TempDir()
	mine := filepath.Join(tmp, "project")
	writeLines(t, filepath.Join(tmp, "project-notes.txt"), "not in the way")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	writeLines(t, filepath.Join(mine, "notes.txt"), "my notes")
	// Another program's manifest.json is not a run's.
	writeLines(t, filepath.Join(mine, "manifest.json"), `{"name": "my-web-app", "version": "1.0"}`)
	before := snapshot(t, tmp)
	for _, args := range [][]string{demoArgs("run", mine), demoArgs("run", mine, "--force-new"), demoArgs("filter", mine)} {
		r := invoke(t, "", nil, args...)
		if r.code != exitUsage {
			t.Errorf("%s: exit %d, want %d: %s", args[0], r.code, exitUsage, r.stderr)
		}
		if !strings.Contains(r.stderr, "manifest") {
			t.Errorf("%s: the error does not say the manifest is not reactgen's:\n%s", args[0], r.stderr)
		}
	}
	os.Remove(filepath.Join(mine, "manifest.json"))
	r = invoke(t, "", nil, demoArgs("run", mine)...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "notes.txt") {
		t.Errorf("a folder of the user's: exit %d, want %d naming notes.txt: %s", r.code, exitUsage, r.stderr)
	}
	delete(before, filepath.Join(mine, "manifest.json"))
	sameSnapshot(t, "after the refusals", before, snapshot(t, tmp))
}

func TestForceNewMovesOnlyWhatReactgenWrote(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	if r := invoke(t, "", nil, demoArgs("run", out)...); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	notes := writeLines(t, filepath.Join(out, "NOTES.md"), "what I tried in this run")
	r := invoke(t, "", nil, demoArgs("run", out, "--set", "generate.seed=2", "--force-new")...)
	if r.code != 0 {
		t.Fatalf("--force-new: exit %d: %s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "what I tried in this run\n" {
		t.Errorf("the user's file after --force-new: %q, %v", b, err)
	}
	entries, _ := os.ReadDir(out)
	var prev string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "previous-") {
			prev = filepath.Join(out, e.Name())
		}
	}
	if prev == "" {
		t.Fatal("no previous-* folder")
	}
	moved, _ := os.ReadDir(prev)
	var names []string
	for _, e := range moved {
		names = append(names, e.Name())
	}
	if slices.Contains(names, "NOTES.md") || !slices.Contains(names, pipeline.EpisodesFile) || !slices.Contains(names, pipeline.ManifestFile) {
		t.Errorf("moved aside: %q, want the run's files and not the user's", names)
	}
}

func TestFailedNewRunsLeaveNothing(t *testing.T) {
	tmp := t.TempDir()
	bad := writeLines(t, filepath.Join(tmp, "bad.jsonl"), `{"messages": [{"role": "user", "content": "Q"}]}`)
	good := writeLines(t, filepath.Join(tmp, "good.jsonl"), `{"messages": [{"role": "user", "content": "Question: What is the capital of Ulst?"}, {"role": "assistant", "content": "Thought: I should search Ulst.\nAction: Search[Ulst]"}, {"role": "user", "content": "Observation: Its capital is Morvenna."}, {"role": "assistant", "content": "Thought: It is Morvenna.\nAction: Finish[Morvenna]"}]}`)
	out := filepath.Join(tmp, "imported")
	if r := invoke(t, "", nil, "import", "--format", "openai-chat", "--out", out, bad); r.code != exitUsage {
		t.Fatalf("import of a bad file: exit %d, want %d: %s", r.code, exitUsage, r.stderr)
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(out)
		t.Errorf("the failed import left %s: %v", out, entries)
	}
	// With the gold answer, so that the export has an episode to keep (an export of
	// nothing fails).
	gold := writeLines(t, filepath.Join(tmp, "gold.jsonl"), `{"id": "u1", "question": "What is the capital of Ulst?", "answer": "Morvenna"}`)
	if r := invoke(t, "", nil, "import", "--format", "openai-chat", "--gold", gold, "--out", out, good); r.code != 0 {
		t.Errorf("retry of the import: exit %d: %s", r.code, r.stderr)
	}

	empty := writeLines(t, filepath.Join(tmp, "empty.jsonl"))
	run := filepath.Join(tmp, "run")
	if r := invoke(t, "", nil, demoArgs("run", run, "--set", "corpus.path="+empty)...); r.code != exitUsage {
		t.Fatalf("empty corpus: exit %d, want %d: %s", r.code, exitUsage, r.stderr)
	}
	if _, err := os.Lstat(run); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(run)
		t.Errorf("the run of an empty corpus left %s: %v", run, entries)
	}
}
