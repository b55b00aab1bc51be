// Package tool is the native tool-calling form of the ReAct action space: the three
// functions search(entity), lookup(keyword) and finish(answer) as OpenAI-style tool
// definitions with JSON Schema parameters, and the conversion between a tool call and the
// canonical action text (Search[X]) that episode records keep. The exporter renders tool
// turns with it; tool-calling generation reads model calls back with it. It consumes
// tool calls (a name and JSON arguments) or action text and produces the other form, and
// the tool definitions a request carries.
package tool

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/reactgen/reactgen/internal/jsonenc"
	"github.com/reactgen/reactgen/pipeline"
)

// Function names, one per action type.
const (
	Search = "search"
	Lookup = "lookup"
	Finish = "finish"
)

// Def is one tool as OpenAI's chat API and fine-tuning files declare it:
// {"type": "function", "function": {"name", "description", "parameters"}}.
type Def struct {
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function is a Def's function: its name, what it does, and a JSON Schema of its
// arguments.
type Function struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  Schema `json:"parameters"`
}

// Schema is the JSON Schema subset the three tools need: an object of string properties.
type Schema struct {
	Type                 string              `json:"type"`
	Properties           map[string]Property `json:"properties"`
	Required             []string            `json:"required"`
	AdditionalProperties bool                `json:"additionalProperties"`
}

// Property is one string argument, optionally limited to an enumeration.
type Property struct {
	Type        string   `json:"type"`
	Description string   `json:"description"`
	Enum        []string `json:"enum,omitempty"`
}

// argument is the one parameter of each function.
var argument = map[string]string{Search: "entity", Lookup: "keyword", Finish: "answer"}

// Defs returns the tools of a task, in the order search, lookup, finish. The descriptions
// restate the paper's action space: search an entity's page (or get similar titles),
// look up the next sentence with a keyword on that page, finish with the answer. For
// FEVER, finish's answer is one of the three labels.
func Defs(task string) []Def {
	if Game(task) {
		return CommandDefs(task, true)
	}
	str := func(desc string) Property { return Property{Type: "string", Description: desc} }
	obj := func(name string, p Property) Schema {
		return Schema{Type: "object", Properties: map[string]Property{name: p}, Required: []string{name}}
	}
	answer := str("The answer to the question, as short as possible: a name, a date, a number, or yes or no.")
	finishDesc := "Give the final answer and end the task."
	if task == pipeline.TaskFEVER {
		answer = Property{Type: "string", Description: "The verdict on the claim.",
			Enum: []string{pipeline.LabelSupports, pipeline.LabelRefutes, pipeline.LabelNEI}}
		finishDesc = "Give the verdict on the claim and end the task: SUPPORTS if the evidence found supports it, " +
			"REFUTES if it contradicts it, NOT ENOUGH INFO if neither can be shown."
	}
	fn := func(name, desc string, s Schema) Def {
		return Def{Type: "function", Function: Function{Name: name, Description: desc, Parameters: s}}
	}
	return []Def{
		fn(Search, "Look up an entity on Wikipedia by its exact name. Returns the first sentences of its page or, "+
			"when no page has that name, a few similar titles that could be searched instead.",
			obj("entity", str("The name of the page to open, e.g. a person, place, work or event."))),
		fn(Lookup, "Find the next sentence containing a keyword on the page the last search opened. "+
			"Calling it again with the same keyword returns the following match.",
			obj("keyword", str("The word or phrase to find on the current page."))),
		fn(Finish, finishDesc, obj("answer", answer)),
	}
}

// JSON is Defs(task) encoded as a JSON array, the form LLaMA-Factory's tools column and
// chat templates take.
func JSON(task string) string {
	data, err := json.Marshal(Defs(task))
	if err != nil {
		panic(err) // built from constants
	}
	return string(data)
}

// FromAction returns the function and its JSON arguments for a canonical action of
// the given type and argument, e.g. ("search", "Ada Lovelace") -> search,
// {"entity":"Ada Lovelace"}. ok is false for an invalid action, which has no tool form.
func FromAction(actionType, arg string) (name, arguments string, ok bool) {
	key, ok := argument[actionType]
	if !ok {
		return "", "", false
	}
	// The bytes encoding/json writes for map[string]string{key: arg} without HTML
	// escapes (the keys need no escaping), without encoding a map: the export converts
	// every step of every episode, for several formats. An argument written as it is
	// (most of them) is copied in; any other is escaped by jsonenc.
	if jsonenc.Plain(arg) {
		return actionType, `{"` + key + `":"` + arg + `"}`, true
	}
	b := make([]byte, 0, len(key)+len(arg)+16)
	b = append(append(append(b, `{"`...), key...), `":`...)
	return actionType, string(append(jsonenc.AppendString(b, arg), '}')), true
}

// Action is the canonical action of a tool call: its type (search, lookup, finish), its
// argument and the action text, e.g. Search[Ada Lovelace].
type Action struct {
	Type     string
	Argument string
	Text     string
}

// ToAction reads a tool call back into the canonical action. It fails, saying why, on an
// unknown function, arguments that are not a JSON object, a missing or non-string
// argument, or an unexpected extra argument.
func ToAction(name, arguments string) (Action, error) {
	key, ok := argument[name]
	if !ok {
		return Action{}, fmt.Errorf("unknown function %q (want search, lookup or finish)", name)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(arguments), &args); err != nil || args == nil {
		return Action{}, fmt.Errorf("%s: arguments %q are not a JSON object", name, clip(arguments))
	}
	v, ok := args[key]
	if !ok {
		return Action{}, fmt.Errorf("%s: missing argument %q", name, key)
	}
	s, ok := v.(string)
	if !ok {
		return Action{}, fmt.Errorf("%s: argument %q is not a string", name, key)
	}
	for k := range args {
		if k != key {
			return Action{}, fmt.Errorf("%s: unexpected argument %q (it takes only %q)", name, k, key)
		}
	}
	s = strings.TrimSpace(s)
	label := strings.ToUpper(name[:1]) + name[1:]
	return Action{Type: name, Argument: s, Text: label + "[" + s + "]"}, nil
}

// Names are the function names, in Defs order.
var Names = []string{Search, Lookup, Finish}

// Valid reports whether name is one of the functions.
func Valid(name string) bool { return slices.Contains(Names, name) }

// ValidFor reports whether name is one of task's functions (a game's action set, else
// search, lookup and finish).
func ValidFor(task, name string) bool {
	if !Game(task) {
		return Valid(name)
	}
	for _, c := range Commands(task, true) {
		if c.Name == name {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
