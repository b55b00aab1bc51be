package prompt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/tool"
)

// Prompting modes (generate.prompting).
const (
	PromptingFewShot = "few-shot" // instruction and exemplars, the paper's prompting
	PromptingTrained = "trained"  // the layout of a training example, for a fine-tuned model
)

// TrainedFormats are the export formats whose rendering a trained layout reproduces, by
// the request format that serves them.
var TrainedFormats = map[string][]string{
	FormatChat:       {"openai-chat", "axolotl-chat", "sharegpt", "agentgym"},
	FormatCompletion: {"completion"},
	FormatTools:      {"openai-tools", "hf-tools", "sharegpt-tools"},
}

// trained is how a trained layout renders: what the export wrote before the first
// assistant turn, and nothing else.
type trained struct {
	system     string // export.system; empty = none
	foldSystem bool   // agentgym: the system message opens the first user turn
	toolNames  bool   // hf-tools: a tool turn names the function it answers
}

// NewTrained builds the layout of a model fine-tuned on reactgen's export: no
// instruction, no exemplars, the system message only when the export had one
// (export.system), and the turns exactly as the export renders a training example up to
// the assistant turn the model is to write. exportFormat is the export format the model
// was trained on (TrainedFormats; empty = openai-chat for chat, completion for
// completion); kind is the view: react, act or standard.
func NewTrained(task, kind, format, exportFormat, system string) (*Layout, error) {
	allowed, ok := TrainedFormats[format]
	if !ok {
		return nil, fmt.Errorf("prompt format %q is not completion, chat or tools", format)
	}
	if exportFormat == "" {
		exportFormat = allowed[0]
	}
	if !slices.Contains(allowed, exportFormat) {
		return nil, fmt.Errorf("trained prompting in format %s reproduces the export formats %s, not %q",
			format, strings.Join(allowed, ", "), exportFormat)
	}
	switch {
	case format == FormatTools && kind != KindReAct && kind != KindAct:
		return nil, fmt.Errorf("trained prompting in format tools renders the export's views react and act, not %s", kind)
	case kind != KindReAct && kind != KindAct && kind != KindStandard:
		return nil, fmt.Errorf("trained prompting renders the export's views (react, act, standard), not %s", kind)
	}
	l := &Layout{format: format, kind: kind, label: Label(task),
		trained: &trained{system: system, foldSystem: exportFormat == "agentgym", toolNames: exportFormat == "hf-tools"}}
	if format == FormatTools {
		// The tool list is the export's (every tool format writes the task's tools); the
		// system message, when the export had one, opens every request.
		l.tools = llmTools(task)
		if system != "" {
			l.head = []llm.Message{{Role: "system", Content: system}}
			l.hash = newMessagesHash(l.head)
		}
		return l, nil
	}
	l.hash = newPrefixHash(format, "") // no prefix: every request starts with its own question
	return l, nil
}

// Trained reports whether the layout is a trained one (NewTrained).
func (l *Layout) Trained() bool { return l.trained != nil }

// CanReask reports whether a step without an action may be asked again for the action
// alone. A trained chat or tools layout cannot: the re-ask needs an instruction the
// model was not trained on, so the step's text goes to the environment as it is.
func (l *Layout) CanReask() bool { return l.trained == nil || l.format == FormatCompletion }

// trainedHead is the completion prompt before the trajectory: the export's completion
// prompt (the system message and a blank line, then the question line).
func (l *Layout) trainedHead(question string) string {
	q := l.label + ": " + question + "\n"
	if l.trained.system != "" {
		return l.trained.system + "\n\n" + q
	}
	return q
}

// trainedMessages are the export's turns before the first assistant turn.
func (l *Layout) trainedMessages(question string, history []Turn) []llm.Message {
	msgs := make([]llm.Message, 0, 2+2*len(history))
	q := l.label + ": " + question
	switch {
	case l.trained.system == "":
	case l.trained.foldSystem:
		q = l.trained.system + "\n\n" + q
	default:
		msgs = append(msgs, llm.Message{Role: "system", Content: l.trained.system})
	}
	msgs = append(msgs, llm.Message{Role: "user", Content: q})
	return l.appendTurns(msgs, history)
}

// trainedToolMessages are the tool exports' turns before the first assistant turn: the
// system message when the export had one, the question, then each earlier step as the
// export renders it: an assistant turn with the thought (none in Act) and the action as
// a call with the export's arguments, answered by a tool turn with the observation; a
// step whose action has no tool form as the export writes it, an assistant turn with the
// thought and the action text and a user turn with the observation. A call keeps the id
// the server gave it (the export's ids are its own, made from the episode); a tool turn
// names its function where the export's did (hf-tools).
func (l *Layout) trainedToolMessages(question string, history []Turn) []llm.Message {
	msgs := make([]llm.Message, 0, len(l.head)+1+2*len(history))
	msgs = append(msgs, l.head...)
	msgs = append(msgs, llm.Message{Role: "user", Content: l.label + ": " + question})
	for i, h := range history {
		a := env.ParseAction(h.Action)
		name, args, ok := tool.FromAction(a.Type, a.Argument)
		if !ok {
			content := "Action: " + h.Action
			if l.kind != KindAct && h.Thought != "" {
				content = h.Thought + "\n" + content
			}
			msgs = append(msgs, llm.Message{Role: "assistant", Content: content}, llm.Message{Role: "user", Content: "Observation: " + h.Observation})
			continue
		}
		c := llm.ToolCall{ID: TurnCallID(h.Call, i+1), Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}
		reply := llm.Message{Role: "tool", Content: h.Observation, ToolCallID: c.ID}
		if l.trained.toolNames {
			reply.Name = name
		}
		msgs = append(msgs, l.assistant(h.Thought, &c), reply)
	}
	return msgs
}

// trainedStep is Step for a trained layout. In the completion format the prompt ends
// where the export's completion of this step begins ("Thought i:" follows), so the model
// writes the step's labels itself, as it learned to.
func (l *Layout) trainedStep(question string, history []Turn) Request {
	i := len(history) + 1
	switch l.format {
	case FormatTools:
		return Request{Messages: l.trainedToolMessages(question, history), Tools: l.tools, layout: l}
	case FormatChat:
		return Request{Messages: l.trainedMessages(question, history), Stop: []string{"\nObservation"}, layout: l}
	}
	var b strings.Builder
	b.WriteString(l.trainedHead(question))
	for j, h := range history {
		if l.kind != KindAct {
			fmt.Fprintf(&b, "Thought %d: %s\n", j+1, h.Thought)
		}
		fmt.Fprintf(&b, "Action %d: %s\nObservation %d: %s\n", j+1, h.Action, j+1, h.Observation)
	}
	return Request{Prompt: b.String(), Stop: []string{fmt.Sprintf("\nObservation %d:", i)}, layout: l}
}

// trainedReask is Reask for a trained completion layout: the step's thought, then
// "Action i:", which is how the export's text goes on.
func (l *Layout) trainedReask(question string, history []Turn, thought string) Request {
	r := l.trainedStep(question, history)
	i := len(history) + 1
	if l.kind != KindAct {
		r.Prompt += fmt.Sprintf("Thought %d: %s\n", i, thought)
	}
	r.Prompt += fmt.Sprintf("Action %d:", i)
	r.Stop = []string{"\n"}
	return r
}

// trainedAnswer is Answer for a trained layout of the standard view: the question turn,
// to which the model answers "Answer: ...".
func (l *Layout) trainedAnswer(question string) Request {
	if l.format == FormatChat {
		return Request{Messages: l.trainedMessages(question, nil), Stop: []string{"\n" + l.label + ":"}, layout: l}
	}
	return Request{Prompt: l.trainedHead(question), Stop: []string{"\n" + l.label + ":"}, layout: l}
}
