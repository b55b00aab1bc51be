package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/pipeline"
)

// result is what one in-process invocation of reactgen produced.
type result struct {
	code           int
	stdout, stderr string
	err            error
}

// wantExit fails t unless the command exited with code and its standard error holds
// every one of words.
func (r result) wantExit(t *testing.T, code int, words ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, code, r.stderr)
	}
	for _, w := range words {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
}

// invoke runs reactgen's command line in-process, as main would.
func invoke(t *testing.T, stdin string, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	a := newApp(strings.NewReader(stdin), &out, &errb, getenv)
	a.environ = func() []string {
		var kv []string
		for k, v := range env {
			kv = append(kv, k+"="+v)
		}
		return kv
	}
	err := a.execute(t.Context(), args)
	if err != nil {
		errb.WriteString("reactgen: " + err.Error() + "\n")
	}
	return result{code: exitCode(err), stdout: out.String(), stderr: errb.String(), err: err}
}

var (
	demoOnce sync.Once
	demoDir  string
	demoRes  result
)

// demoRun runs the shipped demo config once for the whole test binary.
func demoRun(t *testing.T) (string, result) {
	t.Helper()
	demoOnce.Do(func() {
		dir, err := os.MkdirTemp("", "reactgen-demo-*")
		if err != nil {
			t.Fatal(err)
		}
		demoDir = filepath.Join(dir, "run")
		demoRes = invoke(t, "", nil, "run", "--config", "../../configs/demo.yaml", "--out", demoDir)
	})
	if demoRes.code != 0 {
		t.Fatalf("demo run failed (exit %d): %s", demoRes.code, demoRes.stderr)
	}
	return demoDir, demoRes
}

func TestMain(m *testing.M) {
	if at := os.Getenv("REACTGEN_TEST_KILL_AT"); at != "" {
		os.Exit(killedAt(at)) // the test binary as a reactgen process that kills itself mid-commit
	}
	code := m.Run()
	removeTestBinary()
	if demoDir != "" {
		os.RemoveAll(filepath.Dir(demoDir))
	}
	os.Exit(code)
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

func TestDemoRunEndToEnd(t *testing.T) {
	dir, res := demoRun(t)
	if n := countLines(t, filepath.Join(dir, pipeline.EpisodesFile)); n < 200 {
		t.Errorf("episodes: got %d, want at least 200", n)
	}
	kept := countLines(t, filepath.Join(dir, pipeline.KeptFile))
	if kept < 200 {
		t.Errorf("kept: got %d, want at least 200 (the expert answers every demo question)", kept)
	}
	m := readManifest(t, dir)
	roles := map[string]bool{}
	for _, in := range m.Inputs {
		if in.SHA256 == "" {
			t.Errorf("input %s %s has no sha256", in.Role, in.Path)
		}
		roles[in.Role] = true
	}
	for _, r := range []string{"task", "corpus", "corpus-index"} {
		if !roles[r] {
			t.Errorf("manifest inputs lack %s: %+v", r, m.Inputs)
		}
	}
	for _, s := range []string{"index", "generate", "filter", "export"} {
		if st := m.Stages[s]; st == nil || st.Status != "done" {
			t.Errorf("stage %s: got %+v, want done", s, st)
		}
	}
	formats := map[string]bool{}
	for _, o := range m.Outputs {
		formats[o.Format] = true
		n, sum, err := atomicfile.Digest(filepath.Join(dir, o.Path))
		if err != nil || n != o.Bytes || sum != o.SHA256 {
			t.Errorf("output %s: manifest says %d bytes %s, file has %d %s (%v)", o.Path, o.Bytes, o.SHA256, n, sum, err)
		}
	}
	for _, f := range []string{"openai-chat", "arrow-file"} {
		if !formats[f] {
			t.Errorf("no %s export in the manifest", f)
		}
	}
	if !strings.Contains(res.stdout, filepath.Join(dir, "export")) {
		t.Errorf("run did not print where the exports are:\n%s", res.stdout)
	}
	b, _ := os.ReadFile(filepath.Join(dir, pipeline.ManifestFile))
	if !json.Valid(b) {
		t.Error("manifest.json is not valid JSON")
	}
}

func TestDemoRunAgainChangesNothing(t *testing.T) {
	dir, _ := demoRun(t)
	before, _ := pipeline.ReadManifest(dir)
	episodes := countLines(t, filepath.Join(dir, pipeline.EpisodesFile))
	res := invoke(t, "", nil, "run", "--config", "../../configs/demo.yaml", "--out", dir)
	if res.code != 0 {
		t.Fatalf("second run: exit %d: %s", res.code, res.stderr)
	}
	after, _ := pipeline.ReadManifest(dir)
	if got := countLines(t, filepath.Join(dir, pipeline.EpisodesFile)); got != episodes {
		t.Errorf("episodes after resume: got %d, want %d", got, episodes)
	}
	sums := map[string]string{}
	for _, o := range before.Outputs {
		sums[o.Path] = o.SHA256
	}
	for _, o := range after.Outputs {
		if sums[o.Path] != o.SHA256 {
			t.Errorf("output %s changed on resume", o.Path)
		}
	}
	if len(after.Outputs) != len(before.Outputs) {
		t.Errorf("outputs: got %d, want %d", len(after.Outputs), len(before.Outputs))
	}
	if after.Resumes != before.Resumes+1 {
		t.Errorf("resumes: got %d, want %d", after.Resumes, before.Resumes+1)
	}
}

func TestResumeRefusesChangedSettings(t *testing.T) {
	dir, _ := demoRun(t)
	before, _ := os.ReadFile(filepath.Join(dir, pipeline.ManifestFile))
	res := invoke(t, "", nil, "run", "--config", "../../configs/demo.yaml", "--out", dir, "--set", "generate.method=act")
	res.wantExit(t, exitUsage, "generate.method", `was "react", now "act"`, "--force-new")
	after, _ := os.ReadFile(filepath.Join(dir, pipeline.ManifestFile))
	if !bytes.Equal(before, after) {
		t.Error("a refused resume changed manifest.json")
	}
}

func TestBadInputExitsTwoAndWritesNothing(t *testing.T) {
	dir, _ := demoRun(t)
	before, _ := os.ReadFile(filepath.Join(dir, pipeline.ManifestFile))
	tmp := t.TempDir()
	badTask := filepath.Join(tmp, "bad.jsonl")
	os.WriteFile(badTask, []byte("{\"id\": 1, \"claim\": \"A\", \"label\": \"SUPPORTS\"}\n{not json\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"missing config", []string{"run", "--config", filepath.Join(tmp, "nope.yaml"), "--out", dir}, []string{"nope.yaml"}},
		{"missing task file", []string{"run", "--config", "../../configs/demo.yaml", "--out", dir, "--set", "task.path=" + filepath.Join(tmp, "none.json")}, []string{"task.path", "none.json"}},
		{"missing corpus", []string{"run", "--config", "../../configs/demo.yaml", "--out", filepath.Join(tmp, "r2"), "--set", "corpus.path=" + filepath.Join(tmp, "none.jsonl")}, []string{"corpus.path", "none.jsonl"}},
		{"malformed task file", []string{"run", "--config", "../../configs/demo-fever.yaml", "--out", filepath.Join(tmp, "r3"), "--set", "task.path=" + badTask}, []string{"bad.jsonl", "line 2"}},
		{"unknown flag", []string{"run", "--confg", "x"}, []string{"unknown flag"}},
		{"stage without run", []string{"filter", "--config", "../../configs/demo.yaml", "--out", filepath.Join(tmp, "none")}, []string{"not a run directory"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := invoke(t, "", nil, tc.args...)
			res.wantExit(t, exitUsage, tc.want...)
		})
	}
	after, _ := os.ReadFile(filepath.Join(dir, pipeline.ManifestFile))
	if !bytes.Equal(before, after) {
		t.Error("a failed start changed the existing run's manifest.json")
	}
}

func TestLockedRunDirectory(t *testing.T) {
	dir := t.TempDir()
	l, err := pipeline.AcquireLock(dir, "test holder")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	res := invoke(t, "", nil, "run", "--config", "../../configs/demo.yaml", "--out", dir)
	if res.code != exitUsage || !strings.Contains(res.stderr, "in use by pid") || !strings.Contains(res.stderr, "test holder") {
		t.Errorf("got exit %d, stderr %s; want 2 naming the holder", res.code, res.stderr)
	}
}

func TestStatsAndInspect(t *testing.T) {
	dir, _ := demoRun(t)
	res := invoke(t, "", nil, "stats", "--run", dir, "--json")
	if res.code != 0 {
		t.Fatalf("stats: %s", res.stderr)
	}
	var s pipeline.Summary
	if err := json.Unmarshal([]byte(res.stdout), &s); err != nil {
		t.Fatalf("stats --json: %v", err)
	}
	if s.Episodes < 200 || s.Kept == 0 || s.SuccessRate <= 0 || s.StopReasons["finished"] == 0 {
		t.Errorf("stats: %+v", s)
	}
	res = invoke(t, "", nil, "stats", "--run", dir)
	if !strings.Contains(res.stdout, "success") && !strings.Contains(res.stdout, "correct") {
		t.Errorf("stats text: %s", res.stdout)
	}
	res = invoke(t, "", nil, "inspect", "--run", dir, "--limit", "1")
	for _, w := range []string{"Thought 1:", "Action 1: Search[", "Observation 1:", "gold"} {
		if !strings.Contains(res.stdout, w) {
			t.Errorf("inspect output lacks %q:\n%s", w, res.stdout)
		}
	}
}

func TestConfigShowAndKeys(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-canary-config-show"}
	res := invoke(t, "", env, "config", "show", "--config", "../../configs/hotpotqa-react.yaml", "--set", "llm.model=gpt-4o-2024-08-06")
	if res.code != 0 {
		t.Fatalf("config show: %s", res.stderr)
	}
	if !strings.Contains(res.stdout, "model: gpt-4o-2024-08-06") || strings.Contains(res.stdout, "sk-canary") {
		t.Errorf("config show:\n%s", res.stdout)
	}
	res = invoke(t, "", nil, "config", "keys")
	for _, w := range []string{"generate.target_correct", "3000", "llm.api_key_env", "OPENAI_API_KEY"} {
		if !strings.Contains(res.stdout, w) {
			t.Errorf("config keys lacks %q", w)
		}
	}
}

func TestEnvCommand(t *testing.T) {
	dir, _ := demoRun(t)
	title := firstTitle(t)
	in := "Search[" + title + "]\nLookup[the]\nSearch[Zzyzx Qwerty Nonesuch]\nDance[x]\nFinish[The Answer.]\n"
	res := invoke(t, in, nil, "env", "--index", filepath.Join(dir, "index"), "--gold", "an answer")
	if res.code != 0 {
		t.Fatalf("env: %s", res.stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 5 {
		t.Fatalf("env: got %d lines, want 5:\n%s", len(lines), res.stdout)
	}
	var last struct {
		Action      string `json:"action"`
		Observation string `json:"observation"`
		Done        bool   `json:"done"`
	}
	json.Unmarshal([]byte(lines[2]), &last)
	if !strings.HasPrefix(last.Observation, "Could not find Zzyzx Qwerty Nonesuch. Similar: [") {
		t.Errorf("miss: got %q", last.Observation)
	}
	json.Unmarshal([]byte(lines[3]), &last)
	if last.Observation != "Invalid action: dance[x]" {
		t.Errorf("invalid: got %q, want %q", last.Observation, "Invalid action: dance[x]")
	}
	json.Unmarshal([]byte(lines[4]), &last)
	if !last.Done || last.Observation != "Episode finished, reward = 1\n" {
		t.Errorf("finish: got %+v, want done with reward 1", last)
	}

	// Rules observations and lenient actions, and actions given as JSON strings.
	in = `"search[` + title + `] please"` + "\n" + `"Search[Zzyzx Qwerty Nonesuch]"` + "\n"
	res = invoke(t, in, nil, "env", "--index", filepath.Join(dir, "index"), "--observations", "rules", "--actions", "lenient", "--json")
	if res.code != 0 {
		t.Fatalf("env --observations rules: %s", res.stderr)
	}
	lines = strings.Split(strings.TrimSpace(res.stdout), "\n")
	json.Unmarshal([]byte(lines[0]), &last)
	if last.Action != "Search["+title+"]" || strings.HasPrefix(last.Observation, "Invalid") {
		t.Errorf("lenient search: got %+v", last)
	}
	json.Unmarshal([]byte(lines[1]), &last)
	if !strings.HasPrefix(last.Observation, "Could not find [Zzyzx Qwerty Nonesuch]. Similar: [") {
		t.Errorf("rules miss: got %q", last.Observation)
	}
	if res := invoke(t, "", nil, "env", "--index", filepath.Join(dir, "index"), "--observations", "exact"); res.code != 2 || !strings.Contains(res.stderr, "--observations") {
		t.Errorf("--observations exact: exit %d, stderr %q; want exit 2 naming the flag", res.code, res.stderr)
	}
}

// firstTitle is the title of the demo corpus's first page.
func firstTitle(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../data/demo/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Title string }
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if err := json.Unmarshal(line, &p); err != nil {
		t.Fatal(err)
	}
	return p.Title
}

func TestEveryCommandHasHelpWithExample(t *testing.T) {
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, noEnv)
	for _, c := range allCommands(a.root()) {
		if c.Runnable() && c.Example == "" {
			t.Errorf("command %q has no example in its --help", c.CommandPath())
		}
		if c.Short == "" {
			t.Errorf("command %q has no short description", c.CommandPath())
		}
	}
}

func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		out = append(out, allCommands(sub)...)
	}
	return out
}

func TestMissingAPIKeyForOpenAIExitsTwo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	res := invoke(t, "", nil, "run", "--config", "../../configs/demo.yaml", "--out", out, "--set", "generate.policy=llm")
	if res.code != exitUsage || !strings.Contains(res.stderr, "OPENAI_API_KEY is empty") {
		t.Errorf("got exit %d: %s; want 2 naming OPENAI_API_KEY", res.code, res.stderr)
	}
	if _, err := os.Stat(filepath.Join(out, pipeline.ManifestFile)); err == nil {
		t.Error("a refused start wrote a manifest")
	}
}

// TestFreshRunsExportIdenticalFiles: two runs of one config into two fresh directories
// write byte-identical training files, whatever order the episodes finished in.
func TestFreshRunsExportIdenticalFiles(t *testing.T) {
	dir, _ := demoRun(t)
	other := filepath.Join(t.TempDir(), "run")
	if res := invoke(t, "", nil, "run", "--config", "../../configs/demo.yaml", "--out", other); res.code != 0 {
		t.Fatalf("second fresh run: %s", res.stderr)
	}
	a, _ := pipeline.ReadManifest(dir)
	b, _ := pipeline.ReadManifest(other)
	sums := map[string]string{}
	for _, o := range a.Outputs {
		if o.Stage == "export" {
			sums[o.Path] = o.SHA256
		}
	}
	n := 0
	for _, o := range b.Outputs {
		if o.Stage != "export" {
			continue
		}
		n++
		if sums[o.Path] != o.SHA256 {
			t.Errorf("%s differs between two fresh runs", o.Path)
		}
	}
	if n == 0 || n != len(sums) {
		t.Errorf("export files: %d and %d", len(sums), n)
	}
}

func TestCorpusGlob(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../data/demo/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	half := len(lines) / 2
	os.WriteFile(filepath.Join(dir, "wiki-001.jsonl"), []byte(strings.Join(lines[:half], "")), 0o644)
	os.WriteFile(filepath.Join(dir, "wiki-002.jsonl"), []byte(strings.Join(lines[half:], "")), 0o644)
	out := filepath.Join(t.TempDir(), "run")
	res := invoke(t, "", nil, "run", "--config", "../../configs/demo-fever.yaml", "--out", out,
		"--set", "corpus.path="+filepath.Join(dir, "wiki-*.jsonl"))
	if res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	m, _ := pipeline.ReadManifest(out)
	corpora := 0
	for _, in := range m.Inputs {
		if in.Role == "corpus" {
			corpora++
		}
	}
	if corpora != 2 || m.Stages["filter"].Counts["kept"] != 180 {
		t.Errorf("got %d corpus inputs and %d kept, want 2 and 180", corpora, m.Stages["filter"].Counts["kept"])
	}
	res = invoke(t, "", nil, "run", "--config", "../../configs/demo-fever.yaml", "--out", out,
		"--set", "corpus.path="+filepath.Join(dir, "wiki-*.jsonl"))
	if res.code != 0 {
		t.Errorf("resume with a glob corpus: exit %d: %s", res.code, res.stderr)
	}
	res = invoke(t, "", nil, "run", "--config", "../../configs/demo-fever.yaml", "--out", filepath.Join(t.TempDir(), "r"),
		"--set", "corpus.path="+filepath.Join(dir, "none-*.jsonl"))
	if res.code != exitUsage || !strings.Contains(res.stderr, "no file matches") {
		t.Errorf("empty glob: exit %d: %s", res.code, res.stderr)
	}
}
