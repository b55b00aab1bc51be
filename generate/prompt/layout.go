package prompt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/pipeline"
)

// Formats of a request.
const (
	FormatCompletion = "completion"
	FormatChat       = "chat"
)

// Turn is one earlier step of the episode, as the layout shows it to the model.
type Turn struct {
	Thought     string
	Action      string
	Observation string
	// Call is the function call the model made in the tools format; nil when its reply
	// held none (and in the text formats).
	Call *llm.ToolCall
}

// Request is the text of one model request: Prompt for the completion format, Messages
// for chat, and the stop sequences.
type Request struct {
	Prompt   string
	Messages []llm.Message
	Stop     []string
	Tools    []llm.Tool // the tools format's functions

	layout *Layout // the layout that rendered it, for Hash; nil for a request built by hand
}

// Layout renders the requests of one method in one format. Its prefix (the instruction
// and the exemplars) is computed once, so every request of a run starts with the same
// bytes. A Layout is immutable and safe for concurrent use.
type Layout struct {
	format   string
	kind     string
	label    string // Question or Claim
	prefix   string
	notebook bool     // the prefix is a set's verbatim Text: render as the paper's notebooks do
	trained  *trained // a fine-tuned model's layout (NewTrained); nil = few-shot
	hash     prefixHash
	// The tools format: the messages every request starts with (the system message and
	// the exemplars' turns) and the functions.
	head  []llm.Message
	tools []llm.Tool
}

// NewLayout builds the layout for a derived set (see Set.For) in format. In the
// completion format a set with a verbatim Text is sent as the paper's notebooks send it:
// the Text unchanged, the question line straight after it, and each earlier step as the
// notebooks append it (see Step).
func NewLayout(s Set, format string) (*Layout, error) {
	if format != FormatCompletion && format != FormatChat && format != FormatTools {
		return nil, fmt.Errorf("prompt format %q is not completion, chat or tools", format)
	}
	l := &Layout{format: format, kind: s.Kind, label: Label(s.Task)}
	if l.kind == "" {
		l.kind = kindOf(s.Exemplars)
	}
	if format == FormatTools {
		return newToolLayout(s, l.kind)
	}
	if format == FormatCompletion && s.Text != "" {
		l.prefix, l.notebook = s.Text, true
		l.hash = newPrefixHash(format, l.prefix)
		return l, nil
	}
	var b strings.Builder
	if s.Instruction != "" {
		b.WriteString(strings.TrimSpace(s.Instruction))
		b.WriteString("\n\n")
	}
	for i, ex := range s.Exemplars {
		if i > 0 {
			b.WriteString("\n")
		}
		l.writeExemplar(&b, ex)
	}
	if format == FormatCompletion {
		b.WriteString("\n")
	}
	l.prefix = b.String()
	if format == FormatChat {
		l.prefix = strings.TrimRight(l.prefix, "\n")
	}
	l.hash = newPrefixHash(format, l.prefix)
	return l, nil
}

// Label is the word that introduces a task item: "Claim" for FEVER, else "Question".
func Label(task string) string {
	if task == pipeline.TaskFEVER {
		return "Claim"
	}
	return "Question"
}

// Prefix is the byte-identical start of every request: the completion prompt's prefix,
// or the chat and tools formats' system message (in tools, the exemplars' turns follow
// it in every request).
func (l *Layout) Prefix() string { return l.prefix }

// Kind is the exemplar kind the layout renders (react, act, cot, standard).
func (l *Layout) Kind() string { return l.kind }

// Notebook reports whether the layout sends a paper prompt file's text verbatim, as the
// paper's notebooks do; the agent then reads completions as the notebooks read them.
func (l *Layout) Notebook() bool { return l.notebook }

// num renders " 3" in the completion format and nothing in chat.
func (l *Layout) num(i int) string {
	if l.format == FormatChat {
		return ""
	}
	return fmt.Sprintf(" %d", i)
}

func (l *Layout) writeExemplar(b *strings.Builder, ex Exemplar) {
	fmt.Fprintf(b, "%s: %s\n", l.label, ex.Question)
	switch l.kind {
	case KindCoT:
		fmt.Fprintf(b, "Thought: %s\nAnswer: %s\n", ex.Reasoning, ex.Answer)
	case KindStandard:
		fmt.Fprintf(b, "Answer: %s\n", ex.Answer)
	default:
		for i, st := range ex.Steps {
			n := l.num(i + 1)
			if l.kind == KindReAct {
				fmt.Fprintf(b, "Thought%s: %s\n", n, st.Thought)
			}
			fmt.Fprintf(b, "Action%s: %s\n", n, st.Action)
			if st.Observation != "" || i < len(ex.Steps)-1 {
				fmt.Fprintf(b, "Observation%s: %s\n", n, st.Observation)
			}
		}
	}
}

// Step renders the request for step len(history)+1 of a ReAct or Act episode. The model
// is to write the thought (ReAct) and the action; the stop sequence ends the completion
// before it writes an observation of its own. In the completion format each earlier step
// is "Thought i: …\nAction i: …\nObservation i: …\n" with the turn's text as it is (an
// observation that ends in a newline leaves a blank line); a notebook layout also drops
// every backslash-n pair of characters from observations, as the notebooks do before
// they append one.
func (l *Layout) Step(question string, history []Turn) Request {
	if l.trained != nil {
		return l.trainedStep(question, history)
	}
	i := len(history) + 1
	switch l.format {
	case FormatChat:
		return Request{Messages: l.chatHistory(question, history), Stop: []string{"\nObservation"}, layout: l}
	case FormatTools:
		return l.toolStep(question, history)
	}
	var b strings.Builder
	l.completionHistory(&b, question, history)
	num := strconv.Itoa(i)
	if l.kind == KindAct {
		b.WriteString("Action ")
	} else {
		b.WriteString("Thought ")
	}
	b.WriteString(num)
	b.WriteByte(':')
	return Request{Prompt: b.String(), Stop: []string{"\nObservation " + num + ":"}, layout: l}
}

// Reask renders the second request of a step whose completion held a thought but no
// action: the paper's code appended "Action i:" after the thought and asked again.
func (l *Layout) Reask(question string, history []Turn, thought string) Request {
	if l.trained != nil {
		return l.trainedReask(question, history, thought)
	}
	i := len(history) + 1
	if l.format == FormatTools {
		return l.ToolRetry(question, history, thought, nil, "Call one of the tools search, lookup or finish.")
	}
	if l.format == FormatChat {
		msgs := l.chatHistory(question, history)
		if thought != "" {
			msgs = append(msgs, llm.Message{Role: "assistant", Content: "Thought: " + thought})
		}
		msgs = append(msgs, llm.Message{Role: "user", Content: "Write only the Action of this step: Search[entity], Lookup[keyword] or Finish[answer]."})
		return Request{Messages: msgs, Stop: []string{"\nObservation"}, layout: l}
	}
	var b strings.Builder
	l.completionHistory(&b, question, history)
	if l.kind != KindAct {
		fmt.Fprintf(&b, "Thought %d: %s\n", i, thought)
	}
	fmt.Fprintf(&b, "Action %d:", i)
	return Request{Prompt: b.String(), Stop: []string{"\n"}, layout: l}
}

// Answer renders the single request of a CoT or Standard episode.
func (l *Layout) Answer(question string) Request {
	if l.trained != nil {
		return l.trainedAnswer(question)
	}
	if l.format == FormatChat {
		return Request{
			Messages: []llm.Message{{Role: "system", Content: l.prefix}, {Role: "user", Content: l.label + ": " + question}},
			Stop:     []string{"\n" + l.label + ":"},
			layout:   l,
		}
	}
	p := l.prefix + l.label + ": " + question + "\n"
	if l.kind == KindStandard {
		return Request{Prompt: p + "Answer:", Stop: []string{"\n"}, layout: l}
	}
	return Request{Prompt: p + "Thought:", Stop: []string{"\n" + l.label + ":"}, layout: l}
}

func (l *Layout) completionHistory(b *strings.Builder, question string, history []Turn) {
	// One allocation for the whole prompt: the exemplars alone are kilobytes, and a
	// builder that grows by doubling copies them again at each step.
	n := len(l.prefix) + len(l.label) + len(question) + 32
	for _, h := range history {
		n += len(h.Thought) + len(h.Action) + len(h.Observation) + 64
	}
	b.Grow(n)
	b.WriteString(l.prefix)
	b.WriteString(l.label)
	b.WriteString(": ")
	b.WriteString(question)
	b.WriteByte('\n')
	for j, h := range history {
		num := strconv.Itoa(j + 1)
		if l.kind != KindAct {
			b.WriteString("Thought ")
			b.WriteString(num)
			b.WriteString(": ")
			b.WriteString(h.Thought)
			b.WriteByte('\n')
		}
		obs := h.Observation
		if l.notebook {
			obs = strings.ReplaceAll(obs, `\n`, "")
		}
		b.WriteString("Action ")
		b.WriteString(num)
		b.WriteString(": ")
		b.WriteString(h.Action)
		b.WriteString("\nObservation ")
		b.WriteString(num)
		b.WriteString(": ")
		b.WriteString(obs)
		b.WriteByte('\n')
	}
}

func (l *Layout) chatHistory(question string, history []Turn) []llm.Message {
	msgs := make([]llm.Message, 0, 2+2*len(history))
	msgs = append(msgs, llm.Message{Role: "system", Content: l.prefix}, llm.Message{Role: "user", Content: l.label + ": " + question})
	return l.appendTurns(msgs, history)
}

// appendTurns appends each step of history to msgs as the chat format sends it: an
// assistant turn with the thought (none in Act) and the action, and a user turn with the
// observation.
func (l *Layout) appendTurns(msgs []llm.Message, history []Turn) []llm.Message {
	for _, h := range history {
		content := "Action: " + h.Action
		if l.kind != KindAct {
			content = "Thought: " + h.Thought + "\n" + content
		}
		msgs = append(msgs, llm.Message{Role: "assistant", Content: content}, llm.Message{Role: "user", Content: "Observation: " + h.Observation})
	}
	return msgs
}
