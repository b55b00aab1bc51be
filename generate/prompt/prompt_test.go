package prompt

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/reactgen/reactgen/internal/shareddata"
)

func embedded(t *testing.T) fstest.MapFS {
	t.Helper()
	b, err := os.ReadFile("testdata/tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	return fstest.MapFS{"prompts/hotpotqa.json": &fstest.MapFile{Data: b}}
}

func TestLoad(t *testing.T) {
	fsys := embedded(t)
	tests := []struct {
		name, ref, task string
		kind            string
		exemplars       int
		instruction     string
	}{
		{"embedded default", "", "hotpotqa", KindReAct, 2, "Solve the riddle with Thought, Action and Observation steps."},
		{"reactgen file", "testdata/tiny.json", "hotpotqa", KindReAct, 2, "Solve the riddle with Thought, Action and Observation steps."},
		// A HotpotQA entry that acts gets the notebook's instruction, not the embedded one.
		{"paper react", "testdata/paper_style.json#think", "hotpotqa", KindReAct, 2, strings.TrimSpace(NotebookInstruction)},
		{"paper act", "testdata/paper_style.json#act", "hotpotqa", KindAct, 1, strings.TrimSpace(NotebookInstruction)},
		// The FEVER notebook adds none: the chat layout falls back to the built-in one.
		{"paper act fever", "testdata/paper_style.json#act", "fever", KindAct, 1, DefaultInstruction("fever")},
		// CoT and Standard never get a tool instruction.
		{"paper cot", "testdata/paper_style.json#cot", "hotpotqa", KindCoT, 1, AnswerInstruction("hotpotqa")},
		{"paper standard with own instruction", "testdata/paper_style.json#standard", "fever", KindStandard, 2, "Sort claims into SUPPORTS, REFUTES or NOT ENOUGH INFO."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := loadKind(t, tc.ref, tc.task, fsys, tc.kind, tc.exemplars)
			if s.Instruction != tc.instruction {
				t.Errorf("instruction: got %q, want %q", s.Instruction, tc.instruction)
			}
		})
	}
}

// loadKind loads ref for task from fsys (nil: the file system) and checks that it is a
// set of kind with n exemplars.
func loadKind(t *testing.T, ref, task string, fsys fs.FS, kind string, n int) Set {
	t.Helper()
	s, err := Load(ref, task, fsys)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.Kind != kind {
		t.Errorf("kind: got %q, want %q", s.Kind, kind)
	}
	if len(s.Exemplars) != n {
		t.Errorf("exemplars: got %d, want %d", len(s.Exemplars), n)
	}
	return s
}

func TestLoadErrors(t *testing.T) {
	fsys := embedded(t)
	for _, ref := range []string{"testdata/missing.json", "testdata/paper_style.json#nokey", "testdata/tiny.json#think"} {
		t.Run(ref, func(t *testing.T) {
			if _, err := Load(ref, "hotpotqa", fsys); err == nil {
				t.Errorf("Load(%q): got no error, want one", ref)
			}
		})
	}
	if _, err := Load("", "fever", fsys); err == nil {
		t.Errorf("Load of a missing embedded task: got no error, want one")
	}
	if _, err := Load("testdata/tiny.json", "fever", fsys); err == nil {
		t.Errorf("Load of a file for another task: got no error, want one")
	}
}

func TestParsePaperFields(t *testing.T) {
	s, err := Load("testdata/paper_style.json#think", "hotpotqa", nil)
	if err != nil {
		t.Fatal(err)
	}
	ex := s.Exemplars[0]
	if got, want := len(ex.Steps), 3; got != want {
		t.Fatalf("steps: got %d, want %d", got, want)
	}
	if got, want := ex.Steps[1].Observation, "Onhava lies on both banks\nof the river Vell."; got != want {
		t.Errorf("continued observation: got %q, want %q", got, want)
	}
	if got, want := ex.Answer, "Vell"; got != want {
		t.Errorf("answer from Finish: got %q, want %q", got, want)
	}
	if s.Instruction != strings.TrimSpace(NotebookInstruction) {
		t.Errorf("instruction without fsys: got %q, want the notebook's", s.Instruction)
	}
	std, err := Load("testdata/paper_style.json#standard", "fever", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := std.Exemplars[0].Answer, "SUPPORTS"; got != want {
		t.Errorf("answer with no space after the colon: got %q, want %q", got, want)
	}
}

func TestFor(t *testing.T) {
	s, err := Load("testdata/tiny.json", "hotpotqa", nil)
	if err != nil {
		t.Fatal(err)
	}
	act, err := s.For(MethodAct)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range act.Exemplars[0].Steps {
		if st.Thought != "" {
			t.Errorf("act kept thought %q", st.Thought)
		}
		if st.Action == "" {
			t.Errorf("act lost an action")
		}
	}
	cot, err := s.For(MethodCoTSC)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, got, want string
	}{
		{"cot reasoning from thoughts", cot.Exemplars[0].Reasoning, "I should find the capital of Zembla. Now I need the river of Onhava. The river is the Vell."},
		{"cot reasoning field wins", cot.Exemplars[1].Reasoning, "Plim was founded in 1820 and Plom in 1790, so Plom is older."},
		{"cot answer", cot.Exemplars[1].Answer, "no"},
		{"cot kind", cot.Kind, KindCoT},
		{"cot instruction", cot.Instruction, AnswerInstruction("hotpotqa")},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if len(cot.Exemplars[0].Steps) != 0 {
		t.Errorf("cot kept %d steps, want 0", len(cot.Exemplars[0].Steps))
	}
	std, err := cot.For(MethodStandard)
	if err != nil {
		t.Fatal(err)
	}
	if std.Exemplars[0].Reasoning != "" || std.Exemplars[0].Answer != "Vell" {
		t.Errorf("standard exemplar: got %+v, want answer only", std.Exemplars[0])
	}
	if _, err := std.For(MethodReAct); err == nil {
		t.Errorf("standard exemplars for react: got no error, want ErrKind")
	}
	if got := len(s.Truncate(1).Exemplars); got != 1 {
		t.Errorf("Truncate(1): got %d exemplars, want 1", got)
	}
	if got := len(s.Truncate(0).Exemplars); got != 2 {
		t.Errorf("Truncate(0): got %d exemplars, want 2", got)
	}
}

func TestPaperPromptFiles(t *testing.T) {
	naive := shareddata.Path(t, "react-prompts/prompts_naive.json")
	fever := shareddata.Path(t, "react-prompts/fever.json")
	tests := []struct {
		ref, task, kind string
		n               int
	}{
		{naive + "#webthink_simple6", "hotpotqa", KindReAct, 6},
		{naive + "#webact_simple6", "hotpotqa", KindAct, 6},
		{naive + "#cotqa_simple6", "hotpotqa", KindCoT, 6},
		{naive + "#webqa_simple6", "hotpotqa", KindStandard, 6},
		{fever + "#webthink_simple3", "fever", KindReAct, 3},
		{fever + "#webact_simple3", "fever", KindAct, 3},
		{fever + "#cotqa_simple3", "fever", KindCoT, 3},
		{fever + "#webqa_simple3", "fever", KindStandard, 3},
	}
	for _, tc := range tests {
		t.Run(tc.ref[strings.LastIndex(tc.ref, "/")+1:], func(t *testing.T) {
			s := loadKind(t, tc.ref, tc.task, nil, tc.kind, tc.n)
			for i, ex := range s.Exemplars {
				if ex.Question == "" || ex.Answer == "" {
					t.Errorf("exemplar %d: question %q answer %q, want both", i, ex.Question, ex.Answer)
				}
			}
			if tc.task == "fever" && !strings.Contains(s.Instruction, "SUPPORTS") {
				t.Errorf("fever instruction: got %q, want the file's own", s.Instruction)
			}
			if _, err := s.For(MethodStandard); err != nil {
				t.Errorf("For(standard): %v", err)
			}
		})
	}
}
