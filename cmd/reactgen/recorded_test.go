package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// filter and export on an existing run, without --config, reuse the config the run's
// manifest recorded; --set applies on top, and the manifest then records what ran.
func TestStagesWithoutConfigReuseTheRecordedConfig(t *testing.T) {
	srv := llmtest.NewServer(t, tinyModel().handle)
	tmp := t.TempDir()
	env := map[string]string{"OPENAI_API_KEY": "k"}
	cfg := tinyConfig(t, filepath.Join(tmp, "cfg"), srv.URL, tinyTasks, tinyCorpus, map[string]any{
		"export.validation_fraction": 0.25, "filter.rules": []string{"finished", "correct", "dedupe"}})
	run := filepath.Join(tmp, "run")
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", run); res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	// The config file is gone: only the manifest knows the settings.
	if err := os.RemoveAll(filepath.Join(tmp, "cfg")); err != nil {
		t.Fatal(err)
	}
	sent := srv.Requests()

	res := invoke(t, "", nil, "export", "--out", run, "--set", "export.formats=[parquet]")
	if res.code != 0 {
		t.Fatalf("export without --config: exit %d: %s", res.code, res.stderr)
	}
	m := readManifest(t, run)
	var formats []string
	for _, o := range m.Outputs {
		if o.Stage == pipeline.StageExport && o.Format != "card" {
			formats = append(formats, o.Format)
		}
	}
	if slices.Contains(formats, "openai-chat") || !slices.Contains(formats, "parquet") {
		t.Errorf("export outputs: got formats %v, want parquet only", formats)
	}
	exp := m.Config["export"].(map[string]any)
	if exp["validation_fraction"] != 0.25 || !slices.Equal(toStrings(exp["formats"]), []string{"parquet"}) {
		t.Errorf("recorded export section: got %v, want the run's validation_fraction 0.25 and formats [parquet]", exp)
	}
	if card, _ := os.ReadFile(filepath.Join(run, pipeline.ExportDir, "README.md")); !strings.Contains(string(card), "fake-model") {
		t.Error("the card does not name the model of the recorded config")
	}

	res = invoke(t, "", nil, "filter", "--out", run, "--set", "filter.rules=[finished]")
	if res.code != 0 {
		t.Fatalf("filter without --config: exit %d: %s", res.code, res.stderr)
	}
	m, _ = pipeline.ReadManifest(run)
	if got := toStrings(m.Config["filter"].(map[string]any)["rules"]); !slices.Equal(got, []string{"finished"}) {
		t.Errorf("recorded filter rules: got %v, want [finished]", got)
	}
	if st := m.Stages[pipeline.StageFilter]; st == nil || st.Counts["in"] != len(tinyTasks) {
		t.Errorf("filter stage: got %+v, want every episode in", st)
	}
	if srv.Requests() != sent {
		t.Errorf("filter and export sent %d requests", srv.Requests()-sent)
	}

	// Without --config, the run directory must be one.
	for _, args := range [][]string{{"export", "--out", filepath.Join(tmp, "none")}, {"filter"}} {
		if res := invoke(t, "", nil, args...); res.code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, res.code, exitUsage, res.stderr)
		}
	}
}

func toStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
