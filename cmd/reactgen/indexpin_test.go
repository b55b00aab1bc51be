package main

// The index a run reads is pinned by its identity (the hash of its sources and build
// options): a resume over an index rebuilt from another corpus is refused, and a new run
// over an index older than its corpus rebuilds it instead of reading it.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

func TestResumeOverAnIndexRebuiltFromAnotherCorpusIsRefused(t *testing.T) {
	srv := llmtest.NewServer(t, tinyModel().handle)
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared-index")
	cfg := tinyConfig(t, dir, srv.URL, tinyTasks, tinyCorpus, map[string]any{
		"corpus.index": shared, "llm.max_requests": 2, "generate.concurrency": 1,
	})
	out := filepath.Join(dir, "run")
	env := map[string]string{"OPENAI_API_KEY": "k"}
	// Interrupted: the budget stops the run after two requests, resumably.
	if r := invoke(t, "", env, "generate", "--config", cfg, "--out", out); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	m := readManifest(t, out)
	if st := m.Stages[pipeline.StageGenerate]; st == nil || st.Status != pipeline.StatusBudget {
		t.Fatalf("first run: generate %+v, want stopped by the budget", st)
	}
	pinned := m.Results[pipeline.CorpusKey]

	// Someone rebuilds the shared index from a two-page corpus.
	other := writeLines(t, filepath.Join(dir, "other.jsonl"), tinyCorpus[2:]...)
	if r := invoke(t, "", nil, "index", "--force", "--corpus", other, "--out", shared); r.code != 0 {
		t.Fatalf("index --force: exit %d: %s", r.code, r.stderr)
	}
	info, err := index.ReadInfo(shared)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, out)
	r := invoke(t, "", env, "generate", "--config", cfg, "--out", out, "--set", "llm.max_requests=0")
	if r.code != exitUsage {
		t.Fatalf("resume over the rebuilt index: exit %d, want %d: %s", r.code, exitUsage, r.stderr)
	}
	for _, want := range []string{pinned, info.Identity, shared, "mix"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not name %q:\n%s", want, r.stderr)
		}
	}
	sameSnapshot(t, "the refused resume", before, snapshot(t, out))

	// Rebuilt from the run's corpus, the index is the pinned one again, and the run resumes.
	if r := invoke(t, "", nil, "index", "--force", "--corpus", filepath.Join(dir, "corpus.jsonl"), "--out", shared); r.code != 0 {
		t.Fatalf("index --force: exit %d: %s", r.code, r.stderr)
	}
	if r := invoke(t, "", env, "generate", "--config", cfg, "--out", out, "--set", "llm.max_requests=0"); r.code != 0 {
		t.Fatalf("resume over the pinned index: exit %d: %s", r.code, r.stderr)
	}
	if n := len(effective(logLines(t, filepath.Join(out, pipeline.EpisodesFile)))); n != len(tinyTasks) {
		t.Errorf("episodes after the resume: %d, want %d", n, len(tinyTasks))
	}
}

func TestNewRunRebuildsAnIndexOlderThanItsCorpus(t *testing.T) {
	srv := llmtest.NewServer(t, tinyModel().handle)
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared-index")
	cfg := tinyConfig(t, dir, srv.URL, tinyTasks, tinyCorpus, map[string]any{"corpus.index": shared})
	corpus := filepath.Join(dir, "corpus.jsonl")
	if r := invoke(t, "", nil, "index", "--corpus", corpus, "--out", shared); r.code != 0 {
		t.Fatalf("index: exit %d: %s", r.code, r.stderr)
	}
	old, err := index.ReadInfo(shared)
	if err != nil {
		t.Fatal(err)
	}
	// The corpus is edited after the index was built.
	writeLines(t, corpus, append(tinyCorpus, `{"title": "Harrow Fen", "text": "Harrow Fen is a marsh east of Morvenna."}`)...)

	out := filepath.Join(dir, "run")
	r := invoke(t, "", map[string]string{"OPENAI_API_KEY": "k"}, "generate", "--config", cfg, "--out", out)
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "rebuilding") {
		t.Errorf("the run does not say it rebuilt the stale index:\n%s", r.stderr)
	}
	info, err := index.ReadInfo(shared)
	if err != nil {
		t.Fatal(err)
	}
	m := readManifest(t, out)
	if info.Identity == old.Identity || info.Identity != m.Results[pipeline.CorpusKey] || info.Pages != int64(len(tinyCorpus)+1) {
		t.Errorf("index after the run: %s with %d pages; stale one %s; the run pinned %s", info.Identity, info.Pages, old.Identity, m.Results[pipeline.CorpusKey])
	}
	hashes := map[string]bool{}
	for _, in := range m.Inputs {
		if in.Role == "corpus" {
			hashes[in.SHA256] = true
		}
		if in.Role == "corpus-index" && in.SHA256 != info.Identity {
			t.Errorf("manifest pins the index as %s, it is %s", in.SHA256, info.Identity)
		}
	}
	if len(hashes) != 1 {
		t.Errorf("the manifest records %d corpus hashes, want 1: %+v", len(hashes), m.Inputs)
	}
	if st := m.Stages[pipeline.StageIndex]; st == nil || st.Status != pipeline.StatusDone {
		t.Errorf("index stage: %+v, want done", st)
	}
}
