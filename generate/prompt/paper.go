package prompt

import (
	"fmt"
	"regexp"
	"strings"
)

// paperLabel matches the labels of the paper's completion layout at the start of a line:
// "Question:", "Claim:", "Thought 3:", "Thought:", "Action 2:", "Observation 1:", "Answer:".
var paperLabel = regexp.MustCompile(`^(Question|Claim|Thought|Action|Observation|Answer)(?:\s*(\d+))?\s*:\s?`)

// ParsePaper parses one prompt string in the paper's completion layout into a Set. Text
// before the first Question or Claim is the instruction. The set's Kind follows from what
// the exemplars hold: numbered thoughts with actions (ReAct), actions only (Act), an
// unnumbered Thought with an Answer (CoT), or an Answer only (Standard).
func ParsePaper(text, task string) (Set, error) {
	s := Set{Task: task}
	var instr []string
	var cur *Exemplar
	var last *string // the field that an unlabelled line continues
	flush := func() {
		if cur != nil {
			s.Exemplars = append(s.Exemplars, *cur)
			cur = nil
		}
	}
	step := func() *Step {
		if len(cur.Steps) == 0 {
			cur.Steps = append(cur.Steps, Step{})
		}
		return &cur.Steps[len(cur.Steps)-1]
	}
	for n, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
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
			continue
		}
		if cur == nil {
			return Set{}, fmt.Errorf("line %d: %s before any Question or Claim", n+1, label)
		}
		switch label {
		case "Thought":
			if !numbered && len(cur.Steps) == 0 {
				cur.Reasoning = val
				last = &cur.Reasoning
				continue
			}
			cur.Steps = append(cur.Steps, Step{Thought: val})
			last = &cur.Steps[len(cur.Steps)-1].Thought
		case "Action":
			st := step()
			if st.Action != "" || st.Observation != "" {
				cur.Steps = append(cur.Steps, Step{})
				st = &cur.Steps[len(cur.Steps)-1]
			}
			st.Action = val
			last = &st.Action
		case "Observation":
			st := step()
			st.Observation = val
			last = &st.Observation
		case "Answer":
			cur.Answer = val
			last = &cur.Answer
		}
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
