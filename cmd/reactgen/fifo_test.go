package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestSpecialFilesNeverHangACommand points every file a user or a server can point
// anywhere at a named pipe, or at /dev/zero through a link: a merge shard's episode log,
// a chart of export.card_charts, a batch directory's batches.json, the export file that
// train uploads and a response-cache segment. Before, each blocked for minutes or read
// /dev/zero forever, and SIGTERM did nothing. Now the binary refuses the file naming it
// (or, for a cache segment, passes over it); one still running after a moment is sent
// SIGTERM and must then exit, never be killed.
func TestSpecialFilesNeverHangACommand(t *testing.T) {
	demo, _ := demoRun(t)
	dir := t.TempDir()
	shards := shardRuns(t, dir, filepath.Join(demo, pipeline.IndexDir), 2)
	srv := llmtest.NewServer(t, newFakeModel(t).handle)
	fifo := func(t *testing.T, p string) {
		t.Helper()
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	zero := func(t *testing.T, p string) {
		t.Helper()
		os.Remove(p)
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
	}
	copyRun := func(t *testing.T, src string) string {
		t.Helper()
		dst := filepath.Join(t.TempDir(), "run")
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) []string // the command line
		want  string                      // in stderr; empty: the command succeeds
		code  int                         // the exit code: 1 a runtime failure, 2 a config key
	}{
		{"merge: a shard's episode log is a pipe", func(t *testing.T) []string {
			s := copyRun(t, shards[1])
			fifo(t, filepath.Join(s, pipeline.EpisodesFile))
			return []string{"merge", filepath.Join(t.TempDir(), "merged"), shards[0], s}
		}, "named pipe", 1},
		{"merge: a shard's episode log links to /dev/zero", func(t *testing.T) []string {
			s := copyRun(t, shards[1])
			zero(t, filepath.Join(s, pipeline.EpisodesFile))
			return []string{"merge", filepath.Join(t.TempDir(), "merged"), shards[0], s}
		}, "leads out of", 1},
		{"export: a chart of export.card_charts is a pipe", func(t *testing.T) []string {
			report := t.TempDir()
			os.MkdirAll(filepath.Join(report, "charts"), 0o755)
			os.WriteFile(filepath.Join(report, "charts", "a.svg"), []byte("<svg/>"), 0o644)
			fifo(t, filepath.Join(report, "charts", "x.svg"))
			return []string{"export", "--out", copyRun(t, demo), "--set", "export.card_charts=" + report}
		}, "export.card_charts", exitUsage},
		{"export: a chart links to /dev/zero", func(t *testing.T) []string {
			report := t.TempDir()
			os.MkdirAll(filepath.Join(report, "charts"), 0o755)
			zero(t, filepath.Join(report, "charts", "x.svg"))
			return []string{"export", "--out", copyRun(t, demo), "--set", "export.card_charts=" + report}
		}, "export.card_charts", exitUsage},
		{"generate: batches.json is a pipe", func(t *testing.T) []string {
			d := t.TempDir()
			batches := filepath.Join(d, "batches")
			os.MkdirAll(batches, 0o755)
			fifo(t, filepath.Join(batches, "batches.json"))
			cfg := testConfig(t, d, srv.URL, map[string]any{"task.limit": 4, "llm.mode": "batch", "llm.batch": map[string]any{"dir": batches}})
			return []string{"generate", "--config", cfg, "--out", filepath.Join(d, "run")}
		}, "batches.json is a named pipe", 1},
		{"generate: batches.json is not JSON (a re-attach that fails)", func(t *testing.T) []string {
			d := t.TempDir()
			batches := filepath.Join(d, "batches")
			os.MkdirAll(batches, 0o755)
			os.WriteFile(filepath.Join(batches, "batches.json"), []byte(`{"waves": [{"n": 1, "batch_id": `), 0o644)
			cfg := testConfig(t, d, srv.URL, map[string]any{"task.limit": 4, "llm.mode": "batch", "llm.batch": map[string]any{"dir": batches}})
			return []string{"generate", "--config", cfg, "--out", filepath.Join(d, "run")}
		}, "batches.json", 1},
		{"train: the export file to upload is a pipe", func(t *testing.T) []string {
			run := copyRun(t, demo)
			m := readManifest(t, run)
			for _, o := range m.Outputs {
				if o.Format == "openai-chat" && o.Split == "train" {
					fifo(t, filepath.Join(run, filepath.FromSlash(o.Path)))
				}
			}
			return []string{"train", "--run", run, "--base-model", "gpt-4o-mini-2024-07-18", "--base-url", srv.URL + "/v1", "--detach"}
		}, "named pipe", 1},
		{"generate: a response-cache segment is a pipe", func(t *testing.T) []string {
			d := t.TempDir()
			cache := filepath.Join(d, "cache")
			os.MkdirAll(cache, 0o755)
			fifo(t, filepath.Join(cache, "log-00000001.jsonl"))
			zero(t, filepath.Join(cache, "log-00000002.jsonl"))
			cfg := testConfig(t, d, srv.URL, map[string]any{"task.limit": 4, "llm.cache_dir": cache})
			return []string{"generate", "--config", cfg, "--out", filepath.Join(d, "run")}
		}, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.setup(t)
			c := startChild(t, childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}, args...)
			select {
			case <-c.done:
			case <-time.After(5 * time.Second):
				c.signal(t, syscall.SIGTERM)
			}
			code := c.wait(t)
			stderr := c.stderr.String()
			t.Logf("exit %d: %s", code, lastLine(stderr))
			switch {
			case code < 0:
				t.Fatalf("%v: killed (exit %d); stderr:\n%s", args, code, stderr)
			case tc.want == "" && code != 0:
				t.Errorf("%v: exit %d, want 0; stderr:\n%s", args, code, stderr)
			case code != tc.code || !strings.Contains(stderr, tc.want):
				t.Errorf("%v: exit %d (want %d), stderr lacks %q:\n%s", args, code, tc.code, tc.want, stderr)
			}
		})
	}
}

// TestSIGTERMStopsACommandBlockedOnAFIFO: env and play read actions from standard input;
// connected to a named pipe nobody writes to, they block in the read. SIGTERM must stop
// them (exit 143), as ^C must: before, the signal was noted and the read went on.
func TestSIGTERMStopsACommandBlockedOnAFIFO(t *testing.T) {
	demo, _ := demoRun(t)
	index := filepath.Join(demo, pipeline.IndexDir)
	for _, tc := range []struct {
		name string
		args []string
		sig  syscall.Signal
		code int
	}{
		{"env, SIGTERM", []string{"env", "--index", index}, syscall.SIGTERM, exitTerminated},
		{"env, ^C", []string{"env", "--index", index, "--json"}, syscall.SIGINT, exitInterrupted},
		{"play, SIGTERM", []string{"play", "--index", index, "--questions", mustAbs(t, demoTasks), "--question", "a40737f241598e2825d59b3f", "--save", filepath.Join(t.TempDir(), "ex.json")}, syscall.SIGTERM, exitTerminated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "actions")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that never writes: reads block
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			c := startChild(t, childEnv{stdin: f}, tc.args...)
			// Let it reach the read (it prints nothing first); a signal that came earlier
			// would stop it as well.
			select {
			case <-c.done:
				t.Fatalf("exited before the signal: exit %d; stderr:\n%s", c.code, c.stderr.String())
			case <-time.After(time.Second):
			}
			c.signal(t, tc.sig)
			if code := c.wait(t); code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, c.stderr.String())
			}
		})
	}
}
