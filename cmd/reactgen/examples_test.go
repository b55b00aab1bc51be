package main

// Every line of every command's help Example is a promise: this test runs each one, as a
// person would paste it into a shell, in a directory that holds what the examples take
// for granted (configs/, data/, the demo run in runs/demo and the runs the examples
// name). A line that cannot run offline is listed in needsOutside with what it needs;
// a new example must either run or be listed.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

// needsOutside are the example lines that need what a test on one machine does not
// have, with what that is.
var needsOutside = map[string]string{
	"reactgen data --out data":                                                             "the publishers' servers (TestDataCommand runs it against a local mirror)",
	"reactgen data --out data --only prompts,fever":                                        "the publishers' servers (TestDataCommand runs it against a local mirror)",
	"reactgen data --out /srv/react --mirror http://mirror.internal/react-data --no-index": "a mirror of the data sets",
	"reactgen serve-env --config configs/demo.yaml --listen 127.0.0.1:8000":                "a server that runs until it is stopped, on a fixed port (TestServeEnvAnswersAsReactgenEnv runs it on a free one)",
	"OPENAI_BASE_URL=http://localhost:8000/v1 reactgen run -c configs/hotpotqa-react.yaml --set llm.model=meta-llama/Llama-3.1-70B-Instruct": "a vLLM server on port 8000 and the HotpotQA files",
	"reactgen generate -c configs/hotpotqa-react.yaml -o runs/h1 --set generate.concurrency=64":                                              "the HotpotQA files",
	"reactgen eval -c configs/hotpotqa-react.yaml --out runs/h-dev --set task.path=/data/hotpot_dev_distractor_v1.json":                      "the HotpotQA dev split and Wikipedia dump",
	"reactgen import --format openai-chat --task hotpotqa --out runs/fireact gpt_format_hotpotqa.jsonl":                                      "FireAct's trajectory file",
	"reactgen import --format react-transcript --task fever --gold paper_dev.jsonl --out runs/paper-fever transcripts.jsonl":                 "the ReAct paper's transcripts and FEVER's dev split",
	"reactgen index --corpus enwiki-20171001-pages-meta-current-withlinks-abstracts/ --out wiki-index":                                       "the HotpotQA Wikipedia dump",
	"reactgen compare runs/h-react runs/h-cot runs/h-ft-eval --json":                                                                         "runs over the HotpotQA files",
	"reactgen train --provider openai --run runs/demo --base-model gpt-4o-mini-2024-07-18 --epochs 3":                                        "a fine-tuning API (TestTrainCommand runs it against a fake)",
	"reactgen train --run runs/h1 --base-model gpt-4o-mini-2024-07-18 --steps 4000 --batch-size 64":                                          "a fine-tuning API and a run over the HotpotQA files",
}

// exampleSetup makes the runs the examples name besides runs/demo.
var exampleSetup = []string{
	"reactgen run --config configs/demo.yaml --out runs/demo-act --set generate.method=act",
	"reactgen run --config configs/demo-fever.yaml --out runs/demo-fever",
	"reactgen run --config configs/demo.yaml --out runs/shard-0 --shard 0/4",
	"reactgen run --config configs/demo.yaml --out runs/shard-1 --shard 1/4",
	"reactgen run --config configs/demo.yaml --out runs/shard-2 --shard 2/4",
	"reactgen run --config configs/demo.yaml --out runs/shard-3 --shard 3/4",
}

// exampleStdin is what a person types into the interactive examples.
var exampleStdin = map[string]string{
	"play": "I need to search Dapaeth Pictures.\nSearch[Dapaeth Pictures]\n" +
		"The founder is Thobrar Paqael. I need his birthplace.\nSearch[Thobrar Paqael]\n" +
		"So the answer is Tifaektir.\nFinish[Tifaektir]\n",
}

// exampleLines lists every command's Example lines, a line continued with \ joined.
func exampleLines(root *cobra.Command) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var cont string
		for _, l := range strings.Split(c.Example, "\n") {
			l = strings.TrimSpace(l)
			if l == "" {
				continue
			}
			if strings.HasSuffix(l, `\`) {
				cont += strings.TrimSpace(strings.TrimSuffix(l, `\`)) + " "
				continue
			}
			if line := cont + l; !slices.Contains(out, line) {
				out = append(out, line)
			}
			cont = ""
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

func TestEveryHelpExampleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every example against the demo")
	}
	bin := reactgenBinary(t)
	repo := mustAbs(t, "../..")
	dir := t.TempDir()
	// configs/ as committed; data/ with a copy of the demo world, which demo-world
	// rewrites, and the rest linked.
	if err := os.Symlink(filepath.Join(repo, "configs"), filepath.Join(dir, "configs")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(repo, "data"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		src, dst := filepath.Join(repo, "data", e.Name()), filepath.Join(dir, "data", e.Name())
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if e.Name() == "demo" {
			if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.Symlink(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	// A model server for the examples that prompt a model.
	srv := llmtest.NewServer(t, newFakeModel(t).handle)
	env := []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir,
		"TMPDIR=" + os.TempDir(), "OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=sk-test"}
	sh := func(t *testing.T, line, stdin string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		// An example that writes under /tmp writes under the test's directory.
		line = strings.ReplaceAll(line, " /tmp/", " "+filepath.Join(dir, "tmp")+"/")
		cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", line)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s\n  %v\n%s", line, err, out)
		}
	}

	lines := exampleLines(newApp(strings.NewReader(""), os.Stdout, os.Stderr, os.Getenv).root())
	// The demo run first: the other examples read it.
	first := "reactgen run --config configs/demo.yaml --out runs/demo"
	if !slices.Contains(lines, first) {
		t.Fatalf("no example makes the demo run (%q); the others need it", first)
	}
	sh(t, first, "")
	for _, l := range exampleSetup {
		sh(t, l, "")
	}
	if t.Failed() {
		t.FailNow()
	}
	ran := 0
	for _, line := range lines {
		if line == first {
			continue
		}
		if why, ok := needsOutside[line]; ok {
			t.Logf("not run (needs %s): %s", why, line)
			continue
		}
		if strings.Contains(line, "| jq") {
			if _, err := exec.LookPath("jq"); err != nil {
				t.Logf("not run (jq is not installed): %s", line)
				continue
			}
		}
		fields := strings.Fields(line)
		stdin := ""
		if len(fields) > 1 && fields[0] == "reactgen" {
			stdin = exampleStdin[fields[1]]
		}
		sh(t, line, stdin)
		ran++
	}
	for l := range needsOutside {
		if !slices.Contains(lines, l) {
			t.Errorf("needsOutside lists %q, which no command's Example holds", l)
		}
	}
	t.Logf("ran %d example lines, %d need what a test does not have", ran+1, len(needsOutside))
}
