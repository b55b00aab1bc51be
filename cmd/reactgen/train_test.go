package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactgen/reactgen/finetune/finetunetest"
)

// TestTrainCommand fine-tunes on a demo run's export against the fake service: the job
// is created and followed, the model is recorded, the eval command is printed, a re-run
// attaches, and the key reaches no file, stdout or stderr.
func TestTrainCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if res := invoke(t, "", nil, "run", "--config", "../../configs/demo.yaml", "--out", dir, "--set", "task.limit=20"); res.code != 0 {
		t.Fatalf("demo run: %s", res.stderr)
	}
	key := "sk-canary-train-7c1d2e3f4a5b"
	srv := finetunetest.New(t, finetunetest.Plan{Steps: 2})
	srv.Key = key
	env := map[string]string{"FT_KEY": key}
	args := []string{"train", "--provider", "openai", "--run", dir, "--base-model", "gpt-4o-mini-2024-07-18",
		"--base-url", srv.URL, "--api-key-env", "FT_KEY", "--epochs", "2", "--poll", "1ms"}
	res := invoke(t, "", env, args...)
	if res.code != 0 {
		t.Fatalf("train exit %d: %s", res.code, res.stderr)
	}
	m := readManifest(t, dir)
	if len(m.Training) != 1 || m.Training[0].FineTunedModel == "" {
		t.Fatalf("manifest training = %+v", m.Training)
	}
	model := m.Training[0].FineTunedModel
	// No --batch-size: the service chooses, as its own default would.
	if hp, _ := srv.Jobs()[0].Request["hyperparameters"].(map[string]any); hp["batch_size"] != nil || hp["n_epochs"] != float64(2) {
		t.Errorf("hyperparameters sent = %v, want n_epochs 2 and no batch_size", hp)
	}
	// The printed command names the run's own config file and the fine-tuned model.
	if !strings.Contains(res.stdout, "reactgen eval --config ../../configs/demo.yaml") || !strings.Contains(res.stdout, "llm.model="+model) ||
		!strings.Contains(res.stdout, "generate.prompting=trained") {
		t.Errorf("stdout lacks the eval command:\n%s", res.stdout)
	}
	again := invoke(t, "", env, args...)
	if again.code != 0 || len(srv.Jobs()) != 1 || !strings.Contains(again.stderr, "attaching") {
		t.Errorf("re-run: exit %d, %d jobs:\n%s", again.code, len(srv.Jobs()), again.stderr)
	}
	// Other settings without --new-job are a usage error.
	if res := invoke(t, "", env, append(args, "--suffix", "other")...); res.code != exitUsage {
		t.Errorf("other settings: exit %d, want %d: %s", res.code, exitUsage, res.stderr)
	}
	var found []string
	eachFile(dir, func(p string, b []byte) {
		found = append(found, leaks(key, p, b)...)
	})
	for _, r := range []result{res, again} {
		found = append(found, leaks(key, "stdout", []byte(r.stdout))...)
		found = append(found, leaks(key, "stderr", []byte(r.stderr))...)
	}
	for _, f := range found {
		t.Error(f)
	}
}

// TestTrainKilledAtEveryPaidCallCreatesOneJob SIGKILLs `reactgen train` again and again
// at the moment the service has stored an upload or created the job but not yet answered
// (the fake withholds the answer until the client is gone), then lets it finish: however
// many kills, the service holds one job and one upload per file.
func TestTrainKilledAtEveryPaidCallCreatesOneJob(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process again and again")
	}
	dir := filepath.Join(t.TempDir(), "run")
	if res := invoke(t, "", nil, "run", "--config", "../../configs/demo.yaml", "--out", dir, "--set", "task.limit=20"); res.code != 0 {
		t.Fatalf("demo run: %s", res.stderr)
	}
	srv := finetunetest.New(t, finetunetest.Plan{Steps: 1})
	args := []string{"train", "--run", dir, "--base-model", "gpt-4o-mini-2024-07-18", "--base-url", srv.URL, "--poll", "1ms", "--detach"}
	ops := []string{"upload", "upload", "create", "create", "create", "upload", "create"}
	kills := 0
	for i, op := range ops {
		held := srv.Hold(op)
		c := startChild(t, childEnv{}, args...)
		select {
		case <-held:
			c.signal(t, syscall.SIGKILL)
			c.wait(t)
			kills++
		case <-c.done:
			// Nothing of op was left to do: the run found what the killed ones paid for.
			if c.code != 0 {
				t.Fatalf("cycle %d (%s): exit %d: %s", i, op, c.code, c.stderr.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("cycle %d: the child never reached %s", i, op)
		}
		srv.Release(op)
	}
	if kills < 3 {
		t.Fatalf("only %d of %d cycles were killed at a paid call", kills, len(ops))
	}
	code, stdout, stderr := runChild(t, childEnv{}, args...)
	if code != 0 {
		t.Fatalf("final run: exit %d: %s", code, stderr)
	}
	m := readManifest(t, dir)
	if len(m.Training) != 1 {
		t.Fatalf("manifest has %d training records, want 1: %+v", len(m.Training), m.Training)
	}
	jobs, files := srv.Jobs(), srv.Files()
	if len(jobs) != 1 || len(files) != len(m.Training[0].Files) {
		t.Fatalf("after %d kills: %d jobs and %d uploads, want 1 and %d", kills, len(jobs), len(files), len(m.Training[0].Files))
	}
	if m.Training[0].JobID != jobs[0].ID || !strings.Contains(stdout, jobs[0].ID) {
		t.Errorf("recorded job %q, the service has %s; stdout %s", m.Training[0].JobID, jobs[0].ID, stdout)
	}
	for i, f := range m.Training[0].Files {
		if f.FileID != files[i].ID {
			t.Errorf("file %d recorded as %s, uploaded as %s", i, f.FileID, files[i].ID)
		}
	}
	t.Logf("%d kills at paid calls: 1 job, %d uploads", kills, len(files))
}
