package finetune_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/finetune"
	"github.com/reactgen/reactgen/finetune/finetunetest"
	"github.com/reactgen/reactgen/pipeline"
)

// interruptAt runs Train until the fake has carried out op and withholds its answer,
// then cancels it, as a ^C or a lost connection at that moment would.
func interruptAt(t *testing.T, dir string, srv *finetunetest.Server, op string, mod func(*finetune.Options)) {
	t.Helper()
	held := srv.Hold(op)
	defer srv.Release(op)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var prog syncBuffer
	var log bytes.Buffer
	o := options(dir, srv, "", &prog, &log)
	if mod != nil {
		mod(&o)
	}
	done := make(chan error, 1)
	go func() {
		_, err := finetune.Train(ctx, o)
		done <- err
	}()
	select {
	case <-held:
		cancel()
		<-done
	case err := <-done:
		t.Fatalf("train ended before the service %s: %v\n%s", op, err, prog.String())
	}
}

// TestTrainResumeFindsItsUploadAndJob interrupts train after the service stored each
// upload and after it created the job, each time before the answer came back, and checks
// that the re-runs find them: one job and two uploads in all, on every kind of service.
func TestTrainResumeFindsItsUploadAndJob(t *testing.T) {
	for _, tc := range []struct {
		name       string
		noMetadata bool
	}{{"metadata", false}, {"no metadata", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRun(t)
			srv := finetunetest.New(t, finetunetest.Plan{Steps: 1})
			srv.NoMetadata = tc.noMetadata
			interruptAt(t, dir, srv, "upload", nil) // the train file is stored, its id unknown
			interruptAt(t, dir, srv, "upload", nil) // found; the validation file is stored
			interruptAt(t, dir, srv, "create", nil) // both found; the job is created
			if n := len(srv.Jobs()); n != 1 {
				t.Fatalf("%d jobs after the interrupted runs, want 1", n)
			}
			var prog syncBuffer
			var log bytes.Buffer
			rec, err := finetune.Train(t.Context(), options(dir, srv, "", &prog, &log))
			if err != nil || rec.Status != pipeline.JobSucceeded {
				t.Fatalf("resume: %v, %+v\n%s", err, rec, prog.String())
			}
			if !strings.Contains(prog.String(), "found fine-tuning job "+srv.Jobs()[0].ID) {
				t.Errorf("the re-run did not find the job:\n%s", prog.String())
			}
			if len(srv.Jobs()) != 1 || len(srv.Files()) != 2 {
				t.Fatalf("%d jobs and %d uploads, want 1 and 2", len(srv.Jobs()), len(srv.Files()))
			}
			if rec.JobID != srv.Jobs()[0].ID {
				t.Errorf("recorded job %s, the service has %s", rec.JobID, srv.Jobs()[0].ID)
			}
			md, _ := srv.Jobs()[0].Request["metadata"].(map[string]any)
			if md["reactgen_intent"] != rec.Intent || rec.Intent == "" {
				t.Errorf("job metadata %v, intent %q", md, rec.Intent)
			}
			if m := readManifest(t, dir); len(m.Training) != 1 {
				t.Errorf("manifest has %d training records, want 1", len(m.Training))
			}
		})
	}
}

// TestTrainOtherJobNotAccepted: a service that reports the created job (and the job
// when attached) as training another file is refused, not recorded as this run's.
func TestTrainOtherJobNotAccepted(t *testing.T) {
	dir := newRun(t)
	srv := finetunetest.New(t, finetunetest.Plan{Steps: 1})
	srv.LieFile = "file-someone-else"
	var prog syncBuffer
	var log bytes.Buffer
	_, err := finetune.Train(t.Context(), options(dir, srv, "", &prog, &log))
	if err == nil || !strings.Contains(err.Error(), "file-someone-else") || !strings.Contains(err.Error(), "not accepted") {
		t.Fatalf("err = %v, want the job refused naming the other file", err)
	}
	if m := readManifest(t, dir); len(m.Training) != 1 || m.Training[0].JobID != "" {
		t.Fatalf("manifest records %+v, want no job id", m.Training)
	}
	// Attaching to a recorded job that the service now reports on another file.
	srv.LieFile = ""
	if _, err := finetune.Train(t.Context(), options(dir, srv, "", &prog, &log)); err != nil {
		t.Fatal(err)
	}
	srv.LieFile = "file-someone-else"
	if _, err := finetune.Train(t.Context(), options(dir, srv, "", &prog, &log)); err == nil || !strings.Contains(err.Error(), "not accepted") {
		t.Fatalf("attach err = %v, want the job refused", err)
	}
}

// TestTrainResumeWithoutJobList: a service with no job list cannot say whether the
// interrupted create went through; the re-run says so and creates.
func TestTrainResumeWithoutJobList(t *testing.T) {
	dir := newRun(t)
	srv := finetunetest.New(t, finetunetest.Plan{Steps: 1})
	srv.NoJobList = true
	interruptAt(t, dir, srv, "create", nil)
	var prog syncBuffer
	var log bytes.Buffer
	if _, err := finetune.Train(t.Context(), options(dir, srv, "", &prog, &log)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "lists no fine-tuning jobs") {
		t.Errorf("log lacks the warning:\n%s", log.String())
	}
	if len(srv.Files()) != 2 {
		t.Errorf("%d uploads, want 2", len(srv.Files()))
	}
}
