package prompt

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

func TestAppendExemplar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mine.json")
	ex := Exemplar{Question: "Who wrote it?", Answer: "Ada", Steps: []Step{{Thought: "I know.", Action: "Finish[Ada]"}}}
	for want := 1; want <= 2; want++ {
		n, err := AppendExemplar(path, pipeline.TaskHotpotQA, ex)
		if err != nil || n != want {
			t.Fatalf("append %d: got %d, %v", want, n, err)
		}
	}
	set, err := Load(path, pipeline.TaskHotpotQA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Exemplars) != 2 || set.Exemplars[1].Answer != "Ada" || set.Instruction != DefaultInstruction(pipeline.TaskHotpotQA) {
		t.Errorf("file holds %+v", set)
	}

	t.Run("not an exemplar file", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "notes.json")
		if err := os.WriteFile(other, []byte("[1, 2]"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := AppendExemplar(other, pipeline.TaskHotpotQA, ex); !errors.Is(err, ErrNotExemplarFile) {
			t.Fatalf("err %v: want ErrNotExemplarFile", err)
		}
		if b, _ := os.ReadFile(other); string(b) != "[1, 2]" {
			t.Errorf("the file was changed: %q", b)
		}
	})
}
