package main

// Inputs that are not regular files, or too large: a named pipe or /dev/zero as task
// file, corpus or config is refused at once (not read until a second signal), and a
// config file over its bound is refused, each naming the path.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

func TestInputsThatAreNotRegularFilesAreRefused(t *testing.T) {
	srv := llmtest.NewServer(t, tinyModel().handle)
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": "k"}}
	for _, what := range []string{"task", "corpus", "config"} {
		for _, kind := range []string{"fifo", "/dev/zero"} {
			t.Run(what+" "+kind, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "input.jsonl")
				if kind == "fifo" {
					if err := syscall.Mkfifo(path, 0o644); err != nil {
						t.Skipf("mkfifo: %v", err)
					}
				} else {
					path = "/dev/zero"
				}
				sets := map[string]any{}
				switch what {
				case "task":
					sets["task.path"] = path
				case "corpus":
					sets["corpus.path"] = path
				}
				cfg := tinyConfig(t, dir, srv.URL, tinyTasks, tinyCorpus, sets)
				if what == "config" {
					cfg = path
				}
				out := filepath.Join(dir, "run")
				code, _, stderr := runChild(t, env, "run", "--config", cfg, "--out", out)
				if code != exitUsage {
					t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
				}
				if !strings.Contains(stderr, path) || !strings.Contains(stderr, "not a regular file") && !strings.Contains(stderr, "a device") {
					t.Errorf("the error does not name %s as no regular file:\n%s", path, stderr)
				}
				if _, err := os.Lstat(out); !os.IsNotExist(err) {
					t.Errorf("the refused run left %s", out)
				}
			})
		}
	}
}

func TestOversizedConfigIsRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(cfg, []byte("# "+strings.Repeat("x", 2<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := invoke(t, "", nil, "config", "show", "--config", cfg)
	if r.code != exitUsage || !strings.Contains(r.stderr, cfg) || !strings.Contains(r.stderr, "1 MiB") {
		t.Errorf("exit %d, want %d naming the file and its bound: %s", r.code, exitUsage, r.stderr)
	}
}
