package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
	"github.com/reactgen/reactgen/pipeline/config"
)

func noEnv(string) string { return "" }

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const minimalConfig = `
task:
  name: hotpotqa
  path: questions.json
corpus:
  path: corpus.jsonl
generate:
  policy: expert
`

func TestEveryShippedConfigLoads(t *testing.T) {
	files, err := filepath.Glob("../../configs/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("configs: got %d files (%v), want at least 3", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ld, err := testLoad(f, nil, noEnv)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			// The files say ../data/...: resolved against configs/, that is ../../data/... from here.
			if pipeline.GameTask(ld.Config.Task.Name) {
				// A game has no task file; its prompt file is the path it names.
				if !strings.HasPrefix(ld.Config.Generate.Exemplars, "../../data/") {
					t.Errorf("generate.exemplars %q was not resolved relative to the config file", ld.Config.Generate.Exemplars)
				}
				return
			}
			if !strings.HasPrefix(ld.Config.Task.Path, "../../data/") {
				t.Errorf("task.path %q was not resolved relative to the config file", ld.Config.Task.Path)
			}
		})
	}
}

func TestPaperConfigs(t *testing.T) {
	ld, err := testLoad("../../configs/hotpotqa-react.yaml", nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	c := ld.Config
	if c.Generate.Method != "react" || c.Generate.NumExemplars != 6 || c.Generate.MaxStepsFor(c.Task.Name) != 7 ||
		c.LLM.Temperature != 0 || c.Generate.TargetCorrect != 3000 {
		t.Errorf("hotpotqa-react.yaml is not the paper's setup: %+v", c.Generate)
	}
	ld, err = testLoad("../../configs/fever-react.yaml", nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c := ld.Config; c.Generate.NumExemplars != 3 || c.Generate.MaxStepsFor(c.Task.Name) != 5 {
		t.Errorf("fever-react.yaml is not the paper's setup: %+v", c.Generate)
	}
	// The notebooks' games: completions, greedy, max_tokens 100, 49 and 14 actions, the
	// server's games in order.
	for file, steps := range map[string]int{"alfworld-react.yaml": 49, "webshop-react.yaml": 14} {
		ld, err = testLoad("../../configs/"+file, nil, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		c := ld.Config
		if c.Generate.Method != "react" || c.Generate.Format != "completion" || c.Generate.MaxStepsFor(c.Task.Name) != steps ||
			c.LLM.Temperature != 0 || c.LLM.RequestMaxTokens != 100 || c.Generate.Shuffle || c.Env.URL == "" || c.Task.Limit < 1 {
			t.Errorf("%s is not the notebook's setup: %+v %+v", file, c.Generate, c.Env)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		body string
		sets []string
		want []string
	}{
		{"unknown key", minimalConfig + "  concurency: 4\n", nil, []string{"line 9", "generate.concurency", "did you mean generate.concurrency"}},
		{"unknown section", minimalConfig + "genrate:\n  attempts: 2\n", nil, []string{"genrate.attempts", "did you mean generate.attempts"}},
		{"wrong type", minimalConfig + "  concurrency: lots\n", nil, []string{"generate.concurrency", "line 9", "want integer"}},
		{"negative", minimalConfig + "  concurrency: -1\n", nil, []string{"generate.concurrency", "at least 1", "line 9"}},
		{"bad enum", minimalConfig + "  method: reakt\n", nil, []string{"generate.method", "not one of"}},
		{"bad yaml", "task: [\n", nil, []string{"not valid YAML"}},
		{"unknown --set", minimalConfig, []string{"llm.modell=x"}, []string{"llm.modell", "did you mean llm.model"}},
		{"--set without =", minimalConfig, []string{"llm.model"}, []string{"section.key=value"}},
		{"missing task path", "generate:\n  policy: expert\ncorpus:\n  path: c.jsonl\n", nil, []string{"task.path", "required"}},
		{"tools with cot", minimalConfig + "  format: tools\n  method: cot\n", nil, []string{"generate.format", "tools needs a method that acts", "use chat or completion"}},
		{"tools trained on text", minimalConfig + "  format: tools\n  prompting: trained\n  trained_format: openai-chat\n", nil, []string{"generate.trained_format", "openai-tools, hf-tools, sharegpt-tools"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.body)
			_, err := testLoad(path, tc.sets, noEnv)
			if err == nil {
				t.Fatal("got nil error")
			}
			if exitCode(err) != exitUsage {
				t.Errorf("exit code: got %d, want %d", exitCode(err), exitUsage)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tc.name != "bad yaml" && tc.name != "unknown --set" && tc.name != "--set without =" && !strings.Contains(err.Error(), path) &&
				!strings.Contains(err.Error(), "--set") && tc.name != "bad enum" && tc.name != "missing task path" {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// testLoad loads a config file with --set flags, as the stage commands do.
func testLoad(file string, sets []string, getenv func(string) string) (*config.Loaded, error) {
	return config.Load(config.Source{File: file, Sets: sets, Check: newRegistry().check}, getenv)
}
