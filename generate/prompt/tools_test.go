package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

func toolLayout(t *testing.T, task, method string) *Layout {
	t.Helper()
	return tinyLayout(t, task, method, FormatTools)
}

// loadSet loads ref's exemplars for task, as method uses them.
func loadSet(t *testing.T, ref, task, method string) Set {
	t.Helper()
	s, err := Load(ref, task, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, err := s.For(method)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// layOut is set's layout in format.
func layOut(t *testing.T, set Set, format string) *Layout {
	t.Helper()
	l, err := NewLayout(set, format)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tinyLayout is the layout of testdata/tiny.json's exemplars for task, method and format.
func tinyLayout(t *testing.T, task, method, format string) *Layout {
	t.Helper()
	s, err := Load("testdata/tiny.json", "hotpotqa", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Task = task
	set, err := s.For(method)
	if err != nil {
		t.Fatal(err)
	}
	return layOut(t, set, format)
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}
}

// msg is a message in short form for comparisons.
type msg struct{ role, content, id, calls string }

func short(ms []llm.Message) []msg {
	out := make([]msg, len(ms))
	for i, m := range ms {
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID+" "+c.Function.Name+c.Function.Arguments)
		}
		out[i] = msg{m.Role, m.Content, m.ToolCallID, strings.Join(calls, "; ")}
	}
	return out
}

// TestToolLayoutRendersExemplarsAsTurns: the exemplars are earlier turns of the
// conversation, each step an assistant call answered by a tool turn, and the episode's
// history follows in the same form.
func TestToolLayoutRendersExemplarsAsTurns(t *testing.T) {
	l := toolLayout(t, pipeline.TaskHotpotQA, MethodReAct)
	hist := []Turn{
		{Thought: "Find Zembla.", Action: "Search[Zembla]", Observation: "Zembla is a kingdom.", Call: &llm.ToolCall{ID: "srv_1", Function: llm.FunctionCall{Name: "search", Arguments: `{"entity": "Zembla"}`}}},
		{Thought: "Hmm.", Action: "(no tool call)", Observation: "Invalid action: (no tool call)."},
		{Thought: "Again.", Action: "browse({)", Observation: "Invalid action.", Call: &llm.ToolCall{Function: llm.FunctionCall{Name: "browse", Arguments: `{`}}},
	}
	req := l.Step("Where is Onhava?", hist)
	want := []msg{
		{"system", "Solve the riddle with Thought, Action and Observation steps.", "", ""},
		{"user", "Question: Which river flows through the capital of Zembla?", "", ""},
		{"assistant", "I should find the capital of Zembla.", "", `call_ex1_1 search{"entity":"Zembla"}`},
		{"tool", "Zembla is an island kingdom whose capital is Onhava.", "call_ex1_1", ""},
		{"assistant", "Now I need the river of Onhava.", "", `call_ex1_2 search{"entity":"Onhava"}`},
		{"tool", "Onhava lies on both banks of the river Vell.", "call_ex1_2", ""},
		{"assistant", "The river is the Vell.", "", `call_ex1_3 finish{"answer":"Vell"}`},
		{"tool", FinishedReply, "call_ex1_3", ""},
		{"user", "Question: Is Plim older than Plom?", "", ""},
		{"assistant", "Search Plim first.", "", `call_ex2_1 search{"entity":"Plim"}`},
		{"tool", "Plim is a town founded in 1820.", "call_ex2_1", ""},
		{"assistant", "Then Plom.", "", `call_ex2_2 search{"entity":"Plom"}`},
		{"tool", "Plom is a town founded in 1790.", "call_ex2_2", ""},
		{"assistant", "1790 is earlier, so Plim is not older.", "", `call_ex2_3 finish{"answer":"no"}`},
		{"tool", FinishedReply, "call_ex2_3", ""},
		{"user", "Question: Where is Onhava?", "", ""},
		{"assistant", "Find Zembla.", "", `srv_1 search{"entity": "Zembla"}`},
		{"tool", "Zembla is a kingdom.", "srv_1", ""},
		{"assistant", "Hmm.", "", ""},
		{"user", "Invalid action: (no tool call).", "", ""},
		{"assistant", "Again.", "", `call_3 browse{}`},
		{"tool", "Invalid action.", "call_3", ""},
	}
	if got := short(req.Messages); !reflect.DeepEqual(got, want) {
		t.Errorf("messages:\n got %q\nwant %q", got, want)
	}
	if len(req.Stop) != 0 {
		t.Errorf("stop: got %q, want none", req.Stop)
	}
	if len(req.Tools) != 3 || req.Tools[0].Function.Name != tool.Search || req.Tools[2].Function.Name != tool.Finish {
		t.Fatalf("tools: %+v", req.Tools)
	}
	// The tools on the wire are internal/tool's definitions, unchanged.
	b, _ := json.Marshal(req.Tools)
	if string(b) != tool.JSON(pipeline.TaskHotpotQA) {
		t.Errorf("tools JSON:\n got %s\nwant %s", b, tool.JSON(pipeline.TaskHotpotQA))
	}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if c.Type != "function" {
				t.Errorf("call %s has type %q", c.ID, c.Type)
			}
		}
	}
}

func TestToolLayoutActAndFEVER(t *testing.T) {
	l := toolLayout(t, pipeline.TaskFEVER, MethodAct)
	req := l.Step("A is B.", nil)
	for _, m := range req.Messages {
		if m.Role == "assistant" && m.Content != "" {
			t.Errorf("act: an assistant turn has content %q", m.Content)
		}
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role != "user" || last.Content != "Claim: A is B." {
		t.Errorf("last message: %+v", last)
	}
	var finish struct {
		Properties map[string]struct{ Enum []string } `json:"properties"`
	}
	if err := json.Unmarshal(req.Tools[2].Function.Parameters, &finish); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(finish.Properties["answer"].Enum, "|"); got != "SUPPORTS|REFUTES|NOT ENOUGH INFO" {
		t.Errorf("FEVER finish enum: %q", got)
	}
}

func TestToolRetry(t *testing.T) {
	l := toolLayout(t, pipeline.TaskHotpotQA, MethodReAct)
	base := len(l.Step("Q?", nil).Messages)
	calls := []llm.ToolCall{call("c1", "search", `{"entity":"A"}`), call("", "lookup", `not json`)}
	re := l.ToolRetry("Q?", nil, "I will do two things.", calls, "2 tools were called in one turn, so none was run.")
	want := []msg{
		{"assistant", "I will do two things.", "", `c1 search{"entity":"A"}; call_1_2 lookup{}`},
		{"tool", "Error: 2 tools were called in one turn, so none was run.", "c1", ""},
		{"tool", "Error: 2 tools were called in one turn, so none was run.", "call_1_2", ""},
	}
	if got := short(re.Messages[base:]); !reflect.DeepEqual(got, want) {
		t.Errorf("retry after calls:\n got %q\nwant %q", got, want)
	}
	re = l.ToolRetry("Q?", nil, "Search[A]", nil, "No tool was called.")
	want = []msg{{"assistant", "Search[A]", "", ""}, {"user", "No tool was called.", "", ""}}
	if got := short(re.Messages[base:]); !reflect.DeepEqual(got, want) {
		t.Errorf("retry without a call:\n got %q\nwant %q", got, want)
	}
	if len(re.Tools) != 3 {
		t.Errorf("retry has %d tools", len(re.Tools))
	}
}

// TestToolRequestHash: Hash, which resumes from the head's state, is the sha256 of Text.
func TestToolRequestHash(t *testing.T) {
	for _, method := range []string{MethodReAct, MethodAct} {
		l := toolLayout(t, pipeline.TaskHotpotQA, method)
		c := call("x<1>", "search", `{"entity":"Zembla & \"co\""}`)
		hist := []Turn{{Thought: "Find <Zembla>.", Observation: "Zembla is a \"kingdom\".\u2028", Call: &c}}
		reqs := map[string]Request{
			"step 1": l.Step("Where?", nil), "step 2": l.Step("Where?", hist),
			"retry": l.ToolRetry("Where?", hist, "two", []llm.ToolCall{c, c}, "several"),
		}
		for name, r := range reqs {
			sum := sha256.Sum256([]byte(r.Text()))
			if got, want := r.Hash(), hex.EncodeToString(sum[:]); got != want {
				t.Errorf("%s %s: got %s, want %s", method, name, got, want)
			}
			if l.resume(r) == nil {
				t.Errorf("%s %s: hashed from the start, not from the head", method, name)
			}
		}
		// A request whose head was changed is hashed from the start, and still right.
		r := l.Step("Where?", nil)
		r.Messages[2].ToolCalls = []llm.ToolCall{call("other", "search", `{}`)}
		if l.resume(r) != nil {
			t.Errorf("%s: a changed head was resumed from the prefix state", method)
		}
	}
}

func TestToolLayoutRefuses(t *testing.T) {
	s, err := Load("testdata/tiny.json", "hotpotqa", nil)
	if err != nil {
		t.Fatal(err)
	}
	cot, _ := s.For(MethodCoT)
	if _, err := NewLayout(cot, FormatTools); err == nil || !strings.Contains(err.Error(), "react and act") {
		t.Errorf("cot in tools: got %v", err)
	}
	react, _ := s.For(MethodReAct)
	react.Exemplars[0].Steps[1].Action = "Jump[Onhava]"
	if _, err := NewLayout(react, FormatTools); err == nil || !strings.Contains(err.Error(), `exemplar 1 step 2: action "Jump[Onhava]"`) {
		t.Errorf("invalid exemplar action: got %v", err)
	}
}

// TestPaperPromptsInToolsFormat: every acting entry of the paper's prompt files renders
// as tool turns, each exemplar step one call answered by one tool turn.
func TestPaperPromptsInToolsFormat(t *testing.T) {
	naive := shareddata.Path(t, "react-prompts/prompts_naive.json")
	fever := shareddata.Path(t, "react-prompts/fever.json")
	for _, tc := range []struct{ ref, task, method string }{
		{naive + "#webthink_simple6", "hotpotqa", MethodReAct}, {naive + "#webact_simple6", "hotpotqa", MethodAct},
		{fever + "#webthink_simple3", "fever", MethodReAct}, {fever + "#webact_simple3", "fever", MethodAct},
	} {
		t.Run(tc.ref[strings.LastIndex(tc.ref, "#")+1:]+"-"+tc.task, func(t *testing.T) {
			set := loadSet(t, tc.ref, tc.task, tc.method)
			l := layOut(t, set, FormatTools)
			steps := 0
			for _, ex := range set.Exemplars {
				steps += len(ex.Steps)
			}
			calls, replies := 0, 0
			for _, m := range l.head {
				calls += len(m.ToolCalls)
				if m.Role == "tool" {
					replies++
				}
				for _, c := range m.ToolCalls {
					if _, err := tool.ToAction(c.Function.Name, c.Function.Arguments); err != nil {
						t.Errorf("exemplar call %s: %v", c.ID, err)
					}
				}
			}
			if calls != steps || replies != steps {
				t.Errorf("%d steps, %d calls, %d tool turns", steps, calls, replies)
			}
		})
	}
}
