package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

// A name that no implementation answers to (a rule, a format, a view, a method, a
// policy) exits 2 when the config is loaded: before the task file is read, the index is
// built or a request is sent, and without touching an existing run directory.
func TestUnknownNameExitsTwoBeforeAnythingRuns(t *testing.T) {
	srv := llmtest.NewServer(t, tinyModel().handle)
	tmp := t.TempDir()
	env := map[string]string{"OPENAI_API_KEY": "k"}
	cfg := tinyConfig(t, filepath.Join(tmp, "cfg"), srv.URL, tinyTasks, tinyCorpus, nil)
	existing := filepath.Join(tmp, "existing")
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", existing); res.code != 0 {
		t.Fatalf("good run: exit %d: %s", res.code, res.stderr)
	}
	sent := srv.Requests()
	if sent == 0 {
		t.Fatal("the good run sent no request, so counting requests would prove nothing")
	}

	cases := []struct {
		key, typo, nearest string
		stage              string // the stage command that reads the key, besides run
	}{
		{"filter.rules", "[correct, finishd]", "finished", "filter"},
		{"export.formats", "[openai-chat, parqet]", "parquet", "export"},
		{"export.views", "[react, actt]", "act", "export"},
		{"generate.method", "reactt", "react", "generate"},
		{"generate.policy", "lm", "llm", "generate"},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			before := snapshot(t, existing)
			fresh := filepath.Join(t.TempDir(), "fresh")
			for _, cmd := range []string{"run", tc.stage} {
				for _, out := range []string{fresh, existing} {
					res := invoke(t, "", env, cmd, "--config", cfg, "--out", out, "--set", tc.key+"="+tc.typo)
					if res.code != exitUsage {
						t.Fatalf("%s --out %s: exit %d, want %d; stderr:\n%s", cmd, out, res.code, exitUsage, res.stderr)
					}
					msg := res.err.Error()
					if !strings.HasPrefix(msg, "config key "+tc.key+": ") || strings.Count(msg, "config key") != 1 {
						t.Errorf("%s: want one clean prefix naming %s, got:\n%s", cmd, tc.key, msg)
					}
					if !strings.Contains(msg, `did you mean "`+tc.nearest+`"?`) || !strings.Contains(msg, "(--set)") {
						t.Errorf("%s: the message does not name the nearest name %q and where the value came from:\n%s", cmd, tc.nearest, msg)
					}
				}
			}
			if n := srv.Requests(); n != sent {
				t.Errorf("the model server received %d requests, want none", n-sent)
			}
			if _, err := os.Stat(fresh); err == nil {
				t.Errorf("a refused config created %s (and so could have built an index there): %v", fresh, snapshotNames(snapshot(t, fresh)))
			}
			sameSnapshot(t, "existing run", before, snapshot(t, existing))
		})
	}
}
