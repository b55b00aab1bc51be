// Package prompt holds the few-shot exemplars and the prompt layouts of reactgen. It
// consumes exemplar files (reactgen's JSON, or an entry of the paper's prompt files) and
// produces, for one prompting method, the derived exemplar Set and the requests' text:
// the completion layout of the paper (Question / Thought 1 / Action 1 / Observation 1) or
// a chat layout (system, user, assistant turns). In both layouts the instruction and the
// exemplars form a prefix that is byte-identical in every request of a run and comes
// first, so that servers' prefix caches hit.
package prompt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

// Method names: pipeline's.
const (
	MethodStandard   = pipeline.MethodStandard
	MethodCoT        = pipeline.MethodCoT
	MethodCoTSC      = pipeline.MethodCoTSC
	MethodAct        = pipeline.MethodAct
	MethodReAct      = pipeline.MethodReAct
	MethodReActCoTSC = pipeline.MethodReActCoTSC
	MethodCoTSCReAct = pipeline.MethodCoTSCReAct
)

// Kinds of exemplar content, from richest to poorest.
const (
	KindReAct    = "react"    // thoughts, actions and observations
	KindAct      = "act"      // actions and observations
	KindCoT      = "cot"      // reasoning and answer
	KindStandard = "standard" // answer only
)

// Step is one Thought / Action / Observation of an exemplar. The last step's action is
// Finish[answer] and has no observation.
type Step struct {
	Thought     string `json:"thought,omitempty"`
	Action      string `json:"action,omitempty"`
	Observation string `json:"observation,omitempty"`
}

// Exemplar is one solved question shown to the model.
type Exemplar struct {
	Question  string `json:"question"`
	Answer    string `json:"answer"`
	Reasoning string `json:"reasoning,omitempty"` // CoT text; empty derives it from the thoughts
	Steps     []Step `json:"steps,omitempty"`
}

// Set is an instruction with its exemplars for one task. Kind says what the exemplars
// hold, and so which methods the set can serve (see For).
type Set struct {
	Task        string     `json:"task"`
	Instruction string     `json:"instruction"`
	Exemplars   []Exemplar `json:"exemplars"`
	Kind        string     `json:"-"`
	// Text, when set, is what the completion layout sends before the question, byte for
	// byte, instead of rendering Instruction and Exemplars: for an entry of a paper prompt
	// file, the notebook's instruction (if it adds one) and the entry verbatim, so that the
	// prompt is the one the paper's notebooks sent. The chat layout does not use it. For,
	// Truncate and WithInstruction keep it in step with the exemplars, or drop it.
	Text   string `json:"-"`
	starts []int  // the offset in Text where each exemplar begins
}

// ErrKind is returned by For when the set's exemplars lack what the method needs (for
// example, a Standard prompt file cannot serve ReAct).
var ErrKind = errors.New("prompt: exemplars do not fit the method")

// maxExemplarBytes bounds an exemplar file (the paper's largest is 60 KiB).
const maxExemplarBytes = 16 << 20

// Load reads the exemplars named by ref for task. An empty ref is the embedded default
// prompts/<task>.json in fsys; "FILE" is a reactgen exemplar JSON file on disk;
// "FILE#key" is one entry of a paper-style prompt file (a JSON object of prompt strings in
// the paper's completion layout), kept verbatim in the set's Text. A paper entry without
// an instruction of its own is completed as the task's notebook completes it (see
// NotebookInstruction); for the chat layout, an acting entry that the notebook leaves
// bare gets the embedded default's instruction (or a built-in one when fsys has none),
// and a CoT or Standard entry gets AnswerInstruction, never the tool instruction.
func Load(ref, task string, fsys fs.FS) (Set, error) {
	if ref == "" {
		if fsys == nil {
			return Set{}, fmt.Errorf("load default exemplars for %s: no embedded files", task)
		}
		name := "prompts/" + task + ".json"
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return Set{}, fmt.Errorf("load default exemplars %s: %w", name, err)
		}
		return decodeSet(name, b, task)
	}
	file, key, paper := strings.Cut(ref, "#")
	b, err := safefile.ReadFile(file, maxExemplarBytes)
	if err != nil {
		return Set{}, fmt.Errorf("load exemplars: %w", err)
	}
	if !paper {
		return decodeSet(file, b, task)
	}
	var entries map[string]string
	if err := json.Unmarshal(b, &entries); err != nil {
		return Set{}, fmt.Errorf("load prompt file %s: %w", file, err)
	}
	text, ok := entries[key]
	if !ok {
		return Set{}, fmt.Errorf("load prompt file %s: no key %q", file, key)
	}
	s, err := ParsePaper(text, task)
	if err != nil {
		return Set{}, fmt.Errorf("load prompt file %s key %s: %w", file, key, err)
	}
	def := DefaultInstruction(task)
	if fsys != nil {
		if d, err := Load("", task, fsys); err == nil && d.Instruction != "" {
			def = d.Instruction
		}
	}
	s.paperInstruction(def)
	return s, nil
}

func decodeSet(name string, b []byte, task string) (Set, error) {
	var s Set
	if err := json.Unmarshal(b, &s); err != nil {
		return Set{}, fmt.Errorf("decode exemplars %s: %w", name, err)
	}
	if s.Task != "" && task != "" && s.Task != task {
		return Set{}, fmt.Errorf("exemplars %s are for task %q, not %q", name, s.Task, task)
	}
	if s.Task == "" {
		s.Task = task
	}
	if len(s.Exemplars) == 0 {
		return Set{}, fmt.Errorf("exemplars %s: none in the file", name)
	}
	s.Kind = kindOf(s.Exemplars)
	return s, nil
}

// kindOf reports the richest kind every exemplar supports.
func kindOf(exs []Exemplar) string {
	thoughts, actions := true, true
	for _, ex := range exs {
		if len(ex.Steps) == 0 {
			thoughts, actions = false, false
			break
		}
		for _, st := range ex.Steps {
			if st.Action == "" {
				actions = false
			}
			if st.Thought == "" {
				thoughts = false
			}
		}
	}
	switch {
	case actions && thoughts:
		return KindReAct
	case actions:
		return KindAct
	}
	for _, ex := range exs {
		if ex.Reasoning == "" && !thoughts {
			return KindStandard
		}
	}
	return KindCoT
}

// DefaultInstruction is reactgen's own wording of the task instruction, used when neither
// the prompt file nor the embedded exemplars give one.
func DefaultInstruction(task string) string {
	if task == pipeline.TaskFEVER {
		return "Decide whether the evidence SUPPORTS or REFUTES the claim, or whether there is NOT ENOUGH INFO, " +
			"by interleaving Thought, Action and Observation steps. A Thought reasons about what is known so far. " +
			"An Action is one of: Search[entity], which returns the first sentences of the entity's page or similar titles; " +
			"Lookup[keyword], which returns the next sentence with the keyword on the current page; " +
			"Finish[label], which ends the task with SUPPORTS, REFUTES or NOT ENOUGH INFO."
	}
	return "Answer the question by interleaving Thought, Action and Observation steps. A Thought reasons about " +
		"what is known so far. An Action is one of: Search[entity], which returns the first sentences of the entity's " +
		"page or similar titles; Lookup[keyword], which returns the next sentence with the keyword on the current page; " +
		"Finish[answer], which ends the task with the answer."
}

// AnswerInstruction is reactgen's instruction for the methods without actions (CoT and
// Standard), used when their exemplars are derived from ReAct or Act ones.
func AnswerInstruction(task string) string {
	if task == pipeline.TaskFEVER {
		return "Decide whether the claim is SUPPORTED or REFUTED by what you know, or whether there is NOT ENOUGH INFO, " +
			"and end with the label."
	}
	return "Answer the question. End with the answer as a short phrase."
}

// MethodKind is the exemplar kind a method prompts with. Combined methods prompt with
// both ReAct and CoT; MethodKind returns ReAct for them.
func MethodKind(method string) string {
	switch method {
	case MethodStandard:
		return KindStandard
	case MethodCoT, MethodCoTSC:
		return KindCoT
	case MethodAct:
		return KindAct
	}
	return KindReAct
}

var derivable = map[string][]string{
	KindReAct:    {KindReAct, KindAct, KindCoT, KindStandard},
	KindAct:      {KindAct, KindStandard},
	KindCoT:      {KindCoT, KindStandard},
	KindStandard: {KindStandard},
}

// For derives the exemplars a method prompts with, by the paper's rule: Act drops the
// thoughts; CoT drops actions and observations and keeps the reasoning (the exemplar's
// Reasoning, else its thoughts joined) and the answer; Standard keeps question and answer.
// The combined methods react-cot-sc and cot-sc-react use For(react) and For(cot).
func (s Set) For(method string) (Set, error) {
	want := MethodKind(method)
	kind := s.Kind
	if kind == "" {
		kind = kindOf(s.Exemplars)
	}
	ok := false
	for _, k := range derivable[kind] {
		ok = ok || k == want
	}
	if !ok {
		return Set{}, fmt.Errorf("%w: %s exemplars cannot serve method %s", ErrKind, kind, method)
	}
	out := Set{Task: s.Task, Instruction: s.Instruction, Kind: want, Exemplars: make([]Exemplar, len(s.Exemplars))}
	if want == kind {
		// The exemplars are the method's own: a verbatim text still shows them.
		out.Text, out.starts = s.Text, s.starts
	}
	if (want == KindCoT || want == KindStandard) && (kind == KindReAct || kind == KindAct) {
		// The acting instruction names tools that a CoT or Standard prompt has not got.
		out.Instruction = AnswerInstruction(s.Task)
	}
	for i, ex := range s.Exemplars {
		d := Exemplar{Question: ex.Question, Answer: ex.exemplarAnswer()}
		switch want {
		case KindReAct:
			d.Steps = ex.Steps
		case KindAct:
			for _, st := range ex.Steps {
				d.Steps = append(d.Steps, Step{Action: st.Action, Observation: st.Observation})
			}
		case KindCoT:
			d.Reasoning = ex.reasoning()
		}
		out.Exemplars[i] = d
	}
	return out, nil
}

// Truncate keeps the first n exemplars; n <= 0 keeps all. A verbatim Text is cut where
// exemplar n+1 began, so what stays is byte for byte the file's first n.
func (s Set) Truncate(n int) Set {
	if n > 0 && n < len(s.Exemplars) {
		s.Exemplars = s.Exemplars[:n:n]
		if s.Text != "" && n < len(s.starts) {
			s.Text, s.starts = s.Text[:s.starts[n]], s.starts[:n:n]
		}
	}
	return s
}

// WithInstruction replaces the instruction (generate.instruction). In a verbatim Text,
// everything before the first exemplar (the file's own instruction, the notebook's) is
// replaced by instr and a newline.
func (s Set) WithInstruction(instr string) Set {
	s.Instruction = instr
	if s.Text == "" || len(s.starts) == 0 {
		return s
	}
	head := instr + "\n"
	delta := len(head) - s.starts[0]
	s.Text = head + s.Text[s.starts[0]:]
	starts := make([]int, len(s.starts))
	for i, o := range s.starts {
		starts[i] = o + delta
	}
	s.starts = starts
	return s
}

func (ex Exemplar) reasoning() string {
	if ex.Reasoning != "" {
		return ex.Reasoning
	}
	var parts []string
	for _, st := range ex.Steps {
		if t := strings.TrimSpace(st.Thought); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " ")
}

// exemplarAnswer is the answer, or the last Finish argument when the answer is unset.
func (ex Exemplar) exemplarAnswer() string {
	if ex.Answer != "" {
		return ex.Answer
	}
	for i := len(ex.Steps) - 1; i >= 0; i-- {
		if arg, ok := FinishArgument(ex.Steps[i].Action); ok {
			return arg
		}
	}
	return ""
}

// FinishArgument returns X for an action Finish[X] in any case.
func FinishArgument(action string) (string, bool) {
	a := strings.TrimSpace(action)
	if len(a) < 8 || !strings.EqualFold(a[:7], "finish[") || !strings.HasSuffix(a, "]") {
		return "", false
	}
	return strings.TrimSpace(a[7 : len(a)-1]), true
}
