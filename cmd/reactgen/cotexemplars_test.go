package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/data"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/pipeline"
)

// generate.cot_exemplars: checked against the method when the config loads, against the
// CoT prompt when the exemplars load, and part of the run's exemplar identity.
func TestCoTExemplarsKey(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "paper.json")
	body := `{"cot": "Question: Is Plim older than Plom?\nThought: Plim dates from 1820, Plom from 1790.\nAnswer: no\n",
	"qa": "Question: Is Plim older than Plom?\nAnswer: no\n"}`
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := testLoad(writeConfig(t, minimalConfig+"  cot_exemplars: paper.json#cot\n"), nil, noEnv)
	if err == nil || !strings.Contains(err.Error(), "generate.cot_exemplars") || !strings.Contains(err.Error(), "method react") {
		t.Errorf("cot_exemplars with method react: got %v, want an error naming the key and the method", err)
	}

	load := func(ref string) (*loaded, error) {
		t.Helper()
		return testLoad(writeConfig(t, minimalConfig), []string{"generate.method=react-cot-sc", "generate.policy=llm", "generate.cot_exemplars=" + ref}, noEnv)
	}
	ld, err := load(file + "#qa")
	if err != nil {
		t.Fatal(err)
	}
	var ce *pipeline.ConfigError
	if _, _, _, err := prompt.Configured(ld.Config.Generate, ld.Config.Task.Name, data.FS); !errors.As(err, &ce) || ce.Key != "generate.cot_exemplars" {
		t.Errorf("a Standard entry as CoT exemplars: got %v, want a config error on generate.cot_exemplars", err)
	}
	ld, err = load(file + "#cot")
	if err != nil {
		t.Fatal(err)
	}
	_, cot, withID, err := prompt.Configured(ld.Config.Generate, ld.Config.Task.Name, data.FS)
	if err != nil {
		t.Fatal(err)
	}
	if cot == nil || len(cot.Exemplars) != 1 || cot.Text == "" {
		t.Fatalf("CoT set: got %+v, want the file's entry", cot)
	}
	ld.Config.Generate.CoTExemplars = ""
	if _, _, withoutID, err := prompt.Configured(ld.Config.Generate, ld.Config.Task.Name, data.FS); err != nil || withoutID == withID {
		t.Errorf("exemplar identity: %q with the CoT file, %q without (err %v), want them to differ", withID, withoutID, err)
	}
}
