package finetune_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/finetune"
	"github.com/reactgen/reactgen/pipeline"
)

// The suggested eval command, pasted into a shell, runs nothing a hostile model name (or
// a run path) holds and passes each value as one argument: checked by running it in
// sh with reactgen defined as a function that prints its arguments.
func TestEvalCommandIsSafeToPaste(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	work := t.TempDir()
	run := filepath.Join(t.TempDir(), "run $(touch RUNPWNED)")
	for _, model := range []string{
		"ft:gpt-4o-mini-2024-07-18:org::abc",
		"ft:x$(touch PWNED)",
		"ft:x`touch PWNED2`",
		"ft:x'; touch PWNED3; echo '",
		"ft:x\"; touch PWNED4; \"",
		"ft:x && touch PWNED5 #",
		"ft:x\ntouch PWNED6",
	} {
		rec := pipeline.TrainingJob{FineTunedModel: model, BaseURL: "http://127.0.0.1:1/v1", Format: "openai-chat"}
		line := finetune.EvalCommand(run, rec)
		cmd := exec.Command(sh, "-c", `reactgen() { for a in "$@"; do printf '%s\0' "$a"; done; }; `+line)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sh -c %q: %v: %s", line, err, out)
		}
		args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if !slices.Contains(args, "llm.model="+model) {
			t.Errorf("model %q: the pasted command passes %q", model, args)
		}
		if !slices.Contains(args, filepath.Join(filepath.Dir(run), filepath.Base(run)+"-eval")) {
			t.Errorf("run %q: the pasted command passes %q", run, args)
		}
		if ents, _ := os.ReadDir(work); len(ents) > 0 {
			t.Fatalf("model %q: pasting %q created %v", model, line, ents)
		}
	}
}
