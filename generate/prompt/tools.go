package prompt

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// FormatTools is the native tool-calling format: the chat endpoint with the functions
// search, lookup and finish (internal/tool) in the request's tools list. The model's
// thought is the assistant turn's content, its action the turn's one function call, and
// each observation goes back as a tool turn answering that call.
const FormatTools = "tools"

// ToolInstruction is reactgen's instruction for the tools format, used unless
// generate.instruction sets one: the text formats' instructions name Search[entity] and
// the other actions as text, which a tool-calling model is not to write.
func ToolInstruction(task string) string {
	if task == pipeline.TaskFEVER {
		return "Decide whether the evidence SUPPORTS or REFUTES the claim, or whether there is NOT ENOUGH INFO. " +
			"Work in steps. In each step, first write your reasoning about what is known so far and what to find next, " +
			"then call exactly one of the tools: search opens an entity's page, lookup finds the next sentence with a " +
			"keyword on that page, and finish ends the task with the verdict."
	}
	return "Answer the question. Work in steps. In each step, first write your reasoning about what is known so far " +
		"and what to find next, then call exactly one of the tools: search opens an entity's page, lookup finds the " +
		"next sentence with a keyword on that page, and finish ends the task with the answer."
}

// FinishedReply is the tool turn that answers an exemplar's finish call: the chat API
// wants every call answered before the next user turn. It is the environment's
// observation for Finish.
const FinishedReply = "Episode finished."

// ExemplarCallID is the id of the call of exemplar i's step j (both from 1).
func ExemplarCallID(i, j int) string { return fmt.Sprintf("call_ex%d_%d", i, j) }

// TurnCallID is the id under which a turn's call is sent: the id the server gave it, or,
// when it gave none, one made from the step number (from 1).
func TurnCallID(c *llm.ToolCall, step int) string {
	if c != nil && c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("call_%d", step)
}

// Tools are the layout's tool definitions in the request's form; nil outside the tools
// format.
func (l *Layout) Tools() []llm.Tool { return l.tools }

// llmTools converts the task's tool definitions to the request's form.
func llmTools(task string) []llm.Tool {
	defs := tool.Defs(task)
	out := make([]llm.Tool, len(defs))
	for i, d := range defs {
		params, err := json.Marshal(d.Function.Parameters)
		if err != nil {
			panic("prompt: tool schema does not marshal: " + err.Error()) // built from constants
		}
		out[i] = llm.Tool{Type: "function", Function: llm.FunctionDef{
			Name: d.Function.Name, Description: d.Function.Description, Parameters: params,
		}}
	}
	return out
}

// newToolLayout builds the tools layout of a react or act set: the system message holds
// the instruction, and each exemplar follows as earlier turns of the same conversation
// (its question as a user turn, each step as an assistant turn with the thought as
// content and the action as a call, the observation as the tool turn answering it).
func newToolLayout(s Set, kind string) (*Layout, error) {
	if kind != KindReAct && kind != KindAct {
		return nil, fmt.Errorf("prompt format tools serves react and act, not %s exemplars", kind)
	}
	l := &Layout{format: FormatTools, kind: kind, label: Label(s.Task), prefix: strings.TrimSpace(s.Instruction),
		tools: llmTools(s.Task)}
	l.head = append(l.head, llm.Message{Role: "system", Content: l.prefix})
	for i, ex := range s.Exemplars {
		l.head = append(l.head, llm.Message{Role: "user", Content: l.label + ": " + ex.Question})
		for j, st := range ex.Steps {
			a := env.ParseAction(st.Action)
			name, args, ok := tool.FromAction(a.Type, a.Argument)
			if !ok {
				return nil, fmt.Errorf("exemplar %d step %d: action %q has no tool form (want Search[...], Lookup[...] or Finish[...])", i+1, j+1, st.Action)
			}
			call := llm.ToolCall{ID: ExemplarCallID(i+1, j+1), Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}
			obs := st.Observation
			if a.Type == pipeline.ActionFinish && obs == "" {
				obs = FinishedReply
			}
			l.head = append(l.head, l.assistant(st.Thought, &call), llm.Message{Role: "tool", Content: obs, ToolCallID: call.ID})
		}
	}
	l.hash = newMessagesHash(l.head)
	return l, nil
}

// assistant is one assistant turn: the thought (none in Act) and the call.
func (l *Layout) assistant(thought string, call *llm.ToolCall) llm.Message {
	m := llm.Message{Role: "assistant"}
	if l.kind != KindAct {
		m.Content = thought
	}
	if call != nil {
		m.ToolCalls = []llm.ToolCall{*call}
	}
	return m
}

// toolHistory is the head, the question and the episode's steps: a step with a call is an
// assistant turn with that call and a tool turn with the observation; a step whose reply
// held no call is an assistant turn with its text and a user turn with the observation.
func (l *Layout) toolHistory(question string, history []Turn, extra int) []llm.Message {
	msgs := make([]llm.Message, 0, len(l.head)+1+2*len(history)+extra)
	msgs = append(msgs, l.head...)
	msgs = append(msgs, llm.Message{Role: "user", Content: l.label + ": " + question})
	for i, h := range history {
		if h.Call == nil {
			msgs = append(msgs, llm.Message{Role: "assistant", Content: h.Thought}, llm.Message{Role: "user", Content: h.Observation})
			continue
		}
		c := *h.Call
		c.ID, c.Type = TurnCallID(h.Call, i+1), "function"
		if !json.Valid([]byte(c.Function.Arguments)) {
			// Servers decode the arguments of earlier calls to render their chat template.
			c.Function.Arguments = "{}"
		}
		msgs = append(msgs, l.assistant(h.Thought, &c), llm.Message{Role: "tool", Content: h.Observation, ToolCallID: c.ID})
	}
	return msgs
}

// toolStep is Step in the tools format. It sends no stop sequence: one could cut a call
// short on servers that write calls as text before parsing them.
func (l *Layout) toolStep(question string, history []Turn) Request {
	return Request{Messages: l.toolHistory(question, history, 0), Tools: l.tools, layout: l}
}

// ToolRetry renders the second request of a step whose reply had no usable call: the
// history, the reply as the model sent it (its content and its calls), and problem, what was wrong with it: as the tool turn answering each
// call (none of which was run), or, when the reply held no call, as a user turn.
func (l *Layout) ToolRetry(question string, history []Turn, content string, calls []llm.ToolCall, problem string) Request {
	msgs := l.toolHistory(question, history, 2+len(calls))
	reply := llm.Message{Role: "assistant", Content: content}
	for i, c := range calls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", len(history)+1, i+1)
		}
		c.Type = "function"
		if !json.Valid([]byte(c.Function.Arguments)) {
			c.Function.Arguments = "{}"
		}
		reply.ToolCalls = append(reply.ToolCalls, c)
	}
	msgs = append(msgs, reply)
	for _, c := range reply.ToolCalls {
		msgs = append(msgs, llm.Message{Role: "tool", Content: "Error: " + problem, ToolCallID: c.ID})
	}
	if len(calls) == 0 {
		msgs = append(msgs, llm.Message{Role: "user", Content: problem})
	}
	return Request{Messages: msgs, Tools: l.tools, layout: l}
}
