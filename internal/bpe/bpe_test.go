package bpe

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// referenceCounts reads testdata/reference.counts.json: the o200k_base and cl100k_base
// counts of each reference text as js-tiktoken computed them (jscheck/tokens.mjs).
func referenceCounts(t *testing.T) map[string]map[string]int {
	t.Helper()
	data, err := os.ReadFile("testdata/reference.counts.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]map[string]int
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	return want
}

func referenceTexts(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("testdata/reference/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no reference texts: %v", err)
	}
	out := map[string]string{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = string(data)
	}
	return out
}

// TestReferenceCounts holds the embedded encodings to the counts an independent
// implementation (js-tiktoken) gives for the same texts.
func TestReferenceCounts(t *testing.T) {
	want := referenceCounts(t)
	texts := referenceTexts(t)
	if len(want) != len(texts) {
		t.Fatalf("reference.counts.json has %d texts, testdata/reference %d: regenerate it (see TestReferenceCountsLive)", len(want), len(texts))
	}
	for _, name := range Names {
		c, err := Open(name)
		if err != nil {
			t.Fatal(err)
		}
		for file, text := range texts {
			if got, w := c.Count(text), want[file][name]; got != w {
				t.Errorf("%s %s: got %d tokens, js-tiktoken counts %d", name, file, got, w)
			}
		}
	}
}

// TestReferenceCountsLive runs js-tiktoken itself (make jsdeps installs it) and checks that
// the committed counts are what it says today.
func TestReferenceCountsLive(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat("../../jscheck/node_modules/js-tiktoken"); err != nil {
		t.Skip("js-tiktoken is not installed: run make jsdeps")
	}
	paths, _ := filepath.Glob("testdata/reference/*.txt")
	out, err := exec.CommandContext(t.Context(), node, append([]string{"../../jscheck/tokens.mjs"}, paths...)...).Output()
	if err != nil {
		t.Fatalf("jscheck/tokens.mjs: %v", err)
	}
	var live map[string]map[string]int
	if err := json.Unmarshal(out, &live); err != nil {
		t.Fatal(err)
	}
	want := referenceCounts(t)
	for file, counts := range live {
		for name, n := range counts {
			if want[file][name] != n {
				t.Errorf("%s %s: js-tiktoken counts %d, reference.counts.json says %d", file, name, n, want[file][name])
			}
		}
	}
}

func TestOpen(t *testing.T) {
	for _, name := range []string{"", "o200k", "o200k_base"} {
		c, err := Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if c.Name() != "o200k_base" {
			t.Errorf("Open(%q).Name(): got %s, want o200k_base", name, c.Name())
		}
	}
	_, err := Open("o300k")
	if err == nil || !strings.Contains(err.Error(), "o200k_base, cl100k_base") {
		t.Errorf("Open(o300k): got %v, want an error listing the encodings", err)
	}
	_, err = Open(filepath.Join(t.TempDir(), "missing", "tokenizer.json"))
	if err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("Open(missing file): got %v, want an error naming the file", err)
	}
}
