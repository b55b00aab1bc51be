package generate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// ErrToolsRefused is returned, wrapping llm.ErrToolsUnsupported and the server's answer,
// when the model server refuses a request of generate.format tools because of its tools.
// It stops the run: every other request would be refused the same way.
var ErrToolsRefused = errors.New("generate.format tools: the model server refused the tools list; " +
	"if the model or server cannot call tools, use generate.format chat or completion")

// ToolActor is the model's policy in the tools format (ReAct and Act): it sends the
// step's messages with the functions search, lookup and finish, and reads the thought
// from the reply's content (or its reasoning field when the content is empty) and the
// action from its one function call. A reply without exactly one well-formed call
// (unknown function, arguments that are not a JSON object, a missing argument, several
// calls, text and no call) is counted as a bad call and asked once more, with the
// problem as the tool turn answering each call or, with no call, as a user turn (not in
// a trained layout, whose model never saw such a turn). If the second reply is no better,
// the environment answers the step with its invalid-action observation. Safe for
// concurrent use when Client is.
type ToolActor struct {
	Client      llm.Client
	Layout      *prompt.Layout // a tools layout (prompt.FormatTools)
	Model       string
	Temperature float64
	TopP        float64
	MaxTokens   int
	Stop        []string
	Seed        int64
	Attempt     int
	KeepPrompts bool
	Logprobs    bool // llm.logprobs
	TokenIDs    bool // llm.token_ids
}

var _ Actor = (*ToolActor)(nil)

// Act decides the next move.
func (a *ToolActor) Act(ctx context.Context, q pipeline.Question, history []pipeline.Step) (Move, error) {
	turns := make([]prompt.Turn, len(history))
	for i, st := range history {
		turns[i] = prompt.Turn{Thought: st.Thought, Action: st.Action, Observation: st.Observation}
		if c := st.ToolCall; c != nil {
			turns[i].Call = &llm.ToolCall{ID: c.ID, Type: "function", Function: llm.FunctionCall{Name: c.Name, Arguments: c.Arguments}}
		}
	}
	var mv Move
	pr := a.Layout.Step(q.Question, turns)
	call, resp, err := a.send(ctx, pr)
	mv.Calls = append(mv.Calls, call)
	if err != nil {
		return mv, err
	}
	first := resp.Choices[0]
	mv.Thought = thoughtOf(first)
	action, raw, problem := readCalls(first.ToolCalls)
	mv.ToolCall = raw
	if problem == "" {
		mv.Action = action
		return mv, nil
	}
	mv.Calls[0].Bad = true
	mv.Bad++
	if !a.Layout.CanReask() {
		// A trained layout: the model never saw the retry's message, so the environment
		// answers the reply as it is.
		mv.Action = malformed(first)
		return mv, nil
	}
	pr = a.Layout.ToolRetry(q.Question, turns, first.Text, first.ToolCalls, problem)
	call, resp, err = a.send(ctx, pr)
	mv.Calls = append(mv.Calls, call)
	if err != nil {
		return mv, err
	}
	second := resp.Choices[0]
	if mv.Thought == "" {
		mv.Thought = thoughtOf(second)
	}
	action, raw, problem2 := readCalls(second.ToolCalls)
	if problem2 == "" {
		mv.Action, mv.ToolCall = action, raw
		return mv, nil
	}
	mv.ToolCall = raw
	// The environment answers what is left with its invalid-action observation. The
	// text holds no "[" after a name, so it never reads as an action of the text formats.
	mv.Action = malformed(second)
	return mv, nil
}

// thoughtOf is the reply's thought: its content, or its reasoning when it has no content.
func thoughtOf(c llm.Choice) string {
	if t := strings.TrimSpace(c.Text); t != "" {
		return t
	}
	return strings.TrimSpace(c.Reasoning)
}

// readCalls reads a reply's calls: the canonical action of its one well-formed call and
// the call as the model made it, or, for anything else, a problem to tell the model (and
// the first call, if there is one).
func readCalls(calls []llm.ToolCall) (action string, raw *pipeline.ToolCall, problem string) {
	if len(calls) > 0 {
		c := calls[0]
		raw = &pipeline.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments}
	}
	switch len(calls) {
	case 0:
		return "", nil, "No tool was called. Call exactly one of the tools search, lookup or finish."
	case 1:
	default:
		return "", raw, fmt.Sprintf("%d tools were called in one turn, so none was run. Call exactly one tool per turn.", len(calls))
	}
	act, err := tool.ToAction(raw.Name, raw.Arguments)
	if err != nil {
		return "", raw, "The call was not run: " + err.Error() + "."
	}
	if act.Argument == "" {
		return "", raw, fmt.Sprintf("The call was not run: %s: the argument is empty.", raw.Name)
	}
	return act.Text, raw, ""
}

// malformed is the action text of a reply with no usable call: the calls written as
// name(arguments), or "(no tool call)".
func malformed(c llm.Choice) string {
	if len(c.ToolCalls) == 0 {
		return "(no tool call)"
	}
	parts := make([]string, len(c.ToolCalls))
	for i, tc := range c.ToolCalls {
		parts[i] = tc.Function.Name + "(" + tc.Function.Arguments + ")"
	}
	return strings.Join(parts, "; ")
}

// send sends one request and records it as a Call with the reply's function calls.
func (a *ToolActor) send(ctx context.Context, pr prompt.Request) (pipeline.Call, llm.Response, error) {
	sd := int(a.Seed)
	req := llm.Request{
		Model: a.Model, Messages: pr.Messages, Tools: pr.Tools, Temperature: a.Temperature, TopP: a.TopP,
		MaxTokens: a.MaxTokens, Stop: append(append([]string(nil), pr.Stop...), a.Stop...), Seed: &sd, Attempt: a.Attempt,
		Logprobs: a.Logprobs, TokenIDs: a.TokenIDs,
	}
	call, resp, err := send(ctx, a.Client, req, pr, a.KeepPrompts)
	if errors.Is(err, llm.ErrToolsUnsupported) {
		return call, resp, fmt.Errorf("%w: %w", ErrToolsRefused, err)
	}
	if err != nil {
		return call, resp, err
	}
	for _, tc := range resp.Choices[0].ToolCalls {
		call.ToolCalls = append(call.ToolCalls, pipeline.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return call, resp, nil
}
