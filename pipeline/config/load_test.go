package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

// minimalConfig ends in the generate section, so that a test may add its keys.
const minimalConfig = "task: {name: hotpotqa, path: questions.json}\ncorpus: {path: corpus.jsonl}\ngenerate:\n  policy: expert\n"

// loadYAML writes body as a config file in a new folder and loads it with the --set
// flags and the environment getenv reads; it returns what loaded and the file's path.
func loadYAML(t *testing.T, body string, sets []string, getenv func(string) string) (*Loaded, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ld, err := Load(Source{File: path, Sets: sets}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	return ld, path
}

func TestConfigPrecedence(t *testing.T) {
	env := map[string]string{"REACTGEN_GENERATE_CONCURRENCY": "5", "REACTGEN_GENERATE_ATTEMPTS": "4"}
	ld, path := loadYAML(t, minimalConfig+"  concurrency: 3\n  attempts: 2\n",
		[]string{"generate.attempts=6", "export.formats=[openai-chat, parquet]"}, func(k string) string { return env[k] })
	g := ld.Config.Generate
	if g.Concurrency != 5 {
		t.Errorf("environment over file: got concurrency %d, want 5", g.Concurrency)
	}
	if g.Attempts != 6 {
		t.Errorf("--set over environment: got attempts %d, want 6", g.Attempts)
	}
	if g.Seed != pipeline.Default().Generate.Seed {
		t.Errorf("default: got seed %d", g.Seed)
	}
	if got := strings.Join(ld.Config.Export.Formats, ","); got != "openai-chat,parquet" {
		t.Errorf("--set list: got %s", got)
	}
	if want := filepath.Join(filepath.Dir(path), "questions.json"); ld.Config.Task.Path != want {
		t.Errorf("task.path: got %s, want %s (relative to the config file)", ld.Config.Task.Path, want)
	}
	for key, want := range map[string]string{"generate.concurrency": "env", "generate.attempts": "flag", "task.path": "file"} {
		if got := ld.Source[key]; got != want {
			t.Errorf("source of %s: got %q, want %q", key, got, want)
		}
	}
}

func TestConfigBaseURL(t *testing.T) {
	ld, _ := loadYAML(t, minimalConfig, nil, func(k string) string {
		if k == "OPENAI_BASE_URL" {
			return "http://127.0.0.1:9/v1"
		}
		return ""
	})
	if ld.Config.LLM.BaseURL != "http://127.0.0.1:9/v1" {
		t.Errorf("OPENAI_BASE_URL not honoured: got %s", ld.Config.LLM.BaseURL)
	}
}

// TestCheckRuns: the check the command line hands in runs after the config's own, and
// its config error names where the key was set.
func TestCheckRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(minimalConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(cfg *pipeline.Config) error {
		return &pipeline.ConfigError{Key: "generate.policy", Message: "refused " + cfg.Generate.Policy}
	}
	_, err := Load(Source{File: path, Check: check}, func(string) string { return "" })
	if err == nil || !pipeline.IsBadInput(err) || !strings.Contains(err.Error(), "refused expert") ||
		!strings.Contains(err.Error(), path+" line 4") {
		t.Errorf("got %v, want the check's usage error naming %s line 4", err, path)
	}
}

func TestEveryKeyDocumented(t *testing.T) {
	for _, k := range configKeys() {
		if keyDocs[k.Key] == "" {
			t.Errorf("config key %s has no description in keyDocs", k.Key)
		}
	}
	known := map[string]bool{}
	for _, k := range configKeys() {
		known[k.Key] = true
	}
	for k := range keyDocs {
		if !known[k] {
			t.Errorf("keyDocs describes %s, which is not a config key", k)
		}
	}
}
