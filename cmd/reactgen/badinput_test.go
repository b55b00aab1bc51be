package main

// Bad input: malformed task files, corpora and configs end a command with exit 2 and a
// message naming the file, line or key, and write nothing: an existing run directory stays
// byte for byte the same, a new one is not left with a manifest.

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// A small world of this test's own: pages and questions about them.
var (
	tinyCorpus = []string{
		`{"title": "Morvenna", "text": "Morvenna is a harbour town on the Ulst coast. It was founded in 1412 by salt traders."}`,
		`{"title": "Ulst", "text": "Ulst is a windy province in the west. Its capital is Morvenna."}`,
		`{"title": "Kestrel Bridge", "text": "Kestrel Bridge crosses the river Dunmere. It opened in 1888."}`,
		`{"title": "Dunmere", "text": "The Dunmere is a slow river. It flows into the Ulst Sea."}`,
	}
	tinyTasks = []string{
		`{"id": "t1", "question": "When was Morvenna founded?", "answer": "1412"}`,
		`{"id": "t2", "question": "What is the capital of Ulst?", "answer": "Morvenna"}`,
		`{"id": "t3", "question": "Which river does Kestrel Bridge cross?", "answer": "Dunmere"}`,
		`{"id": "t4", "question": "Where does the Dunmere flow?", "answer": "the Ulst Sea"}`,
	}
)

// tinyModel answers the tiny world's questions.
func tinyModel() *fakeModel {
	m := &fakeModel{answers: map[string]string{}}
	for _, l := range tinyTasks {
		var q struct{ Question, Answer string }
		mustUnmarshal(l, &q)
		m.answers[q.Question] = q.Answer
	}
	return m
}

func mustUnmarshal(s string, v any) {
	if err := json.Unmarshal([]byte(s), v); err != nil {
		panic(err)
	}
}

func writeLines(t *testing.T, path string, lines ...string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tinyConfig writes the tiny world (or the given task and corpus lines) and a config with
// relative paths into dir, and returns the config's path.
func tinyConfig(t *testing.T, dir, url string, tasks, corpus []string, sets map[string]any) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if tasks != nil {
		writeLines(t, filepath.Join(dir, "tasks.jsonl"), tasks...)
	}
	if corpus != nil {
		writeLines(t, filepath.Join(dir, "corpus.jsonl"), corpus...)
	}
	all := map[string]any{"task.path": "tasks.jsonl", "task.format": "jsonl", "corpus.path": "corpus.jsonl", "task.limit": 0}
	for k, v := range sets {
		all[k] = v
	}
	return testConfig(t, dir, url, all)
}

// snapshot hashes every file under dir.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	eachFile(dir, func(p string, b []byte) {
		s := sha256.Sum256(b)
		out[p] = hex.EncodeToString(s[:])
	})
	return out
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s: %s changed or vanished", what, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s was created", what, p)
		}
	}
}

func TestBadInputExitsTwoNamesTheProblemAndWritesNothing(t *testing.T) {
	srv := llmtest.NewServer(t, tinyModel().handle)
	tmp := t.TempDir()
	// An existing, finished run that every bad command is also pointed at.
	existingCfg := tinyConfig(t, filepath.Join(tmp, "good"), srv.URL, tinyTasks, tinyCorpus, nil)
	existing := filepath.Join(tmp, "existing")
	if res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "k"}, "run", "--config", existingCfg, "--out", existing); res.code != 0 {
		t.Fatalf("good run: exit %d: %s", res.code, res.stderr)
	}

	bad := func(lines []string, i int, s string) []string {
		out := append([]string(nil), lines...)
		out[i] = s
		return out
	}
	cases := []struct {
		name   string
		tasks  []string
		corpus []string
		sets   map[string]any
		raw    string // the config file itself, instead of tinyConfig's
		want   []string
	}{
		{name: "malformed JSON line in the task file", tasks: bad(tinyTasks, 2, `{"id": "t3", "question": "Which`), corpus: tinyCorpus, want: []string{"tasks.jsonl", "line 3"}},
		{name: "malformed JSON line in the corpus", tasks: tinyTasks, corpus: bad(tinyCorpus, 1, `{"title": "Ulst", "text": `), want: []string{"corpus.jsonl", "line 2"}},
		{name: "task record without a question", tasks: bad(tinyTasks, 1, `{"id": "t2", "answer": "Morvenna"}`), corpus: tinyCorpus, want: []string{"tasks.jsonl", "line 2", "question"}},
		{name: "corpus record without a title", tasks: tinyTasks, corpus: bad(tinyCorpus, 3, `{"text": "A river."}`), want: []string{"corpus.jsonl", "line 4", "title"}},
		{name: "duplicate question ids", tasks: bad(tinyTasks, 3, strings.Replace(tinyTasks[3], `"t4"`, `"t1"`, 1)), corpus: tinyCorpus, want: []string{"tasks.jsonl", "duplicate", "t1"}},
		{name: "empty task file", tasks: []string{""}, corpus: tinyCorpus, want: []string{"tasks.jsonl", "empty"}},
		{name: "empty corpus", tasks: tinyTasks, corpus: []string{""}, want: []string{"corpus.jsonl"}},
		{name: "invalid UTF-8 in the task file", tasks: bad(tinyTasks, 0, "{\"id\": \"t1\", \"question\": \"When was Morv\xffenna founded?\", \"answer\": \"1412\"}"), corpus: tinyCorpus, want: []string{"tasks.jsonl", "line 1", "UTF-8"}},
		{name: "invalid UTF-8 in the corpus", tasks: tinyTasks, corpus: bad(tinyCorpus, 0, "{\"title\": \"Morv\xfeenna\", \"text\": \"A town.\"}"), want: []string{"corpus.jsonl", "line 1", "UTF-8"}},
		{name: "unknown config key", raw: "generate:\n  concurrency: 4\n  concurency: 8\n", want: []string{"line 3", "generate.concurency", "did you mean generate.concurrency"}},
		{name: "wrong type", raw: "generate:\n  concurrency: many\n", want: []string{"generate.concurrency", "line 2", "integer"}},
		{name: "negative concurrency", tasks: tinyTasks, corpus: tinyCorpus, sets: map[string]any{"generate.concurrency": -4}, want: []string{"generate.concurrency", "-4"}},
		{name: "missing exemplar file", tasks: tinyTasks, corpus: tinyCorpus, sets: map[string]any{"generate.exemplars": "no-such-exemplars.json"}, want: []string{"generate.exemplars", "no-such-exemplars.json"}},
		{name: "missing index", tasks: tinyTasks, corpus: tinyCorpus, sets: map[string]any{"corpus.path": nil, "corpus.index": "no-such-index"}, want: []string{"corpus.index", "no-such-index"}},
		{name: "missing task file", corpus: tinyCorpus, sets: map[string]any{"task.path": "no-such-tasks.jsonl"}, want: []string{"task.path", "no-such-tasks.jsonl"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			if tc.raw != "" {
				writeLines(t, filepath.Join(dir, "tasks.jsonl"), tinyTasks...)
				writeLines(t, filepath.Join(dir, "corpus.jsonl"), tinyCorpus...)
				// The bad lines come first, so their line numbers are the ones in want.
				raw := tc.raw + fmt.Sprintf("task:\n  path: tasks.jsonl\n  format: jsonl\ncorpus:\n  path: corpus.jsonl\nllm:\n  base_url: %s\n", srv.URL)
				if err := os.WriteFile(cfg, []byte(raw), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				cfg = tinyConfig(t, dir, srv.URL, tc.tasks, tc.corpus, tc.sets)
			}
			env := map[string]string{"OPENAI_API_KEY": "k"}

			fresh := filepath.Join(dir, "fresh")
			res := invoke(t, "", env, "run", "--config", cfg, "--out", fresh)
			res.wantExit(t, exitUsage, tc.want...)
			if _, err := os.Stat(filepath.Join(fresh, pipeline.ManifestFile)); err == nil {
				t.Errorf("a failed start left %s with a manifest: %v", fresh, snapshotNames(snapshot(t, fresh)))
			}

			before := snapshot(t, existing)
			res = invoke(t, "", env, "run", "--config", cfg, "--out", existing)
			if res.code != exitUsage {
				t.Errorf("on the existing run: exit %d, want %d; stderr:\n%s", res.code, exitUsage, res.stderr)
			}
			sameSnapshot(t, "existing run", before, snapshot(t, existing))
		})
	}
}

func snapshotNames(m map[string]string) []string {
	var out []string
	for p := range m {
		out = append(out, filepath.Base(p))
	}
	return out
}

func TestSkipBadSkipsAndCountsMalformedRecords(t *testing.T) {
	srv := llmtest.NewServer(t, tinyModel().handle)
	dir := t.TempDir()
	// task.Load skips bad records (a missing field, a duplicate id) but not malformed JSON
	// lines; see the report.
	tasks := append(append([]string(nil), tinyTasks...), `{"id": "t5", "answer": "no question"}`, strings.Replace(tinyTasks[0], "When", "Since when", 1))
	corpus := append(append([]string(nil), tinyCorpus...), `{"title": "Half`)
	cfg := tinyConfig(t, dir, srv.URL, tasks, corpus, nil)
	out := filepath.Join(dir, "run")
	res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "k"}, "run", "--config", cfg, "--out", out, "--skip-bad")
	if res.code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "skipped malformed task records") || !strings.Contains(res.stderr, "skipped=2") {
		t.Errorf("stderr does not count the 2 skipped task records:\n%s", res.stderr)
	}
	m := readManifest(t, out)
	if got := m.Stages["index"].Counts["skipped"]; got != 1 {
		t.Errorf("index skipped: got %d, want 1", got)
	}
	if got := len(effective(logLines(t, filepath.Join(out, pipeline.EpisodesFile)))); got != len(tinyTasks) {
		t.Errorf("episodes: got %d, want %d", got, len(tinyTasks))
	}
}

func TestHugeTaskLineIsRefusedWithinMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 200 MB line")
	}
	srv := llmtest.NewServer(t, tinyModel().handle)
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, srv.URL, nil, tinyCorpus, nil)
	// Line 2 is a 200 MB string in a record that never closes.
	f, err := os.Create(filepath.Join(dir, "tasks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(tinyTasks[0] + "\n" + `{"id": "big", "question": "`)
	chunk := strings.Repeat("abcdefghij", 1<<16)
	for range 200 << 20 / len(chunk) {
		w.WriteString(chunk)
	}
	w.WriteString("\n" + tinyTasks[1] + "\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	c := startChild(t, childEnv{vars: map[string]string{"OPENAI_API_KEY": "k"}}, "run", "--config", cfg, "--out", filepath.Join(dir, "run"))
	code := c.wait(t)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%.2000s", code, exitUsage, c.stderr.String())
	}
	if !strings.Contains(c.stderr.String(), "line 2") {
		t.Errorf("the message does not name line 2:\n%.2000s", c.stderr.String())
	}
	if len(c.stderr.String()) > 4096 {
		t.Errorf("stderr is %d bytes: the message quotes the huge line", len(c.stderr.String()))
	}
	if ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		t.Logf("peak memory %d MiB for a 200 MiB line", ru.Maxrss>>10)
		if ru.Maxrss<<10 > peakRSSBound {
			t.Errorf("peak memory %d MiB, want under the documented %d MiB", ru.Maxrss>>10, peakRSSBound>>20)
		}
	}
}

func TestRelativePathsAndNoWritesOutsideTheRunDirectory(t *testing.T) {
	srv := llmtest.NewServer(t, tinyModel().handle)
	root := t.TempDir()
	cfgDir := filepath.Join(root, "project", "configs")
	cfg := tinyConfig(t, cfgDir, srv.URL, tinyTasks, tinyCorpus, map[string]any{"export.formats": []string{"openai-chat", "parquet"}})
	cwd := filepath.Join(root, "elsewhere")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "runs", "r1")
	before := snapshot(t, root)
	code, stdout, stderr := runChild(t, childEnv{dir: cwd, vars: map[string]string{"OPENAI_API_KEY": "k"}}, "run", "--config", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, out) {
		t.Errorf("stdout does not say where the run is:\n%s", stdout)
	}
	after := snapshot(t, root)
	for p := range after {
		if strings.HasPrefix(p, out+string(filepath.Separator)) {
			delete(after, p)
		}
	}
	sameSnapshot(t, "outside the run directory", before, after)
	m := readManifest(t, out)
	for _, in := range m.Inputs {
		if in.Role == "task" && in.Path != filepath.Join(cfgDir, "tasks.jsonl") {
			t.Errorf("task path: got %s, want it resolved against the config file's folder", in.Path)
		}
	}
}
