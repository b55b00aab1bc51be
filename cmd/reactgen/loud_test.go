package main

// Runs that used to fail quietly, or with a message that pointed the wrong way: config
// values the decoder got wrong, keys suggested from the wrong section, a misspelt
// REACTGEN_* variable, an empty API key, a budget that could not count.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

func TestConfigMistakesExitTwoNamingTheKey(t *testing.T) {
	srv := llmtest.NewServer(t, newFakeModel(t).handle)
	cases := []struct {
		name    string
		raw     string            // a config of its own, before the rest of the test config
		sets    []string          // --set flags
		env     map[string]string // REACTGEN_* variables
		want    []string
		notWant []string
	}{
		{name: "NaN temperature by --set", sets: []string{"llm.temperature=.nan"}, want: []string{"llm.temperature", "not a finite number"}},
		{name: "NaN temperature in the file", raw: "llm:\n  temperature: .nan\n", want: []string{"line 2", "llm.temperature", "not a finite number"}},
		{name: "infinite top_p from the environment", env: map[string]string{"REACTGEN_LLM_TOP_P": ".inf"}, want: []string{"REACTGEN_LLM_TOP_P", "llm.top_p", "not a finite number"}},
		{name: "integer overflow by --set", sets: []string{"generate.concurrency=99999999999999999999"}, want: []string{"generate.concurrency", "too large for an integer"}, notWant: []string{"-9223372036854775808"}},
		{name: "integer overflow in the file", raw: "generate:\n  attempts: 9223372036854775808\n", want: []string{"line 2", "generate.attempts", "too large for an integer"}, notWant: []string{"-9223372036854775808"}},
		{name: "a fraction for an integer", sets: []string{"generate.attempts=2.5"}, want: []string{"generate.attempts", "2.5 is not an integer"}},
		{name: "duplicate section", raw: "llm:\n  temperature: 0.5\ngenerate:\n  attempts: 2\nllm:\n  top_p: 0.9\n", want: []string{"line 5", "section llm: is given twice (first on line 1)"}},
		{name: "duplicate key", raw: "generate:\n  attempts: 2\n  attempts: 3\n", want: []string{"line 3", "key generate.attempts is given twice (first on line 2)"}},
		{name: "negative grace period", sets: []string{"run.grace_period=-5s"}, want: []string{"run.grace_period", "must not be negative", "-5s"}},
		{name: "negative timeout in the file", raw: "llm:\n  timeout: -1s\n", want: []string{"llm.timeout", "must not be negative"}},
		{name: "budget in dollars for an unpriced model", sets: []string{"llm.max_cost_usd=5"},
			want: []string{"llm.prices", `no price for model "fake-model"`, "llm.max_cost_usd"}},
		{name: "key in the wrong section", sets: []string{"generate.temprature=0.3"}, want: []string{"did you mean llm.temperature?"}, notWant: []string{"exemplars"}},
		{name: "singular of a list key", sets: []string{"export.format=[parquet]"}, want: []string{"did you mean export.formats?"}, notWant: []string{"task.format"}},
		{name: "unquoted colon by --set", sets: []string{"generate.instruction=Answer: briefly"},
			want: []string{"generate.instruction", "reads as a YAML mapping", `quote the value: --set 'generate.instruction="Answer: briefly"'`}, notWant: []string{"unconvertible", "map[string]interface"}},
		{name: "unquoted colon from the environment", env: map[string]string{"REACTGEN_EXPORT_SYSTEM": "Role: helper"},
			want: []string{"REACTGEN_EXPORT_SYSTEM", "export.system", "reads as a YAML mapping", "quote the value"}, notWant: []string{"unconvertible"}},
		{name: "unquoted colon in the file", raw: "generate:\n  instruction: Answer: briefly\n", want: []string{"line 2", `must be quoted, e.g. instruction: "Answer: briefly"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(t, dir, srv.URL, nil)
			if tc.raw != "" {
				// The case's lines first, so that its line numbers are the ones in want;
				// the model server comes from OPENAI_BASE_URL.
				cfg = filepath.Join(dir, "raw.yaml")
				body := tc.raw + "task:\n  path: " + mustAbs(t, demoTasks) + "\ncorpus:\n  path: " + mustAbs(t, demoCorpus) + "\n"
				if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL}
			for k, v := range tc.env {
				env[k] = v
			}
			args := []string{"run", "--config", cfg, "--out", filepath.Join(dir, "run")}
			for _, s := range tc.sets {
				args = append(args, "--set", s)
			}
			before := srv.Requests()
			res := invoke(t, "", env, args...)
			if res.code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", res.code, exitUsage, res.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(res.stderr, w) {
					t.Errorf("stderr holds %q:\n%s", w, res.stderr)
				}
			}
			if n := srv.Requests() - before; n != 0 {
				t.Errorf("the refused config sent %d requests", n)
			}
			if _, err := os.Stat(filepath.Join(dir, "run")); err == nil {
				t.Errorf("the refused config left a run directory")
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func TestBudgetInDollarsRunsWhenAPrefixPricesTheModel(t *testing.T) {
	srv := llmtest.NewServer(t, newFakeModel(t).handle)
	dir := t.TempDir()
	cfg := testConfig(t, dir, srv.URL, map[string]any{"task.limit": 4, "llm.max_cost_usd": 5,
		"llm.prices": map[string]any{"fake": map[string]any{"prompt": 1.0, "completion": 2.0}}})
	res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "k"}, "run", "--config", cfg, "--out", filepath.Join(dir, "run"))
	if res.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.stderr)
	}
	if m := readManifest(t, filepath.Join(dir, "run")); m.Stages["generate"].Counts["requests"] == 0 {
		t.Errorf("no requests were counted: %+v", m.Stages["generate"].Counts)
	}
}

func TestMisspeltEnvironmentVariableWarnsWithTheNearestKey(t *testing.T) {
	env := map[string]string{"REACTGEN_LLM_MODLE": "gpt-4o", "REACTGEN_GENRATE_CONCURRENCY": "4", "REACTGEN_GENERATE_ATTEMPTS": "2"}
	res := invoke(t, "", env, "config", "show", "--config", "../../configs/demo.yaml")
	if res.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.stderr)
	}
	for _, w := range []string{
		"REACTGEN_LLM_MODLE sets no config key and is ignored; did you mean REACTGEN_LLM_MODEL (llm.model)?",
		"REACTGEN_GENRATE_CONCURRENCY sets no config key and is ignored; did you mean REACTGEN_GENERATE_CONCURRENCY (generate.concurrency)?",
	} {
		if !strings.Contains(res.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
		}
	}
	if strings.Contains(res.stderr, "REACTGEN_GENERATE_ATTEMPTS") {
		t.Errorf("a valid variable was warned about:\n%s", res.stderr)
	}
	if !strings.Contains(res.stdout, "attempts: 2") {
		t.Errorf("REACTGEN_GENERATE_ATTEMPTS was not applied:\n%s", res.stdout)
	}
}

func TestEmptyAPIKeyIsNamedWhenTheServerAnswers401(t *testing.T) {
	srv := llmtest.NewServer(t, func(_ context.Context, r llmtest.Req) llmtest.Reply {
		if r.Header.Get("Authorization") == "Bearer sk-good" {
			return llmtest.Reply{Texts: []string{"Action: Finish[x]"}}
		}
		return llmtest.Reply{Fault: llmtest.FaultUnauthorized}
	})
	dir := t.TempDir()
	cfg := testConfig(t, dir, srv.URL, map[string]any{"task.limit": 4, "generate.concurrency": 1})
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unset", nil, "the API key is read from the environment variable OPENAI_API_KEY, which is empty"},
		{"empty", map[string]string{"OPENAI_API_KEY": ""}, "the API key is read from the environment variable OPENAI_API_KEY, which is empty"},
		{"refused", map[string]string{"OPENAI_API_KEY": "sk-bad"}, "the server refused the API key in the environment variable OPENAI_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := invoke(t, "", tc.env, "run", "--config", cfg, "--out", filepath.Join(dir, tc.name))
			if res.code != exitFailure {
				t.Fatalf("exit %d, want %d; stderr:\n%s", res.code, exitFailure, res.stderr)
			}
			if !strings.Contains(res.stderr, tc.want) || !strings.Contains(res.stderr, "401") {
				t.Errorf("stderr lacks %q:\n%s", tc.want, res.stderr)
			}
			if strings.Contains(res.stderr, "sk-bad") {
				t.Errorf("stderr holds the key:\n%s", res.stderr)
			}
		})
	}
}
