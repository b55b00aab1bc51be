package main

// Runs that used to fail quietly, or with a message that pointed the wrong way: config
// values the decoder got wrong, keys suggested from the wrong section, a misspelt
// REACTGEN_* variable, an empty API key, a budget that could not count.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
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
		// A bare number is nanoseconds to the decoder: llm.timeout: 60 was 60 ns, 1e3 1 µs.
		{name: "duration without a unit in the file", raw: "llm:\n  timeout: 60\n", want: []string{"line 2", "llm.timeout", "60 has no unit", "60s"}},
		{name: "duration without a unit by --set", sets: []string{"llm.timeout=1e3"}, want: []string{"llm.timeout", "1000 has no unit", "1000s"}},
		{name: "duration without a unit from the environment", env: map[string]string{"REACTGEN_RUN_GRACE_PERIOD": "30"}, want: []string{"REACTGEN_RUN_GRACE_PERIOD", "run.grace_period", "30 has no unit", "30s"}},
		{name: "duration without a unit in a section", raw: "llm:\n  batch:\n    poll: 5\n", want: []string{"line 3", "llm.batch.poll", "5 has no unit"}},
		{name: "header value with CR LF in the file", raw: "llm:\n  headers:\n    api-key: \"abc\\r\\nX-Injected: 1\"\n", want: []string{"llm.headers.api-key", "line break", "line 2"}, notWant: []string{"abc"}},
		{name: "header name with a space", raw: "llm:\n  headers:\n    \"api key\": abc\n", want: []string{"llm.headers.api key", "not allowed in a header name"}},
		{name: "endpoint header with CR", raw: "llm:\n  endpoints:\n    - base_url: http://127.0.0.1:1/v1\n      headers: {api-key: \"a\\rb\"}\n", want: []string{"llm.endpoints[0].headers.api-key", "line break", "line 2"}},
		{name: "top_p over 1", sets: []string{"llm.top_p=5"}, want: []string{"llm.top_p", "must be in (0, 1], got 5"}},
		{name: "top_p 0", raw: "llm:\n  top_p: 0\n", want: []string{"llm.top_p", "(0, 1]", "line 2"}},
		{name: "temperature over 2", sets: []string{"llm.temperature=7"}, want: []string{"llm.temperature", "[0, 2]"}},
		{name: "sample temperature over 2", sets: []string{"generate.sample_temperature=3"}, want: []string{"generate.sample_temperature", "[0, 2]"}},
		{name: "min F1 over 1", sets: []string{"filter.min_f1=50"}, want: []string{"filter.min_f1", "[0, 1]"}},
		{name: "a second YAML document", raw: "llm:\n  temperature: 0.5\n---\nllm:\n  temperature: 0.9\n", want: []string{"line 4", "second YAML document", "---"}},
		{name: "a missing prompt file", sets: []string{"generate.exemplars=/nonexistent/prompts.json#webthink_simple6"}, want: []string{"generate.exemplars", "/nonexistent/prompts.json"}},
		{name: "a broken CoT prompt file", sets: []string{"generate.method=cot", "generate.cot_exemplars=" + brokenPromptFile}, want: []string{"generate.cot_exemplars", "unexpected end of JSON"}},
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
			res.wantExit(t, exitUsage, tc.want...)
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

// brokenPromptFile is a prompt file of the paper's form cut short.
var brokenPromptFile = func() string {
	f, err := os.CreateTemp("", "reactgen-prompt-*.json")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	f.WriteString(`{"cotqa_simple6": "Question`)
	return f.Name() + "#cotqa_simple6"
}()

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
	env := map[string]string{"REACTGEN_LLM_TEMPERATUR": "0.5", "REACTGEN_GENRATE_CONCURRENCY": "4", "REACTGEN_GENERATE_ATTEMPTS": "2"}
	res := invoke(t, "", env, "config", "show", "--config", "../../configs/demo.yaml")
	if res.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.stderr)
	}
	for _, w := range []string{
		"REACTGEN_LLM_TEMPERATUR sets no config key and is ignored; did you mean REACTGEN_LLM_TEMPERATURE (llm.temperature)?",
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

// unreachableMediaWiki is the api.php URL of a port on 127.0.0.1 that nothing listens on.
func unreachableMediaWiki(t *testing.T) string {
	t.Helper()
	return "http://" + llmtest.FreeAddr(t) + "/w/api.php"
}

func mediawikiSets(url string, more map[string]any) map[string]any {
	sets := map[string]any{"env.backend": "mediawiki", "env.mediawiki_url": url, "env.requests_per_second": 0,
		"corpus.path": nil, "llm.max_retries": 0, "task.limit": 40}
	for k, v := range more {
		sets[k] = v
	}
	return sets
}

func TestDeadEnvironmentStopsTheRunBeforeMoreRequestsArePaid(t *testing.T) {
	for _, tc := range []struct {
		name             string
		limit, inFlight  int
		wantMaxRequests  int64
		wantExactRequest bool
	}{
		{name: "one episode at a time", limit: 3, inFlight: 1, wantMaxRequests: 3, wantExactRequest: true},
		{name: "the default limit, eight in flight", limit: 0, inFlight: 8, wantMaxRequests: 5 + 8 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, newFakeModel(t).handle)
			dir := t.TempDir()
			more := map[string]any{"generate.concurrency": tc.inFlight}
			if tc.limit > 0 {
				more["env.max_consecutive_failures"] = tc.limit
			}
			cfg := testConfig(t, dir, srv.URL, mediawikiSets(unreachableMediaWiki(t), more))
			out := filepath.Join(dir, "run")
			res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "k"}, "run", "--config", cfg, "--out", out)
			limit := tc.limit
			if limit == 0 {
				limit = pipeline.Default().Env.MaxConsecutiveFailures
			}
			res.wantExit(t, exitFailure, fmt.Sprintf("failed %d steps in a row (env.max_consecutive_failures)", limit),
				"before paying for more requests", "connection refused")
			n := srv.Requests()
			if n > tc.wantMaxRequests || tc.wantExactRequest && n != tc.wantMaxRequests {
				t.Errorf("the model got %d requests for 40 questions, want at most %d", n, tc.wantMaxRequests)
			}
			t.Logf("%d requests paid before the run stopped", n)
			m := readManifest(t, out)
			if st := m.Stages["generate"]; st.Status != "failed" || st.Counts["errored"] == 0 {
				t.Errorf("generate stage: %+v, want failed with errored episodes counted", st)
			}
			if _, ok := m.Stages["filter"]; ok {
				t.Errorf("the filter ran after the environment went down")
			}
		})
	}
}

// runWithNullReplies runs `reactgen run` over the demo world (task.limit limit, 0 for
// all) against the fake model, which answers null (a reply with no choices) to every
// request after a question's first step that null picks.
func runWithNullReplies(t *testing.T, limit int, null func(m *fakeModel, r llmtest.Req) bool) result {
	t.Helper()
	m := newFakeModel(t)
	m.fault = func(_ int64, r llmtest.Req) (llmtest.Reply, bool) {
		if strings.Contains(r.Messages[len(r.Messages)-1].Content, "Observation") && null(m, r) {
			return llmtest.Reply{Body: "null"}, true
		}
		return llmtest.Reply{}, false
	}
	srv := llmtest.NewServer(t, m.handle)
	dir := t.TempDir()
	cfg := testConfig(t, dir, srv.URL, map[string]any{"task.limit": limit})
	return invoke(t, "", map[string]string{"OPENAI_API_KEY": "k"}, "run", "--config", cfg, "--out", filepath.Join(dir, "run"))
}

func TestRunWhoseEveryEpisodeErroredExitsOneWithTheCause(t *testing.T) {
	t.Run("environment unreachable, no failure limit", func(t *testing.T) {
		srv := llmtest.NewServer(t, newFakeModel(t).handle)
		dir := t.TempDir()
		cfg := testConfig(t, dir, srv.URL, mediawikiSets(unreachableMediaWiki(t), map[string]any{
			"task.limit": 6, "env.max_consecutive_failures": 0, "generate.concurrency": 2}))
		res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "k"}, "run", "--config", cfg, "--out", filepath.Join(dir, "run"))
		res.wantExit(t, exitFailure, "all 6 episodes of this run ended with an error", "connection refused")
	})
	t.Run("every reply after the first step is null", func(t *testing.T) {
		res := runWithNullReplies(t, 5, func(*fakeModel, llmtest.Req) bool { return true })
		res.wantExit(t, exitFailure, "all 5 episodes of this run ended with an error", "server returned a reply with no choices")
	})
	t.Run("some episodes errored: exit 0 with a warning", func(t *testing.T) {
		res := runWithNullReplies(t, 0, func(m *fakeModel, r llmtest.Req) bool {
			var bad string
			for q := range m.answers {
				bad = max(bad, q) // one question, the same every run
			}
			return strings.Contains(r.Messages[1].Content, bad)
		})
		if res.code != 0 {
			t.Fatalf("exit %d, want 0; stderr:\n%s", res.code, res.stderr)
		}
		if !strings.Contains(res.stderr, "episodes ended with an error") || !strings.Contains(res.stderr, "errored=1") {
			t.Errorf("stderr does not warn of the errored episode:\n%s", res.stderr)
		}
	})
}

func TestExportOfNothingExitsOneWithTheCause(t *testing.T) {
	wrong := newFakeModel(t)
	wrong.fault = func(_ int64, r llmtest.Req) (llmtest.Reply, bool) {
		text := wrong.text(r)
		if i := strings.Index(text, "Finish["); i >= 0 {
			return llmtest.Reply{Texts: []string{text[:i] + "Finish[nobody]"}}, true
		}
		return llmtest.Reply{}, false
	}
	srv := llmtest.NewServer(t, wrong.handle)
	env := map[string]string{"OPENAI_API_KEY": "k"}

	dir := t.TempDir()
	cfg := testConfig(t, dir, srv.URL, map[string]any{"task.limit": 6})
	out := filepath.Join(dir, "run")
	res := invoke(t, "", env, "run", "--config", cfg, "--out", out)
	if res.code != exitFailure {
		t.Fatalf("run: exit %d, want %d; stderr:\n%s", res.code, exitFailure, res.stderr)
	}
	want := "nothing to export: the filter kept 0 of 6 episodes (rejected for correct/wrong_answer 6)"
	if !strings.Contains(res.stderr, want) {
		t.Errorf("run: stderr lacks %q:\n%s", want, res.stderr)
	}
	if st := readManifest(t, out).Stages["export"]; st == nil || st.Status != "failed" {
		t.Errorf("export stage: %+v, want failed", st)
	}
	res = invoke(t, "", env, "export", "--out", out)
	if res.code != exitFailure || !strings.Contains(res.stderr, want) {
		t.Errorf("export: exit %d, want %d with %q; stderr:\n%s", res.code, exitFailure, want, res.stderr)
	}

	// Kept episodes that all stay out of the examples are nothing, too, and the export
	// that was there stays.
	good := llmtest.NewServer(t, newFakeModel(t).handle)
	dir = t.TempDir()
	cfg = testConfig(t, dir, good.URL, map[string]any{"task.limit": 6})
	out = filepath.Join(dir, "run")
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("good run: exit %d; stderr:\n%s", res.code, res.stderr)
	}
	before := snapshot(t, filepath.Join(out, pipeline.ExportDir))
	outputs := readManifest(t, out).Outputs
	res = invoke(t, "", env, "export", "--out", out, "--set", "export.max_tokens=1")
	if res.code != exitFailure || !strings.Contains(res.stderr, "nothing to export: none of the") || !strings.Contains(res.stderr, "max_tokens") {
		t.Errorf("export.max_tokens 1: exit %d, want %d naming max_tokens; stderr:\n%s", res.code, exitFailure, res.stderr)
	}
	sameSnapshot(t, "the previous export", before, snapshot(t, filepath.Join(out, pipeline.ExportDir)))
	if after := readManifest(t, out).Outputs; len(after) != len(outputs) {
		t.Errorf("the manifest lists %d outputs after the failed export, %d before", len(after), len(outputs))
	}
}

func TestExpertWithoutTheGoldPagesAnswersNothing(t *testing.T) {
	dir := t.TempDir()
	// The demo questions over a corpus that holds none of their pages.
	writeLines(t, filepath.Join(dir, "corpus.jsonl"), tinyCorpus...)
	cfg := testConfig(t, dir, "http://127.0.0.1:1/v1", map[string]any{"generate.policy": "expert", "task.limit": 5,
		"corpus.path": filepath.Join(dir, "corpus.jsonl")})
	out := filepath.Join(dir, "run")
	res := invoke(t, "", nil, "run", "--config", cfg, "--out", out)
	if res.code != exitFailure {
		t.Fatalf("exit %d, want %d; stderr:\n%s", res.code, exitFailure, res.stderr)
	}
	if !strings.Contains(res.stderr, "all 5 episodes of this run ended with an error") || !strings.Contains(res.stderr, "is not in the corpus") {
		t.Errorf("stderr does not say why:\n%s", res.stderr)
	}
	for _, ep := range logLines(t, filepath.Join(out, pipeline.EpisodesFile)) {
		if ep.Correct || ep.Finished {
			t.Errorf("episode %s: finished %v correct %v with no gold page in the corpus", ep.ID, ep.Finished, ep.Correct)
		}
	}
}
