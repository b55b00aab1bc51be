package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/data"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/filetest"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
	"github.com/reactgen/reactgen/pipeline/config"
)

// The paper configs sample as the notebooks did, and name the paper's prompt entries.
// With the paper's files at hand, the exemplars they load open every request with the
// notebook's bytes (the whole requests are compared in generate and generate/prompt).
func TestPaperConfigsSampleAsTheNotebooks(t *testing.T) {
	tests := []struct {
		config, file, key string
		steps             int
	}{
		{"hotpotqa-react.yaml", "prompts_naive.json", "webthink_simple6", 7},
		{"fever-react.yaml", "fever.json", "webthink_simple3", 5}, // the paper's 5; the notebook ran 7
	}
	for _, tc := range tests {
		t.Run(tc.config, func(t *testing.T) {
			ld, err := testLoad("../../configs/"+tc.config, nil, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			c := ld.Config
			if c.Generate.Format != "completion" || c.LLM.Temperature != 0 || c.LLM.RequestMaxTokens != 100 || len(c.LLM.Stop) != 0 ||
				c.LLM.TopP != 1 || c.Generate.MaxStepsFor(c.Task.Name) != tc.steps {
				t.Errorf("sampling: format %s temperature %v max_tokens %d stop %q top_p %v steps %d, want completion 0 100 [] 1 %d",
					c.Generate.Format, c.LLM.Temperature, c.LLM.RequestMaxTokens, c.LLM.Stop, c.LLM.TopP, c.Generate.MaxStepsFor(c.Task.Name), tc.steps)
			}
			if want := "react-prompts/" + tc.file + "#" + tc.key; !strings.HasSuffix(c.Generate.Exemplars, want) {
				t.Errorf("generate.exemplars: got %q, want …%s", c.Generate.Exemplars, want)
			}
			if _, ok := c.LLM.Prices[c.LLM.Model]; !ok && c.LLM.MaxCostUSD > 0 {
				t.Errorf("llm.max_cost_usd is set but %s has no price", c.LLM.Model)
			}
			file, ok := shareddata.Lookup("react-prompts/" + tc.file)
			if !ok {
				t.Skipf("shared data react-prompts/%s not present", tc.file)
			}
			c.Generate.Exemplars = file + "#" + tc.key
			c.Generate.Policy = "llm"
			set, _, _, err := prompt.Configured(c.Generate, c.Task.Name, data.FS)
			if err != nil {
				t.Fatal(err)
			}
			react, err := set.For(c.Generate.Method)
			if err != nil {
				t.Fatal(err)
			}
			l, err := prompt.NewLayout(react, c.Generate.Format)
			if err != nil {
				t.Fatal(err)
			}
			var entries map[string]string
			filetest.ReadJSON(t, file, &entries)
			want := entries[tc.key]
			if c.Task.Name == pipeline.TaskHotpotQA {
				want = prompt.NotebookInstruction + want
			}
			if l.Prefix() != want {
				t.Errorf("the prompt's opening is not the notebook's (%d bytes, want %d)", len(l.Prefix()), len(want))
			}
		})
	}
}

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

	load := func(ref string) (*config.Loaded, error) {
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
