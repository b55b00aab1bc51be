package pipeline

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fakeStage records that it ran and returns what it was told to.
type fakeStage struct {
	name   string
	ran    *[]string
	counts Counts
	status string // set through Run.SetStatus
	err    error
	skip   bool
}

func (s fakeStage) Name() string { return s.name }

func (s fakeStage) Run(_ context.Context, r *Run) (Counts, error) {
	*s.ran = append(*s.ran, s.name)
	if st := r.Manifest.Stages[s.name]; st == nil || st.Status != StatusRunning {
		return nil, errors.New("the stage is not recorded as running while it runs")
	}
	if s.status != "" {
		r.SetStatus(s.status)
	}
	return s.counts, s.err
}

// optionalStage is a fakeStage that may have nothing to do.
type optionalStage struct{ fakeStage }

func (s optionalStage) Needed(*Run) bool { return !s.skip }

func testSpec(dir string, results map[string]string) Spec {
	return Spec{Dir: dir, Command: "test", Mode: Resume, Version: "v-test",
		Config:  map[string]any{"filter": map[string]any{"min_f1": 0.5}, "generate": map[string]any{"method": "react"}},
		Results: results, Inputs: []Input{{Role: "task", Path: "tasks.jsonl", SHA256: "abc"}}}
}

func TestExecuteRunsStagesInOrderAndRecordsThem(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var ran []string
	stages := []Stage{
		fakeStage{name: StageExport, ran: &ran, counts: Counts{"examples": 3}},
		fakeStage{name: StageFilter, ran: &ran, counts: Counts{"kept": 3}},
		fakeStage{name: StageGenerate, ran: &ran, counts: Counts{"episodes": 4}, status: StatusBudget},
		optionalStage{fakeStage{name: StageIndex, ran: &ran, skip: true}},
	}
	r, err := Execute(t.Context(), testSpec(dir, map[string]string{"k": "1"}), stages...)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{StageGenerate, StageFilter, StageExport}; !slices.Equal(ran, want) {
		t.Errorf("stages ran in order %v, want %v", ran, want)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Schema != ManifestSchema || m.Version != "v-test" || m.RunID != RunID(map[string]string{"k": "1"}) || m.RunID != r.Manifest.RunID {
		t.Errorf("manifest: schema %d, version %q, run id %q (in memory %q)", m.Schema, m.Version, m.RunID, r.Manifest.RunID)
	}
	if _, ok := m.Stages[StageIndex]; ok {
		t.Error("a stage that was not needed left a record")
	}
	for name, want := range map[string]string{StageGenerate: StatusBudget, StageFilter: StatusDone, StageExport: StatusDone} {
		st := m.Stages[name]
		if st == nil || st.Status != want || st.Ended.IsZero() {
			t.Errorf("stage %s: got %+v, want status %s with an end", name, st, want)
		}
	}
	if m.Stages[StageFilter].Counts["kept"] != 3 {
		t.Errorf("filter counts: got %v", m.Stages[StageFilter].Counts)
	}
	if l, err := AcquireLock(dir, "second"); err != nil {
		t.Errorf("the lock is still held after Execute: %v", err)
	} else {
		l.Release()
	}

	// The same result keys resume.
	ran = nil
	if _, err := Execute(t.Context(), testSpec(dir, map[string]string{"k": "1"}), stages[1]); err != nil {
		t.Fatal(err)
	}
	if m, _ := ReadManifest(dir); m.Resumes != 1 {
		t.Errorf("resumes: got %d, want 1", m.Resumes)
	}
}

func TestExecuteRefusesAResumeThatWouldMixResults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var ran []string
	stage := fakeStage{name: StageGenerate, ran: &ran}
	if _, err := Execute(t.Context(), testSpec(dir, map[string]string{"llm.model": "a"}), stage); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	_, err := Execute(t.Context(), testSpec(dir, map[string]string{"llm.model": "b"}), stage)
	var re *ResumeError
	if !errors.As(err, &re) || len(re.Mismatches) != 1 || re.Mismatches[0] != (Mismatch{Key: "llm.model", Was: "a", Now: "b"}) {
		t.Fatalf("got %v, want a ResumeError naming llm.model", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, ManifestFile)); !bytes.Equal(before, after) {
		t.Error("a refused resume changed manifest.json")
	}
	if len(ran) != 1 {
		t.Errorf("a refused resume ran a stage: %v", ran)
	}

	spec := testSpec(dir, map[string]string{"llm.model": "b"})
	spec.ForceNew = true
	if _, err := Execute(t.Context(), spec, stage); err != nil {
		t.Fatal(err)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, "previous-*", ManifestFile))
	if m, _ := ReadManifest(dir); len(aside) != 1 || m.Results["llm.model"] != "b" || m.Resumes != 0 {
		t.Errorf("--force-new: moved aside %v, manifest %+v", aside, m)
	}
}

func TestExecuteBadInputOnANewRunLeavesNoManifest(t *testing.T) {
	var ran []string
	bad := fakeStage{name: StageIndex, ran: &ran, err: &ConfigError{Key: "corpus.path", Message: "holds no pages"}}
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Execute(t.Context(), testSpec(dir, nil), bad); !IsBadInput(err) {
		t.Fatalf("got %v, want the stage's ConfigError", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		t.Error("a new run whose stage found bad input left a manifest")
	}

	// On an existing run, the failure is recorded.
	if _, err := Execute(t.Context(), testSpec(dir, nil), fakeStage{name: StageGenerate, ran: &ran}); err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(t.Context(), testSpec(dir, nil), bad); !IsBadInput(err) {
		t.Fatalf("got %v, want the stage's ConfigError", err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st := m.Stages[StageIndex]; st == nil || st.Status != StatusFailed || st.Error != "config key corpus.path: holds no pages" {
		t.Errorf("index stage: got %+v, want failed with its error", st)
	}
}

func TestExecuteInterruptedStopsBeforeTheNextStage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var ran []string
	stages := []Stage{fakeStage{name: StageGenerate, ran: &ran, err: context.Canceled}, fakeStage{name: StageFilter, ran: &ran}}
	if _, err := Execute(t.Context(), testSpec(dir, nil), stages...); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	m, _ := ReadManifest(dir)
	if !slices.Equal(ran, []string{StageGenerate}) || m.Stages[StageGenerate].Status != StatusInterrupted {
		t.Errorf("ran %v, generate %+v", ran, m.Stages[StageGenerate])
	}
}

func TestExecuteOnAnExistingRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var ran []string
	filterStage := fakeStage{name: StageFilter, ran: &ran}
	spec := Spec{Dir: dir, Command: "filter", Mode: Existing, Config: map[string]any{"filter": map[string]any{"min_f1": 0.9}}}
	_, err := Execute(t.Context(), spec, filterStage)
	if !errors.Is(err, ErrNoRun) || !IsBadInput(err) {
		t.Fatalf("no run there: got %v, want ErrNoRun as bad input", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a refused stage created %s", dir)
	}
	if _, err := Execute(t.Context(), testSpec(dir, map[string]string{"k": "1"}), fakeStage{name: StageGenerate, ran: &ran}); err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(t.Context(), spec, filterStage); err != nil {
		t.Fatal(err)
	}
	m, _ := ReadManifest(dir)
	if m.Results["k"] != "1" || len(m.Inputs) != 1 {
		t.Errorf("an existing run's result keys or inputs changed: %v %v", m.Results, m.Inputs)
	}
	if f := m.Config["filter"].(map[string]any)["min_f1"]; f != 0.9 {
		t.Errorf("filter section: got min_f1 %v, want the new 0.9", f)
	}
	if g := m.Config["generate"].(map[string]any)["method"]; g != "react" {
		t.Errorf("generate section: got %v, want it kept as recorded", g)
	}

	newSpec := testSpec(dir, nil)
	newSpec.Mode = New
	if _, err := Execute(t.Context(), newSpec, filterStage); !IsBadInput(err) {
		t.Errorf("New on a run: got %v, want bad input", err)
	}
}

func TestReportGivesRowsOnlyForFilesThatHaveThem(t *testing.T) {
	dir := t.TempDir()
	r := &Run{Dir: RunDir{Path: dir}, Manifest: newManifest("r1")}
	r.Manifest.Outputs = []Output{
		{Path: "export/react/train.jsonl", Stage: StageExport, Format: "jsonl", Rows: 3, Bytes: 120},
		{Path: "export/README.md", Stage: StageExport, Format: "handoff", Bytes: 900},
		{Path: "export/dataset_card.md", Stage: StageExport, Format: "card", Bytes: 400},
	}
	var b bytes.Buffer
	r.Report(&b)
	want := "run r1 in " + dir + "\n" +
		"  jsonl: " + filepath.Join(dir, "export/react/train.jsonl") + " (3 rows, 120 bytes)\n" +
		"  handoff: " + filepath.Join(dir, "export/README.md") + " (900 bytes)\n" +
		"  card: " + filepath.Join(dir, "export/dataset_card.md") + "\n"
	if b.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", b.String(), want)
	}
}
