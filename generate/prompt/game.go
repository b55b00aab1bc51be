package prompt

import (
	"encoding/json"
	"fmt"

	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// The paper's text games (ALFWorld and WebShop) are prompted as the paper's notebooks
// prompt them (ysymyth/ReAct alfworld.ipynb and WebShop.ipynb): a prompt file's entries
// verbatim, the game's first observation, then each action and observation appended as
// the notebook appends them. GameLayout renders those requests.

// ALFWorldInstruction opens every ALFWorld prompt, as alfworld.ipynb writes it.
const ALFWorldInstruction = "Interact with a household to solve a task. Here are two examples.\n"

// alfworldTypes maps an ALFWorld task type (the game file's folder name) to the prompt
// file's name for it, in the order the notebook tries its prefixes.
var alfworldTypes = []struct{ prefix, name string }{
	{"pick_and_place", "put"},
	{"pick_clean_then_place", "clean"},
	{"pick_heat_then_place", "heat"},
	{"pick_cool_then_place", "cool"},
	{"look_at_obj", "examine"},
	{"pick_two_obj", "puttwo"},
}

// WebShopWindow is the WebShop notebook's prompt budget in characters: the running
// prompt is cut to its last 6400 - len(one-shot prompt) characters.
const WebShopWindow = 6400

// GameLayout renders the requests of a game in one format. It is immutable and safe for
// concurrent use.
type GameLayout struct {
	task, kind, format string
	entries            map[string]string
}

// LoadGameEntries reads a paper-style prompt file (a JSON object of prompt strings) for
// a game task: ref is the file, optionally with a "#key" that is ignored (the game's
// type picks the entries).
func LoadGameEntries(ref string) (map[string]string, error) {
	file, _, _ := strings.Cut(ref, "#")
	const maxBytes = 16 << 20
	b, err := safefile.ReadFile(file, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("load prompt file: %w", err)
	}
	var entries map[string]string
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, fmt.Errorf("load prompt file %s: it is not a JSON object of prompt strings: %w", file, err)
	}
	return entries, nil
}

// NewGameLayout builds the layout of task (alfworld, webshop) for method (react, act) in
// format over a prompt file's entries, failing, with the keys it lacks, on a file that
// cannot serve it: ALFWorld needs "<method>_<type>_0" and "_1" for each of the six task
// types, WebShop "webshop_<method>_1".
func NewGameLayout(task, method, format string, entries map[string]string) (*GameLayout, error) {
	if method != MethodReAct && method != MethodAct {
		return nil, fmt.Errorf("%s is played by react or act, not %s", task, method)
	}
	if format != FormatCompletion && format != FormatChat && format != FormatTools {
		return nil, fmt.Errorf("prompt format %q is not completion, chat or tools", format)
	}
	var need []string
	switch task {
	case pipeline.TaskALFWorld:
		for _, t := range alfworldTypes {
			need = append(need, fmt.Sprintf("%s_%s_1", method, t.name), fmt.Sprintf("%s_%s_0", method, t.name))
		}
	case pipeline.TaskWebShop:
		need = []string{"webshop_" + method + "_1"}
	default:
		return nil, fmt.Errorf("%s is not a game task", task)
	}
	var missing []string
	for _, k := range need {
		if _, ok := entries[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		have := make([]string, 0, len(entries))
		for k := range entries {
			have = append(have, k)
		}
		sort.Strings(have)
		return nil, fmt.Errorf("the prompt file has no %s for %s %s (it has %s)", strings.Join(missing, ", "), task, method, strings.Join(have, ", "))
	}
	return &GameLayout{task: task, kind: method, format: format, entries: entries}, nil
}

// Format is the layout's request format.
func (l *GameLayout) Format() string { return l.format }

// Prefix is the prompt before the game: for ALFWorld, the notebook's instruction, the
// two exemplars of the game's type (taskType is the type the server reports, e.g.
// "pick_and_place_simple-Pen-None-Desk-1/trial_…"; the notebook matches its name's
// prefix) and "\nHere is the task.\n"; for WebShop, the one-shot prompt.
func (l *GameLayout) Prefix(taskType string) (string, error) {
	if l.task == pipeline.TaskWebShop {
		return l.entries["webshop_"+l.kind+"_1"], nil
	}
	for _, t := range alfworldTypes {
		if strings.HasPrefix(taskType, t.prefix) {
			return ALFWorldInstruction + l.entries[fmt.Sprintf("%s_%s_1", l.kind, t.name)] +
				l.entries[fmt.Sprintf("%s_%s_0", l.kind, t.name)] + "\nHere is the task.\n", nil
		}
	}
	return "", fmt.Errorf("ALFWorld task type %q matches none of the notebook's prefixes (pick_and_place, pick_clean_then_place, pick_heat_then_place, pick_cool_then_place, look_at_obj, pick_two_obj)", taskType)
}

// Step renders the request for the next action of a game that started with start (the
// reset's observation), after history (each turn's Action as sent and its Observation
// as shown).
//
// Completion: ALFWorld, prefix + start + "\n>", then " action\nobservation\n>" per
// turn, stopped at the newline; WebShop, prefix + the last 6400 - len(prefix)
// characters of start + "\n\nAction:" and " action\nObservation: observation\n\nAction:"
// per turn, as Python's slice prompt[-(6400-len(init_prompt)):] cuts it. Chat: the
// prefix as the system message, start and each observation as user turns, each action
// as an assistant turn. Tools: the same with the game's action set as functions, each
// action as its call and each observation as the call's tool turn.
func (l *GameLayout) Step(prefix, start string, history []Turn) Request {
	stop := []string{"\n"}
	switch l.format {
	case FormatCompletion:
		var b strings.Builder
		if l.task == pipeline.TaskALFWorld {
			b.WriteString(prefix)
			b.WriteString(start)
			b.WriteString("\n>")
			for _, t := range history {
				b.WriteString(" " + t.Action + "\n" + t.Observation + "\n>")
			}
			return Request{Prompt: b.String(), Stop: stop}
		}
		b.WriteString(start + "\n\nAction:")
		for _, t := range history {
			b.WriteString(" " + t.Action + "\nObservation: " + t.Observation + "\n\nAction:")
		}
		return Request{Prompt: prefix + PyTail(b.String(), WebShopWindow-utf8.RuneCountInString(prefix)), Stop: stop}
	case FormatTools:
		msgs := []llm.Message{{Role: "system", Content: strings.TrimRight(prefix, "\n")}, {Role: "user", Content: start}}
		for i, t := range history {
			name, args, ok := tool.ParseCommand(l.task, t.Action)
			if t.Call != nil {
				name, args, ok = t.Call.Function.Name, t.Call.Function.Arguments, true
			}
			if !ok {
				msgs = append(msgs, llm.Message{Role: "assistant", Content: t.Action}, llm.Message{Role: "user", Content: t.Observation})
				continue
			}
			id := fmt.Sprintf("call_%d", i+1)
			if t.Call != nil && t.Call.ID != "" {
				id = t.Call.ID
			}
			msgs = append(msgs,
				llm.Message{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: id, Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}}},
				llm.Message{Role: "tool", Content: t.Observation, ToolCallID: id, Name: name})
		}
		return Request{Messages: msgs, Tools: l.Tools()}
	}
	msgs := []llm.Message{{Role: "system", Content: strings.TrimRight(prefix, "\n")}, {Role: "user", Content: start}}
	for _, t := range history {
		msgs = append(msgs, llm.Message{Role: "assistant", Content: t.Action}, llm.Message{Role: "user", Content: t.Observation})
	}
	return Request{Messages: msgs, Stop: stop}
}

// Tools are the game's action set as functions (think included for react).
func (l *GameLayout) Tools() []llm.Tool {
	var out []llm.Tool
	for _, d := range tool.CommandDefs(l.task, l.kind == MethodReAct) {
		params, err := json.Marshal(d.Function.Parameters)
		if err != nil {
			panic(err) // built from constants
		}
		out = append(out, llm.Tool{Type: "function", Function: llm.FunctionDef{Name: d.Function.Name, Description: d.Function.Description, Parameters: params}})
	}
	return out
}

// Action reads the action from a completion as the notebook does: ALFWorld strips it
// (Python's str.strip()), WebShop strips leading spaces (.lstrip(' ')). The completion
// ends at the stop sequence, the newline, and a completion a server did not stop is
// cut at its first newline as the notebook's stop would have cut it. In chat, a leading
// "> " (ALFWorld) or "Action: " (WebShop) that a chat model copies from the exemplars'
// layout is dropped.
func (l *GameLayout) Action(completion string) string {
	line, _, _ := strings.Cut(completion, "\n")
	if l.task == pipeline.TaskALFWorld {
		a := PyStrip(line)
		if l.format == FormatChat {
			if rest, ok := strings.CutPrefix(a, ">"); ok {
				a = PyStrip(rest)
			}
		}
		return a
	}
	a := strings.TrimLeft(line, " ")
	if l.format == FormatChat {
		if rest, ok := strings.CutPrefix(a, "Action:"); ok {
			a = strings.TrimLeft(rest, " ")
		}
	}
	return a
}

// Think reports whether an action is the game's reasoning action, which the notebook
// answers "OK.": ALFWorld's starts with "think:", WebShop's with "think".
func (l *GameLayout) Think(action string) bool {
	if l.task == pipeline.TaskALFWorld {
		return strings.HasPrefix(action, "think:")
	}
	return strings.HasPrefix(action, "think")
}

// PyTail is Python's s[-n:] on the characters (code points) of s: the last n when n > 0,
// all of s when n is 0 (s[-0:] is s[0:]), and s less its first -n when n < 0.
func PyTail(s string, n int) string {
	count := utf8.RuneCountInString(s)
	from := 0 // the code point the slice starts at
	switch {
	case n > 0:
		from = max(count-n, 0)
	case n < 0:
		from = min(-n, count)
	}
	if from == 0 {
		return s
	}
	i := 0
	for k := range s {
		if i == from {
			return s[k:]
		}
		i++
	}
	return ""
}

// PyStrip is Python's str.strip(): it trims the characters str.isspace() holds, which are
// Go's unicode.IsSpace and the separators U+001C to U+001F.
func PyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
}

// GameInput pins a game's prompt file for resume.
func GameInput(ref string) (pipeline.Input, error) {
	file, _, _ := strings.Cut(ref, "#")
	in, err := pipeline.DescribeInput("exemplars", file)
	if err != nil {
		return pipeline.Input{}, err
	}
	return in, nil
}
