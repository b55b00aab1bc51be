package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline/config"
)

// TestRecordedConfigLoadsAgain round-trips every shipped config through what a run
// records (the manifest's JSON of Config.Redacted) and through `config show`'s YAML:
// both load again, and give the same config, every key (llm.headers aside, whose
// values the manifest hides and whose stages send no request). The paper configs'
// llm.prices once came back as Go field names (CachedPrompt), which the loader refused.
func TestRecordedConfigLoadsAgain(t *testing.T) {
	files, err := filepath.Glob("../../configs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			// Every kind of value: nested prices, endpoints, headers, durations, lists.
			sets := []string{"llm.headers.X-Tenant=acme", "llm.timeout=45s",
				"llm.prices.ft:gpt-4o-mini:acme::x1={prompt: 0.3, cached_prompt: 0.15, completion: 1.2}"}
			ld, err := testLoad(file, sets, noEnv)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			want := ld.Config.Redacted()
			delete(want["llm"].(map[string]any), "headers")

			b, err := json.Marshal(ld.Config.Redacted())
			if err != nil {
				t.Fatal(err)
			}
			var recorded map[string]any
			if err := json.Unmarshal(b, &recorded); err != nil {
				t.Fatal(err)
			}
			again, err := config.Load(config.Source{Recorded: recorded, Existing: true, Check: newRegistry().check}, noEnv)
			if err != nil {
				t.Fatalf("the recorded config does not load: %v", err)
			}
			got := again.Config.Redacted()
			delete(got["llm"].(map[string]any), "headers")
			if !reflect.DeepEqual(got, want) {
				gb, _ := json.Marshal(got)
				wb, _ := json.Marshal(want)
				t.Errorf("recorded config loads as\n%s\nwant\n%s", gb, wb)
			}

			res := invoke(t, "", nil, append([]string{"config", "show", "--config", file}, setFlags(sets)...)...)
			if res.code != 0 {
				t.Fatalf("config show: %s", res.stderr)
			}
			// config show prints paths as the command resolved them, relative to the
			// working directory: saved there, the file names the same files.
			fh, err := os.CreateTemp(".", "shown-*.yaml")
			if err != nil {
				t.Fatal(err)
			}
			shown := fh.Name()
			t.Cleanup(func() { os.Remove(shown) })
			if _, err := fh.WriteString(res.stdout); err != nil {
				t.Fatal(err)
			}
			fh.Close()
			back, err := testLoad(shown, []string{"llm.headers.X-Tenant=acme"}, noEnv)
			if err != nil {
				t.Fatalf("config show's output does not load: %v\n%s", err, res.stdout)
			}
			if g, w := back.Config.Redacted(), ld.Config.Redacted(); !reflect.DeepEqual(g, w) {
				gb, _ := json.Marshal(g)
				wb, _ := json.Marshal(w)
				t.Errorf("config show's output loads as\n%s\nwant\n%s", gb, wb)
			}
		})
	}
}

func setFlags(sets []string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, "--set", s)
	}
	return out
}

// TestUnpricedModelIsNeverFree runs a model that no price table names: the progress
// line, stats and the dataset card say "unpriced", never $0, and a model the built-in
// table prices (a fine-tuned gpt-4o-mini) gets a cost without llm.prices.
func TestUnpricedModelIsNeverFree(t *testing.T) {
	srv := llmtest.NewServer(t, newFakeModel(t).handle)
	dir := t.TempDir()
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	cfg := testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{"task.limit": 12, "generate.progress": "lines"})
	out := filepath.Join(dir, "local")
	res := invoke(t, "", env, "run", "--config", cfg, "--out", out)
	if res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "cost unpriced  per kept unpriced") || strings.Contains(res.stderr, "$0.0000") {
		t.Errorf("the progress line of an unpriced model:\n%s", res.stderr)
	}
	st := invoke(t, "", nil, "stats", "--run", out)
	if !regexp.MustCompile(`cost\s+unpriced \(per kept: unpriced\)`).MatchString(st.stdout) || strings.Contains(st.stdout, "$0.0000") {
		t.Errorf("stats of an unpriced model:\n%s", st.stdout)
	}
	card, err := os.ReadFile(filepath.Join(out, "export", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(card), "| cost (USD) | unpriced |") || !strings.Contains(string(card), "| unpriced calls |") {
		t.Errorf("the card of an unpriced model does not say so")
	}

	out = filepath.Join(dir, "ft")
	res = invoke(t, "", env, "run", "--config", cfg, "--out", out, "--set", "llm.model=ft:gpt-4o-mini-2024-07-18:acme::x1")
	if res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	st = invoke(t, "", nil, "stats", "--run", out)
	if strings.Contains(st.stdout, "unpriced") || !regexp.MustCompile(`cost\s+\$0\.\d*[1-9]`).MatchString(st.stdout) {
		t.Errorf("stats of a fine-tuned gpt-4o-mini with no llm.prices:\n%s", st.stdout)
	}
}
