package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/shareddata"
)

// The reference of these tests is what the official notebooks (github.com/ysymyth/ReAct,
// hotpotqa.ipynb and FEVER.ipynb) send, rebuilt here from the prompt file and the
// notebooks' string operations, without the package's renderer.

// hotpotNotebookInstruction is the HotpotQA notebook's instruction, typed out for the
// test from the notebook's `instruction = """..."""` (trailing space after "types:" and
// the final newline included).
const hotpotNotebookInstruction = "Solve a question answering task with interleaving Thought, Action, Observation steps. Thought can reason about the current situation, and Action can be three types: \n(1) Search[entity], which searches the exact entity on Wikipedia and returns the first paragraph if it exists. If not, it will return some similar entities to search.\n(2) Lookup[keyword], which returns the next sentence containing keyword in the current passage.\n(3) Finish[answer], which returns the answer and finishes the task.\nHere are some examples.\n"

// nbStep is one step as the notebook's webthink() holds it: the thought and action split
// from the completion, and the observation the environment returned.
type nbStep struct{ thought, action, obs string }

// notebookBase is webthink's prompt before env.reset: the HotpotQA notebook's
// `instruction + prompt_dict['webthink_simple6']`, the FEVER notebook's
// `prompt_dict['webthink_simple3']`.
func notebookBase(t *testing.T, file, key, task string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]string
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	entry, ok := d[key]
	if !ok {
		t.Fatalf("%s has no key %s", file, key)
	}
	if task == "hotpotqa" {
		return hotpotNotebookInstruction + entry
	}
	return entry
}

// notebookTrajectory is webthink's `prompt` after the steps so far: `prompt += question +
// "\n"` (question is env.reset()'s "Question: ..." or "Claim: ..."), then per step
// `obs = obs.replace('\\n', ”)` and `prompt += f"Thought {i}: {thought}\nAction {i}:
// {action}\nObservation {i}: {obs}\n"`.
func notebookTrajectory(base, question string, steps []nbStep) string {
	p := base + question + "\n"
	for j, s := range steps {
		i := j + 1
		obs := strings.ReplaceAll(s.obs, "\\n", "")
		p += fmt.Sprintf("Thought %d: %s\nAction %d: %s\nObservation %d: %s\n", i, s.thought, i, s.action, i, obs)
	}
	return p
}

// notebookRequest is step i's `llm(prompt + f"Thought {i}:", stop=[f"\nObservation {i}:"])`.
func notebookRequest(base, question string, steps []nbStep) (string, string) {
	i := len(steps) + 1
	return notebookTrajectory(base, question, steps) + fmt.Sprintf("Thought %d:", i), fmt.Sprintf("\nObservation %d:", i)
}

// notebookReask is the second request of a step without an action: `llm(prompt +
// f"Thought {i}: {thought}\nAction {i}:", stop=["\n"])`.
func notebookReask(base, question string, steps []nbStep, thought string) string {
	i := len(steps) + 1
	return notebookTrajectory(base, question, steps) + fmt.Sprintf("Thought %d: %s\nAction %d:", i, thought, i)
}

// firstDiff describes where two prompts part, for a failure message.
func firstDiff(got, want string) string {
	n := min(len(got), len(want))
	i := 0
	for i < n && got[i] == want[i] {
		i++
	}
	lo := max(i-60, 0)
	return fmt.Sprintf("first difference at byte %d of %d/%d:\n got …%q\nwant …%q", i, len(got), len(want),
		got[lo:min(i+60, len(got))], want[lo:min(i+60, len(want))])
}

func TestNotebookInstructionIsTheNotebooks(t *testing.T) {
	if NotebookInstruction != hotpotNotebookInstruction {
		t.Errorf("NotebookInstruction: %s", firstDiff(NotebookInstruction, hotpotNotebookInstruction))
	}
}

// notebookCases are the prompt entries the notebooks run, and one of the project's own in
// the same layout, so that the test runs where the paper's files are absent.
func notebookCases(t *testing.T) []struct{ name, file, key, task, question string } {
	cases := []struct{ name, file, key, task, question string }{
		{"own hotpotqa-style entry", "testdata/paper_style.json", "think", "hotpotqa", "Which river rises in Onhava?"},
	}
	if p := sharedPath(t, "react-prompts/prompts_naive.json"); p != "" {
		cases = append(cases, struct{ name, file, key, task, question string }{
			"hotpotqa webthink_simple6", p, "webthink_simple6", "hotpotqa", "Were Scott Derrickson and Ed Wood of the same nationality?"})
	}
	if p := sharedPath(t, "react-prompts/fever.json"); p != "" {
		cases = append(cases, struct{ name, file, key, task, question string }{
			"fever webthink_simple3", p, "webthink_simple3", "fever", "Nikolaj Coster-Waldau worked with the Fox Broadcasting Company."})
	}
	return cases
}

// sharedPath is the path of a shared data file, or "" (and a log line) when it is absent:
// the project's own cases run either way.
func sharedPath(t *testing.T, rel string) string {
	t.Helper()
	p, ok := shareddata.Lookup(rel)
	if !ok {
		t.Logf("shared data %s not present: its cases are skipped", rel)
	}
	return p
}

// A scripted episode's history holds what the byte-compare must survive: the blank line
// that "No more results.\n" leaves, a literal backslash-n in a page's text, trailing
// spaces, an action that is not of the paper's form, and the Invalid action answer.
var notebookSteps = []nbStep{
	{"I need to search Onhava. ", "Search[Onhava]", `Onhava is a port city.\n It lies on the Vell. `},
	{"Look up the river.", "Lookup[source]", "No more results.\n"},
	{"Try it lower-case.", "search[vell] now", "Invalid action: search[vell] now"},
	{"The Vell rises in the hills.", "Lookup[hills]", "(Result 1 / 1) The Vell rises in the Gol hills."},
}

func TestNotebookReActPrompts(t *testing.T) {
	for _, tc := range notebookCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			base := notebookBase(t, tc.file, tc.key, tc.task)
			question := Label(tc.task) + ": " + tc.question
			s, err := Load(tc.file+"#"+tc.key, tc.task, nil)
			if err != nil {
				t.Fatal(err)
			}
			react, err := s.For(MethodReAct)
			if err != nil {
				t.Fatal(err)
			}
			// The paper's configs name all the exemplars (num_exemplars 6 or 3): no cut.
			l, err := NewLayout(react.Truncate(len(react.Exemplars)), FormatCompletion)
			if err != nil {
				t.Fatal(err)
			}
			if !l.Notebook() {
				t.Errorf("layout of a paper entry is not a notebook layout")
			}
			for n := 0; n <= len(notebookSteps); n++ {
				turns := make([]Turn, n)
				for j, st := range notebookSteps[:n] {
					turns[j] = Turn{Thought: st.thought, Action: st.action, Observation: st.obs}
				}
				want, wantStop := notebookRequest(base, question, notebookSteps[:n])
				req := l.Step(tc.question, turns)
				if req.Prompt != want {
					t.Errorf("step %d: %s", n+1, firstDiff(req.Prompt, want))
				}
				if sum := sha256.Sum256([]byte(want)); req.Hash() != hex.EncodeToString(sum[:]) {
					t.Errorf("step %d: the request's hash is not the sha256 of its prompt", n+1)
				}
				if len(req.Stop) != 1 || req.Stop[0] != wantStop {
					t.Errorf("step %d stop: got %q, want [%q]", n+1, req.Stop, wantStop)
				}
				thought := "I am not sure what to do next."
				re := l.Reask(tc.question, turns, thought)
				if want := notebookReask(base, question, notebookSteps[:n], thought); re.Prompt != want {
					t.Errorf("re-ask at step %d: %s", n+1, firstDiff(re.Prompt, want))
				}
				if len(re.Stop) != 1 || re.Stop[0] != "\n" {
					t.Errorf("re-ask stop: got %q, want [\"\\n\"]", re.Stop)
				}
			}
			// What the byte equality implies, spelled out.
			p := l.Step(tc.question, nil).Prompt
			if tc.task == "fever" && !strings.HasPrefix(p, "\nDetermine if there is Observation") {
				t.Errorf("fever prompt does not keep the file's leading newline: %.40q", p)
			}
			if tc.task == "hotpotqa" && !strings.HasPrefix(p, "Solve a question answering task") {
				t.Errorf("hotpotqa prompt does not open with the notebook's instruction: %.40q", p)
			}
			// The HotpotQA entry ends in one newline, the FEVER entry in a blank line of its
			// own; nothing is added before the question.
			tail := "]\n" + question + "\nThought 1:"
			if tc.task == "fever" {
				tail = "]\n\n" + question + "\nThought 1:"
			}
			if !strings.HasSuffix(p, tail) || strings.HasSuffix(p, "\n"+tail) {
				t.Errorf("prompt does not end %q: %q", tail, p[max(len(p)-80, 0):])
			}
		})
	}
}

// Truncate cuts a verbatim text at an exemplar's first byte, so what is left is the file.
func TestNotebookTruncate(t *testing.T) {
	s, err := Load("testdata/paper_style.json#think", "hotpotqa", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := notebookBase(t, "testdata/paper_style.json", "think", "hotpotqa")
	cut := base[:strings.Index(base, "Question: Is Plim older")]
	l, err := NewLayout(s.Truncate(1), FormatCompletion)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Step("Q?", nil).Prompt, cut+"Question: Q?\nThought 1:"; got != want {
		t.Errorf("one exemplar: %s", firstDiff(got, want))
	}
	l, err = NewLayout(s.WithInstruction("Use the tools."), FormatCompletion)
	if err != nil {
		t.Fatal(err)
	}
	own := base[strings.Index(base, "\nQuestion: Which river"):] // the entry's leading newline goes with its instruction
	if got, want := l.Step("Q?", nil).Prompt, "Use the tools.\n"+own[1:]+"Question: Q?\nThought 1:"; got != want {
		t.Errorf("generate.instruction: %s", firstDiff(got, want))
	}
}

// CoT and Standard with the paper's files: no notebook of the official code runs them, so
// the rule is the ReAct notebooks' (the entry verbatim, then the question), and the
// instruction is the file's own, never the tool instruction.
func TestPaperCoTPrompts(t *testing.T) {
	cases := []struct{ file, key, task, method, question, tail string }{
		{"testdata/paper_style.json", "cot", "hotpotqa", MethodCoTSC, "Q?", "Question: Q?\nThought:"},
		{"testdata/paper_style.json", "standard", "fever", MethodStandard, "C.", "Claim: C.\nAnswer:"},
	}
	if p := sharedPath(t, "react-prompts/prompts_naive.json"); p != "" {
		cases = append(cases, struct{ file, key, task, method, question, tail string }{p, "cotqa_simple6", "hotpotqa", MethodCoT, "Q?", "Question: Q?\nThought:"})
	}
	if p := sharedPath(t, "react-prompts/fever.json"); p != "" {
		cases = append(cases, struct{ file, key, task, method, question, tail string }{p, "cotqa_simple3", "fever", MethodCoTSC, "C.", "Claim: C.\nThought:"})
	}
	for _, tc := range cases {
		t.Run(tc.key+"/"+tc.task, func(t *testing.T) {
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			var d map[string]string
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			set := loadSet(t, tc.file+"#"+tc.key, tc.task, tc.method)
			l := layOut(t, set, FormatCompletion)
			if got, want := l.Answer(tc.question).Prompt, d[tc.key]+tc.tail; got != want {
				t.Errorf("completion prompt: %s", firstDiff(got, want))
			}
			if strings.Contains(set.Instruction, "Search[") {
				t.Errorf("instruction names the tools: %q", set.Instruction)
			}
			chat := layOut(t, set, FormatChat)
			if strings.Contains(chat.Prefix(), "Search[") {
				t.Errorf("chat system message names the tools: %.80q", chat.Prefix())
			}
		})
	}
}
