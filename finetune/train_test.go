package finetune_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/finetune"
	"github.com/reactgen/reactgen/finetune/finetunetest"
	"github.com/reactgen/reactgen/pipeline"
)

// newRun writes a run directory whose export holds openai-chat train and validation
// files (the train split in two shards), recorded in the manifest as the export stage
// records them.
func newRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "export"), 0o755); err != nil {
		t.Fatal(err)
	}
	line := func(q string) string {
		return fmt.Sprintf(`{"messages":[{"role":"user","content":"Question: %s"},{"role":"assistant","content":"Thought: I know it.\nAction: Finish[yes]"}]}`+"\n", q)
	}
	files := []struct {
		name, split string
		rows        int
	}{
		{"openai-chat.train-00000-of-00002.jsonl", "train", 3},
		{"openai-chat.train-00001-of-00002.jsonl", "train", 2},
		{"openai-chat.validation.jsonl", "validation", 1},
		{"openai-chat.act.train.jsonl", "train", 1}, // another view: never uploaded
	}
	m := &pipeline.Manifest{Schema: 1, RunID: "run-test", Stages: map[string]*pipeline.StageRecord{}}
	for i, f := range files {
		var b strings.Builder
		for r := range f.rows {
			b.WriteString(line(fmt.Sprintf("q%d-%d", i, r)))
		}
		p := filepath.Join(dir, "export", f.name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(b.String()))
		m.Outputs = append(m.Outputs, pipeline.Output{Path: "export/" + f.name, Stage: "export", Format: "openai-chat",
			Split: f.split, Rows: f.rows, Bytes: int64(b.Len()), SHA256: hex.EncodeToString(sum[:])})
	}
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// syncBuffer is a progress writer that tests read while Train writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	on func(line string)
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	n, err := s.b.Write(p)
	on := s.on
	s.mu.Unlock()
	if on != nil {
		on(string(p))
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func options(dir string, srv *finetunetest.Server, key string, progress *syncBuffer, log *bytes.Buffer) finetune.Options {
	return finetune.Options{
		Dir: dir, API: finetune.APIOptions{BaseURL: srv.URL, APIKey: key}, Provider: "openai",
		BaseModel: "gpt-4o-mini-2024-07-18", Suffix: "react",
		Hyper:        pipeline.Hyperparameters{Epochs: 3, BatchSize: finetune.PaperBatchSize},
		PollInterval: time.Millisecond, Progress: progress, Logger: slog.New(slog.NewTextHandler(log, nil)),
	}
}

func readManifest(t *testing.T, dir string) *pipeline.Manifest {
	t.Helper()
	m, err := pipeline.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTrainCreatesFollowsAndRecords(t *testing.T) {
	dir := newRun(t)
	srv := finetunetest.New(t, finetunetest.Plan{Steps: 3, Pending: 2})
	var prog syncBuffer
	var log bytes.Buffer
	rec, err := finetune.Train(t.Context(), options(dir, srv, "sk-test", &prog, &log))
	if err != nil {
		t.Fatalf("train: %v\n%s", err, prog.String())
	}
	if rec.Status != pipeline.JobSucceeded || !strings.HasPrefix(rec.FineTunedModel, "ft:gpt-4o-mini-2024-07-18:") {
		t.Fatalf("record = %+v", rec)
	}
	jobs := srv.Jobs()
	if len(jobs) != 1 {
		t.Fatalf("%d jobs created, want 1", len(jobs))
	}
	hp, _ := jobs[0].Request["hyperparameters"].(map[string]any)
	if hp["batch_size"] != float64(64) || hp["n_epochs"] != float64(3) {
		t.Errorf("hyperparameters sent = %v, want batch_size 64, n_epochs 3", hp)
	}
	if jobs[0].Request["suffix"] != "react" || jobs[0].Request["validation_file"] == nil {
		t.Errorf("create request = %v", jobs[0].Request)
	}
	// The train split's two shards were uploaded as one file, in shard order; the act
	// view's file was not uploaded.
	files := srv.Files()
	if len(files) != 2 {
		t.Fatalf("%d files uploaded, want train and validation", len(files))
	}
	s0, _ := os.ReadFile(filepath.Join(dir, "export", "openai-chat.train-00000-of-00002.jsonl"))
	s1, _ := os.ReadFile(filepath.Join(dir, "export", "openai-chat.train-00001-of-00002.jsonl"))
	if !bytes.Equal(files[0].Data, append(s0, s1...)) {
		t.Errorf("uploaded train file differs from the two shards concatenated")
	}
	m := readManifest(t, dir)
	if len(m.Training) != 1 {
		t.Fatalf("manifest has %d training records", len(m.Training))
	}
	got := m.Training[0]
	if got.JobID != jobs[0].ID || got.FineTunedModel != rec.FineTunedModel || got.Files[0].FileID != files[0].ID || got.Files[0].Rows != 5 {
		t.Errorf("manifest record = %+v", got)
	}
	for _, want := range []string{"created fine-tuning job " + jobs[0].ID, "Step 3/3: training loss", "job " + jobs[0].ID + ": succeeded"} {
		if !strings.Contains(prog.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, prog.String())
		}
	}

	// A re-run attaches: nothing is uploaded or created again.
	again, err := finetune.Train(t.Context(), options(dir, srv, "sk-test", &prog, &log))
	if err != nil || again.FineTunedModel != rec.FineTunedModel {
		t.Fatalf("re-run: %v, %+v", err, again)
	}
	if len(srv.Jobs()) != 1 || len(srv.Files()) != 2 {
		t.Errorf("re-run created %d jobs and %d files, want 1 and 2", len(srv.Jobs()), len(srv.Files()))
	}
}

func TestTrainFailedJob(t *testing.T) {
	dir := newRun(t)
	srv := finetunetest.New(t, finetunetest.Plan{Steps: 1, Fail: "The job failed due to an invalid training file."})
	var prog syncBuffer
	var log bytes.Buffer
	rec, err := finetune.Train(t.Context(), options(dir, srv, "", &prog, &log))
	if !errors.Is(err, finetune.ErrJobFailed) || !strings.Contains(err.Error(), "invalid training file") {
		t.Fatalf("err = %v, want a failed job naming the reason", err)
	}
	m := readManifest(t, dir)
	if len(m.Training) != 1 || m.Training[0].Status != pipeline.JobFailed || !strings.Contains(m.Training[0].Error, "invalid training file") {
		t.Fatalf("manifest record = %+v", m.Training)
	}
	if rec.FineTunedModel != "" {
		t.Errorf("failed job has model %q", rec.FineTunedModel)
	}
	// Again without --new-job: the failure is reported, no job is created.
	if _, err := finetune.Train(t.Context(), options(dir, srv, "", &prog, &log)); !errors.Is(err, finetune.ErrJobFailed) || !strings.Contains(err.Error(), "--new-job") {
		t.Fatalf("re-run err = %v", err)
	}
	if len(srv.Jobs()) != 1 {
		t.Fatalf("re-run created a job")
	}
	// With --new-job: a second job on the files already uploaded.
	srv.SetPlan(finetunetest.Plan{Steps: 1})
	o := options(dir, srv, "", &prog, &log)
	o.NewJob = true
	rec, err = finetune.Train(t.Context(), o)
	if err != nil || rec.Status != pipeline.JobSucceeded {
		t.Fatalf("--new-job: %v, %+v", err, rec)
	}
	if len(srv.Jobs()) != 2 || len(srv.Files()) != 2 {
		t.Errorf("--new-job made %d jobs and %d uploads, want 2 and 2 (no upload again)", len(srv.Jobs()), len(srv.Files()))
	}
	if m := readManifest(t, dir); len(m.Training) != 2 || m.Training[0].Status != pipeline.JobFailed || m.Training[1].Status != pipeline.JobSucceeded {
		t.Errorf("manifest records = %+v", m.Training)
	}
}

func TestTrainInterruptedFollowAttaches(t *testing.T) {
	dir := newRun(t)
	srv := finetunetest.New(t, finetunetest.Plan{Steps: 4})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	prog := &syncBuffer{on: func(line string) {
		if strings.Contains(line, "Step 1/4") {
			cancel() // the user presses ^C while the job runs
		}
	}}
	var log bytes.Buffer
	_, err := finetune.Train(ctx, options(dir, srv, "", prog, &log))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	m := readManifest(t, dir)
	if len(m.Training) != 1 || m.Training[0].JobID == "" || pipeline.JobDone(m.Training[0].Status) {
		t.Fatalf("after the interrupt the manifest records %+v, want the running job", m.Training)
	}
	// Flaky checks while following again are retried.
	srv.FailGets(2)
	prog2 := &syncBuffer{}
	rec, err := finetune.Train(t.Context(), options(dir, srv, "", prog2, &log))
	if err != nil || rec.Status != pipeline.JobSucceeded {
		t.Fatalf("attach: %v, %+v", err, rec)
	}
	if len(srv.Jobs()) != 1 || !strings.Contains(prog2.String(), "attaching to fine-tuning job "+m.Training[0].JobID) {
		t.Errorf("%d jobs; progress:\n%s", len(srv.Jobs()), prog2.String())
	}
	if !strings.Contains(log.String(), "trying again") {
		t.Errorf("the failed checks were not logged:\n%s", log.String())
	}
}

func TestTrainOtherSettingsRefused(t *testing.T) {
	dir := newRun(t)
	srv := finetunetest.New(t, finetunetest.Plan{Steps: 1})
	var prog syncBuffer
	var log bytes.Buffer
	if _, err := finetune.Train(t.Context(), options(dir, srv, "", &prog, &log)); err != nil {
		t.Fatal(err)
	}
	o := options(dir, srv, "", &prog, &log)
	o.Hyper.Epochs = 5
	var se *finetune.SettingsError
	if _, err := finetune.Train(t.Context(), o); !errors.As(err, &se) || !strings.Contains(err.Error(), "hyperparameters") {
		t.Fatalf("err = %v, want a SettingsError naming hyperparameters", err)
	}
	if len(srv.Jobs()) != 1 {
		t.Errorf("a job was created with other settings")
	}
}

func TestTrainStepsBecomeEpochs(t *testing.T) {
	dir := newRun(t)
	srv := finetunetest.New(t, finetunetest.Plan{Steps: 1})
	var prog syncBuffer
	var log bytes.Buffer
	o := options(dir, srv, "", &prog, &log)
	o.Hyper = pipeline.Hyperparameters{Steps: 1, BatchSize: 64} // 64 examples over 5 rows
	rec, err := finetune.Train(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Hyperparameters.Epochs != 13 || srv.Jobs()[0].Request["hyperparameters"].(map[string]any)["n_epochs"] != float64(13) {
		t.Errorf("epochs = %d, sent %v; want ceil(64/5) = 13", rec.Hyperparameters.Epochs, srv.Jobs()[0].Request["hyperparameters"])
	}
}

func TestTrainChangedExportRefused(t *testing.T) {
	dir := newRun(t)
	srv := finetunetest.New(t, finetunetest.Plan{})
	p := filepath.Join(dir, "export", "openai-chat.validation.jsonl")
	if err := os.WriteFile(p, []byte(`{"messages":[{"role":"user","content":"edited"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var prog syncBuffer
	var log bytes.Buffer
	if _, err := finetune.Train(t.Context(), options(dir, srv, "", &prog, &log)); err == nil || !strings.Contains(err.Error(), "changed since the export") {
		t.Fatalf("err = %v", err)
	}
	if len(srv.Files()) != 0 {
		t.Errorf("a changed export was uploaded")
	}
}

// keyForms are the ways a key can leak: as is and base64-encoded, alone and as a header.
func keyForms(key string) []string {
	out := []string{key}
	for _, s := range []string{key, "Bearer " + key} {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(s)), base64.RawStdEncoding.EncodeToString([]byte(s)))
	}
	return out
}

func TestTrainKeyNeverLeaks(t *testing.T) {
	key := "sk-canary-4f1c9e77d2a0b3c5"
	dir := newRun(t)
	srv := finetunetest.New(t, finetunetest.Plan{Steps: 1})
	srv.Key = key
	var prog syncBuffer
	var log bytes.Buffer
	if _, err := finetune.Train(t.Context(), options(dir, srv, key, &prog, &log)); err != nil {
		t.Fatal(err)
	}
	if h := srv.Headers(); len(h) == 0 || h[0].Get("Authorization") != "Bearer "+key {
		t.Fatalf("the key was not sent")
	}
	// A wrong key, answered by a proxy that quotes the Authorization header back.
	wrong := "sk-canary-0000aaaa1111bbbb"
	srv.Echo401 = true
	o := options(dir, srv, wrong, &prog, &log)
	o.NewJob = true
	_, err := finetune.Train(t.Context(), o)
	if err == nil {
		t.Fatal("a wrong key succeeded")
	}
	texts := map[string]string{"error": err.Error(), "progress": prog.String(), "log": log.String(),
		"options": fmt.Sprintf("%v %+v %#v", o.API, o.API, o.API)}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			texts[p] = string(b)
		}
		return nil
	})
	for where, text := range texts {
		for _, k := range []string{key, wrong} {
			for _, f := range keyForms(k) {
				if strings.Contains(text, f) {
					t.Errorf("%s holds the key (%q)", where, f)
				}
			}
		}
	}
	if !strings.Contains(err.Error(), "401") {
		t.Errorf("err = %v, want the 401", err)
	}
}
