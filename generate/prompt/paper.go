package prompt

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/reactgen/reactgen/pipeline"
)

// paperLabel matches the labels of the paper's completion layout at the start of a line:
// "Question:", "Claim:", "Thought 3:", "Thought:", "Action 2:", "Observation 1:", "Answer:".
var paperLabel = regexp.MustCompile(`^(Question|Claim|Thought|Action|Observation|Answer)(?:\s*(\d+))?\s*:\s?`)

// NotebookInstruction is the instruction that the official HotpotQA notebook
// (github.com/ysymyth/ReAct, hotpotqa.ipynb, MIT licence) puts before the entry
// webthink_simple6 of prompts_naive.json. It is quoted, trailing space and final newline
// included, because a prompt that is to be the paper's must be it byte for byte; the
// entries of the HotpotQA prompt file carry no instruction of their own. The FEVER
// notebook adds none: fever.json's entries begin with theirs.
const NotebookInstruction = "Solve a question answering task with interleaving Thought, Action, Observation steps. " +
	"Thought can reason about the current situation, and Action can be three types: \n" +
	"(1) Search[entity], which searches the exact entity on Wikipedia and returns the first paragraph if it exists. " +
	"If not, it will return some similar entities to search.\n" +
	"(2) Lookup[keyword], which returns the next sentence containing keyword in the current passage.\n" +
	"(3) Finish[answer], which returns the answer and finishes the task.\n" +
	"Here are some examples.\n"

// ParsePaper parses one prompt string in the paper's completion layout into a Set. Text
// before the first Question or Claim is the instruction. The set's Kind follows from what
// the exemplars hold: numbered thoughts with actions (ReAct), actions only (Act), an
// unnumbered Thought with an Answer (CoT), or an Answer only (Standard). The set's Text is
// the string itself, so that the completion layout sends it unchanged.
func ParsePaper(text, task string) (Set, error) {
	s := Set{Task: task, Text: text}
	var instr []string
	var cur *Exemplar
	var last *string // the field that an unlabelled line continues
	flush := func() {
		if cur != nil {
			s.Exemplars = append(s.Exemplars, *cur)
			cur = nil
		}
	}
	offset := 0 // of line in text
	for n, line := range strings.Split(text, "\n") {
		start := offset
		offset += len(line) + 1
		line = strings.TrimSuffix(line, "\r")
		m := paperLabel.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) == "" {
				continue
			}
			if cur == nil {
				instr = append(instr, strings.TrimSpace(line))
				continue
			}
			if last == nil {
				return Set{}, fmt.Errorf("line %d: text outside any field: %.40q", n+1, line)
			}
			*last += "\n" + strings.TrimSpace(line)
			continue
		}
		val := strings.TrimSpace(line[len(m[0]):])
		label, numbered := m[1], m[2] != ""
		switch label {
		case "Question", "Claim":
			flush()
			cur = &Exemplar{Question: val}
			last = &cur.Question
			s.starts = append(s.starts, start)
			continue
		}
		if cur == nil {
			return Set{}, fmt.Errorf("line %d: %s before any Question or Claim", n+1, label)
		}
		last = cur.field(label, val, numbered)
	}
	flush()
	if len(s.Exemplars) == 0 {
		return Set{}, fmt.Errorf("no Question or Claim in the prompt text")
	}
	for i := range s.Exemplars {
		ex := &s.Exemplars[i]
		if ex.Answer == "" {
			ex.Answer = ex.exemplarAnswer()
		}
	}
	s.Instruction = strings.Join(instr, " ")
	s.Kind = kindOf(s.Exemplars)
	return s, nil
}

// field sets the exemplar's field a Thought, Action, Observation or Answer line (numbered
// or not) holds to val, and returns it for the unlabelled lines that continue it. An
// unnumbered Thought before any step is the CoT reasoning; an Action after a step's
// action or observation starts a step.
func (ex *Exemplar) field(label, val string, numbered bool) *string {
	step := func() *Step {
		if len(ex.Steps) == 0 {
			ex.Steps = append(ex.Steps, Step{})
		}
		return &ex.Steps[len(ex.Steps)-1]
	}
	switch label {
	case "Thought":
		if !numbered && len(ex.Steps) == 0 {
			ex.Reasoning = val
			return &ex.Reasoning
		}
		ex.Steps = append(ex.Steps, Step{Thought: val})
		return &ex.Steps[len(ex.Steps)-1].Thought
	case "Action":
		st := step()
		if st.Action != "" || st.Observation != "" {
			ex.Steps = append(ex.Steps, Step{})
			st = &ex.Steps[len(ex.Steps)-1]
		}
		st.Action = val
		return &st.Action
	case "Observation":
		st := step()
		st.Observation = val
		return &st.Observation
	case "Answer":
		ex.Answer = val
		return &ex.Answer
	}
	return nil
}

// paperInstruction completes a paper entry that has no instruction of its own the way the
// task's notebook does: the HotpotQA notebook puts NotebookInstruction before the entries
// that act (ReAct, and Act, which the official code never ran: reactgen gives it the
// same tool instruction), the FEVER notebook nothing. Instruction, which the chat layout
// shows, falls back to def for a set that acts and to AnswerInstruction for one that
// does not, so that a CoT or Standard prompt never names tools it has not got.
func (s *Set) paperInstruction(def string) {
	if s.Instruction != "" {
		return
	}
	acts := s.Kind == KindReAct || s.Kind == KindAct
	switch {
	case acts && s.Task == pipeline.TaskHotpotQA:
		s.Instruction = strings.TrimSpace(NotebookInstruction)
		s.Text = NotebookInstruction + s.Text
		for i := range s.starts {
			s.starts[i] += len(NotebookInstruction)
		}
	case acts:
		s.Instruction = def
	default:
		s.Instruction = AnswerInstruction(s.Task)
	}
}
