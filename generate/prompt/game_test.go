package prompt_test

import (
	"strings"
	"testing"

	"github.com/reactgen/reactgen/env/agentgym/agentgymtest"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/filetest"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
)

// notebookALFWorld is alfworld.ipynb's prompt construction, written as data: the game
// name prefixes it tries in order with the prompt file's name for each, and the prompt
// for a game of type v: 'Interact with a household to solve a task. Here are two
// examples.\n' + d[f'react_{v}_1'] + d[f'react_{v}_0'] + '\nHere is the task.\n', then
// the first observation and '\n>', then f' {action}\n{observation}\n>' per step.
var notebookALFWorld = []struct{ prefix, v string }{
	{"pick_and_place", "put"}, {"pick_clean_then_place", "clean"}, {"pick_heat_then_place", "heat"},
	{"pick_cool_then_place", "cool"}, {"look_at_obj", "examine"}, {"pick_two_obj", "puttwo"},
}

func alfworldNotebookPrompt(d map[string]string, kind, v, ob string, steps [][2]string) string {
	p := "Interact with a household to solve a task. Here are two examples.\n" + d[kind+"_"+v+"_1"] + d[kind+"_"+v+"_0"] + "\nHere is the task.\n" + ob + "\n>"
	for _, s := range steps {
		p += " " + s[0] + "\n" + s[1] + "\n>"
	}
	return p
}

func checkALFWorld(t *testing.T, d map[string]string) {
	t.Helper()
	ob := "You are in the middle of a room. Looking quickly around you, you see a desk 1.\nYour task is to: put a pen in desk."
	steps := [][2]string{{"think: Find the pen.", "OK."}, {"go to desk 1", "On the desk 1, you see a pen 1."}}
	for _, kind := range []string{"react", "act"} {
		l, err := prompt.NewGameLayout(pipeline.TaskALFWorld, kind, prompt.FormatCompletion, d)
		if err != nil {
			t.Fatal(err)
		}
		for _, nb := range notebookALFWorld {
			taskType := nb.prefix + "_simple-Pen-None-Desk-1/trial_T1"
			prefix, err := l.Prefix(taskType)
			if err != nil {
				t.Fatal(err)
			}
			for n := 0; n <= len(steps); n++ {
				var turns []prompt.Turn
				for _, s := range steps[:n] {
					turns = append(turns, prompt.Turn{Action: s[0], Observation: s[1]})
				}
				got := l.Step(prefix, ob, turns)
				if want := alfworldNotebookPrompt(d, kind, nb.v, ob, steps[:n]); got.Prompt != want {
					t.Fatalf("%s %s after %d steps:\n got %q\nwant %q", kind, nb.v, n, got.Prompt, want)
				}
				if len(got.Stop) != 1 || got.Stop[0] != "\n" {
					t.Fatalf("stop %q", got.Stop)
				}
			}
		}
		if _, err := l.Prefix("pick_nothing-X/trial"); err == nil || !strings.Contains(err.Error(), "matches none") {
			t.Fatalf("an unknown task type: %v", err)
		}
	}
}

// papersPrompts reads a prompt file of the paper's repository from the shared data.
func papersPrompts(t *testing.T, rel string) map[string]string {
	t.Helper()
	var d map[string]string
	filetest.ReadJSON(t, shareddata.Path(t, rel), &d)
	return d
}

func TestALFWorldPromptIsTheNotebooks(t *testing.T) {
	checkALFWorld(t, agentgymtest.ALFWorldPrompts())
}

func TestALFWorldPromptFromThePapersFile(t *testing.T) {
	checkALFWorld(t, papersPrompts(t, "react-prompts/alfworld_3prompts.json"))
}

// webshopNotebookPrompt is WebShop.ipynb's: init_prompt + prompt[-(6400-len(init_prompt)):],
// where prompt is f'{observation}\n\nAction:' for the reset, then
// f' {action}\nObservation: {observation}\n\nAction:' per step. The slice is written
// out on code points as Python's is.
func webshopNotebookPrompt(init, ob string, steps [][2]string) string {
	p := []rune(ob + "\n\nAction:")
	for _, s := range steps {
		p = append(p, []rune(" "+s[0]+"\nObservation: "+s[1]+"\n\nAction:")...)
	}
	n := 6400 - len([]rune(init))
	switch {
	case n > 0 && n < len(p):
		p = p[len(p)-n:]
	case n < 0:
		p = p[min(-n, len(p)):]
	}
	return init + string(p)
}

func checkWebShop(t *testing.T, d map[string]string) {
	t.Helper()
	ob := "WebShop [SEP] Instruction: [SEP] i want a tin kettle, and price lower than 30.00 dollars [SEP] Search"
	long := strings.Repeat("Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] B0TINKETTLE [SEP] Tin Kettle — blé [SEP] $12.00 ", 12)
	var steps [][2]string
	for i := range 14 {
		steps = append(steps, [2]string{"search[tin kettle]", long[:100*(i+1)]})
	}
	for _, kind := range []string{"react", "act"} {
		l, err := prompt.NewGameLayout(pipeline.TaskWebShop, kind, prompt.FormatCompletion, d)
		if err != nil {
			t.Fatal(err)
		}
		prefix, err := l.Prefix("")
		if err != nil || prefix != d["webshop_"+kind+"_1"] {
			t.Fatalf("prefix %q, %v", prefix, err)
		}
		cut := false
		for n := 0; n <= len(steps); n++ {
			var turns []prompt.Turn
			for _, s := range steps[:n] {
				turns = append(turns, prompt.Turn{Action: s[0], Observation: s[1]})
			}
			got := l.Step(prefix, ob, turns).Prompt
			want := webshopNotebookPrompt(prefix, ob, steps[:n])
			if got != want {
				t.Fatalf("%s after %d steps: the prompt differs from the notebook's (%d vs %d bytes)", kind, n, len(got), len(want))
			}
			cut = cut || !strings.Contains(got, ob)
		}
		if !cut {
			t.Fatalf("%s: the 6400-character window never cut the running prompt", kind)
		}
	}
}

func TestWebShopPromptIsTheNotebooks(t *testing.T) {
	checkWebShop(t, agentgymtest.WebShopPrompts())
}

func TestWebShopPromptFromThePapersFile(t *testing.T) {
	checkWebShop(t, papersPrompts(t, "react-prompts/webshop.json"))
}

func TestGameActionAsTheNotebooksReadIt(t *testing.T) {
	alf, err := prompt.NewGameLayout(pipeline.TaskALFWorld, "react", prompt.FormatCompletion, agentgymtest.ALFWorldPrompts())
	if err != nil {
		t.Fatal(err)
	}
	shop, err := prompt.NewGameLayout(pipeline.TaskWebShop, "react", prompt.FormatCompletion, agentgymtest.WebShopPrompts())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		l          *prompt.GameLayout
		completion string
		want       string
		think      bool
	}{
		{alf, " go to desk 1 \x1c", "go to desk 1", false},
		{alf, "\tthink: the pen is near.\nOK.", "think: the pen is near.", true},
		{alf, " think about it", "think about it", false},
		{shop, "  search[tin kettle] ", "search[tin kettle] ", false},
		{shop, "\tclick[Buy Now]", "\tclick[Buy Now]", false},
		{shop, " think[cheap]\nObservation", "think[cheap]", true},
	} {
		if got := c.l.Action(c.completion); got != c.want || c.l.Think(got) != c.think {
			t.Errorf("%q: action %q think %v, want %q %v", c.completion, got, c.l.Think(got), c.want, c.think)
		}
	}
	if _, err := prompt.NewGameLayout(pipeline.TaskALFWorld, "react", prompt.FormatCompletion, map[string]string{"react_put_0": "x"}); err == nil || !strings.Contains(err.Error(), "react_put_1") {
		t.Fatalf("a file without the entries: %v", err)
	}
}

func TestPyTail(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcdé", 2, "dé"}, {"abcdé", 10, "abcdé"}, {"abcdé", 0, "abcdé"}, {"abcdé", -2, "cdé"}, {"ab", -5, ""},
	} {
		if got := prompt.PyTail(c.s, c.n); got != c.want {
			t.Errorf("PyTail(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// In chat and tools a game is the notebook's prefix as the system message, the first
// observation and the observations as user (tools: tool) turns and the actions as
// assistant turns (tools: calls of the action set).
func TestGameChatAndToolsLayouts(t *testing.T) {
	d := agentgymtest.ALFWorldPrompts()
	ob := "You are in the middle of a room.\nYour task is to: put a pen in desk."
	turns := []prompt.Turn{{Action: "think: Find the pen.", Observation: "OK."}, {Action: "go to desk 1", Observation: "On the desk 1, you see a pen 1."},
		{Action: "dance", Observation: "Nothing happens."}}
	chat, err := prompt.NewGameLayout(pipeline.TaskALFWorld, "react", prompt.FormatChat, d)
	if err != nil {
		t.Fatal(err)
	}
	prefix, _ := chat.Prefix("pick_and_place_simple-Pen-None-Desk-1/trial_T1")
	r := chat.Step(prefix, ob, turns)
	if len(r.Messages) != 8 || r.Messages[0].Role != "system" || r.Messages[0].Content != strings.TrimRight(prefix, "\n") ||
		r.Messages[1].Content != ob || r.Messages[2].Role != "assistant" || r.Messages[2].Content != "think: Find the pen." ||
		r.Messages[7].Content != "Nothing happens." || r.Stop[0] != "\n" {
		t.Fatalf("chat messages: %+v", r.Messages)
	}
	if got := chat.Action("> go to desk 1\n"); got != "go to desk 1" {
		t.Fatalf("chat action %q", got)
	}
	tools, err := prompt.NewGameLayout(pipeline.TaskALFWorld, "react", prompt.FormatTools, d)
	if err != nil {
		t.Fatal(err)
	}
	r = tools.Step(prefix, ob, turns)
	if len(r.Tools) != 14 || r.Tools[0].Function.Name != "think" {
		t.Fatalf("tools: %+v", r.Tools)
	}
	m := r.Messages
	if len(m) != 8 || m[2].ToolCalls[0].Function.Name != "think" || m[2].ToolCalls[0].Function.Arguments != `{"thought":"Find the pen."}` ||
		m[3].Role != "tool" || m[3].ToolCallID != m[2].ToolCalls[0].ID || m[4].ToolCalls[0].Function.Name != "goto" ||
		m[6].Role != "assistant" || m[6].Content != "dance" || m[7].Role != "user" {
		t.Fatalf("tools messages: %+v", m)
	}
	act, err := prompt.NewGameLayout(pipeline.TaskWebShop, "act", prompt.FormatTools, agentgymtest.WebShopPrompts())
	if err != nil {
		t.Fatal(err)
	}
	if names := []string{act.Tools()[0].Function.Name, act.Tools()[1].Function.Name}; len(act.Tools()) != 2 || names[0] != "search" || names[1] != "click" {
		t.Fatalf("WebShop act tools: %+v", act.Tools())
	}
}
