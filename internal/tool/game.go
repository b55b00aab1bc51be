package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/reactgen/reactgen/pipeline"
)

// Command is one action of a text game's action set as a function: the command text it
// stands for is Template with each {param} replaced by its argument, e.g. "take {obj}
// from {recep}". ALFWorld's commands are those its admissible actions take (and the
// functions AgentGym's ALFWorld adapter declares); WebShop's are search[…] and click[…].
// The ReAct prompts add think, the paper's free-form reasoning action.
type Command struct {
	Name        string
	Template    string
	Description string
	Params      []string
	ParamDocs   []string

	re *regexp.Regexp
}

var (
	alfworldCommands = []Command{
		{Name: "goto", Template: "go to {recep}", Description: "Go to a receptacle or place.", Params: []string{"recep"}, ParamDocs: []string{"The receptacle to go to, e.g. desk 1."}},
		{Name: "take", Template: "take {obj} from {recep}", Description: "Pick up an object from a receptacle.", Params: []string{"obj", "recep"}, ParamDocs: []string{"The object, e.g. mug 2.", "The receptacle it is in or on."}},
		{Name: "put", Template: "put {obj} in/on {recep}", Description: "Put the object you hold in or on a receptacle.", Params: []string{"obj", "recep"}, ParamDocs: []string{"The object you hold.", "The receptacle."}},
		{Name: "open", Template: "open {recep}", Description: "Open a receptacle.", Params: []string{"recep"}, ParamDocs: []string{"The receptacle to open."}},
		{Name: "close", Template: "close {recep}", Description: "Close a receptacle.", Params: []string{"recep"}, ParamDocs: []string{"The receptacle to close."}},
		{Name: "toggle", Template: "toggle {obj}", Description: "Switch an object on or off.", Params: []string{"obj"}, ParamDocs: []string{"The object to switch."}},
		{Name: "heat", Template: "heat {obj} with {recep}", Description: "Heat an object with a receptacle such as a microwave.", Params: []string{"obj", "recep"}, ParamDocs: []string{"The object to heat.", "The receptacle to heat it with."}},
		{Name: "cool", Template: "cool {obj} with {recep}", Description: "Cool an object with a receptacle such as a fridge.", Params: []string{"obj", "recep"}, ParamDocs: []string{"The object to cool.", "The receptacle to cool it with."}},
		{Name: "clean", Template: "clean {obj} with {recep}", Description: "Clean an object with a receptacle such as a sink basin.", Params: []string{"obj", "recep"}, ParamDocs: []string{"The object to clean.", "The receptacle to clean it with."}},
		{Name: "use", Template: "use {obj}", Description: "Use an object, such as switching on a lamp.", Params: []string{"obj"}, ParamDocs: []string{"The object to use."}},
		{Name: "examine", Template: "examine {target}", Description: "Describe an object or receptacle.", Params: []string{"target"}, ParamDocs: []string{"What to examine."}},
		{Name: "inventory", Template: "inventory", Description: "List the objects you are carrying."},
		{Name: "look", Template: "look", Description: "Describe where you are and what is around you."},
	}
	alfworldThink   = Command{Name: "think", Template: "think: {thought}", Description: "Think about the task and plan; the environment answers OK.", Params: []string{"thought"}, ParamDocs: []string{"The thought."}}
	webshopCommands = []Command{
		{Name: "search", Template: "search[{keywords}]", Description: "Search the shop when the page has a search bar.", Params: []string{"keywords"}, ParamDocs: []string{"The search keywords."}},
		{Name: "click", Template: "click[{item}]", Description: "Click a button, product or option the page shows.", Params: []string{"item"}, ParamDocs: []string{"The text of what to click, as the page shows it."}},
	}
	webshopThink = Command{Name: "think", Template: "think[{thought}]", Description: "Think about the task and plan; the shop answers OK.", Params: []string{"thought"}, ParamDocs: []string{"The thought."}}

	compileOnce sync.Once
)

func compileCommands() {
	compileOnce.Do(func() {
		for _, set := range [][]Command{alfworldCommands, webshopCommands, {alfworldThink}, {webshopThink}} {
			for i := range set {
				c := &set[i]
				pat := regexp.QuoteMeta(c.Template)
				for _, p := range c.Params {
					pat = strings.Replace(pat, regexp.QuoteMeta("{"+p+"}"), "(.+)", 1)
				}
				c.re = regexp.MustCompile("^" + pat + "$")
			}
		}
		alfworldThink.re = regexp.MustCompile(`^think:\s*(.*)$`)
		webshopThink.re = regexp.MustCompile(`^think\[(.*)\]$`)
	})
}

// Game reports whether task is a text game played through AgentGym (alfworld, webshop).
func Game(task string) bool { return task == pipeline.TaskALFWorld || task == pipeline.TaskWebShop }

// Commands returns a game task's action set; with thoughts (ReAct), think comes first.
func Commands(task string, thoughts bool) []Command {
	compileCommands()
	var set []Command
	var think Command
	switch task {
	case pipeline.TaskALFWorld:
		set, think = alfworldCommands, alfworldThink
	case pipeline.TaskWebShop:
		set, think = webshopCommands, webshopThink
	default:
		return nil
	}
	if thoughts {
		return append([]Command{think}, set...)
	}
	return append([]Command(nil), set...)
}

// CommandDefs is a game task's action set as tool definitions.
func CommandDefs(task string, thoughts bool) []Def {
	var defs []Def
	for _, c := range Commands(task, thoughts) {
		s := Schema{Type: "object", Properties: map[string]Property{}, Required: []string{}}
		for i, p := range c.Params {
			s.Properties[p] = Property{Type: "string", Description: c.ParamDocs[i]}
			s.Required = append(s.Required, p)
		}
		defs = append(defs, Def{Type: "function", Function: Function{Name: c.Name, Description: c.Description, Parameters: s}})
	}
	return defs
}

// ParseCommand reads a game action as written into its function and arguments (JSON):
// "take mug 2 from desk 1" -> take, {"obj":"mug 2","recep":"desk 1"}. ok is false for
// a text no command of the set matches.
func ParseCommand(task, text string) (name, arguments string, ok bool) {
	for _, c := range Commands(task, true) {
		m := c.re.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		args := map[string]string{}
		for i, p := range c.Params {
			args[p] = m[i+1]
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(args); err != nil {
			return "", "", false
		}
		return c.Name, strings.TrimSuffix(b.String(), "\n"), true
	}
	return "", "", false
}

// CommandText is the action text of a function call of a game's action set: the
// command's template filled with the arguments, each trimmed. It fails, saying why, on
// an unknown function, arguments that are not a JSON object of strings, or a missing,
// empty or extra argument.
func CommandText(task, name, arguments string, thoughts bool) (string, error) {
	var cmd *Command
	set := Commands(task, thoughts)
	names := make([]string, len(set))
	for i := range set {
		names[i] = set[i].Name
		if set[i].Name == name {
			cmd = &set[i]
		}
	}
	if cmd == nil {
		return "", fmt.Errorf("unknown function %q (want one of %s)", name, strings.Join(names, ", "))
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(arguments), &args); err != nil || (args == nil && len(cmd.Params) > 0) {
		if !(len(cmd.Params) == 0 && strings.TrimSpace(arguments) == "") {
			return "", fmt.Errorf("%s: arguments %q are not a JSON object", name, clip(arguments))
		}
	}
	text := cmd.Template
	for _, p := range cmd.Params {
		v, ok := args[p]
		if !ok {
			return "", fmt.Errorf("%s: missing argument %q", name, p)
		}
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("%s: argument %q is not a non-empty string", name, p)
		}
		text = strings.Replace(text, "{"+p+"}", strings.TrimSpace(s), 1)
	}
	for k := range args {
		if !slices.Contains(cmd.Params, k) {
			return "", fmt.Errorf("%s: unexpected argument %q", name, k)
		}
	}
	return text, nil
}
