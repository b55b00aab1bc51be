package prompt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/pipeline"
)

func trainedEpisode(task string) pipeline.Episode {
	q, answer := "Which river runs past the town where Ada \"the Quiet\" Morrow was born?", "the Velka"
	if task == pipeline.TaskFEVER {
		q, answer = "Ada Morrow was born in Orlen.", pipeline.LabelSupports
	}
	return pipeline.Episode{
		ID: "e1", Task: task, QuestionID: "q1", Question: q, Answer: answer, Method: "react", Prediction: answer,
		Finished: true, Correct: true, StopReason: pipeline.StopFinished,
		Steps: []pipeline.Step{
			{Thought: "I need Ada Morrow's birthplace.", Action: "Search[Ada Morrow]", ActionType: pipeline.ActionSearch, Argument: "Ada Morrow",
				Observation: "Ada Morrow (born 1901) is a cartographer from Orlen.\nShe drew the first map of the Velka délta."},
			{Thought: "Now the river at Orlen.", Action: "Lookup[river]", ActionType: pipeline.ActionLookup, Argument: "river",
				Observation: "(Result 1 / 1) Orlen lies on the Velka, a \\ tributary."},
			{Thought: "The river is the Velka.", Action: "Finish[" + answer + "]", ActionType: pipeline.ActionFinish, Argument: answer},
		},
	}
}

// exported writes ep in one format and view through the export's own writer and returns
// the JSONL rows it wrote, decoded: one, or one per step for completion.
func exported(t *testing.T, ep pipeline.Episode, format, view, system string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, l := range exportedLines(t, ep, format, view, system) {
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatalf("%s line %q: %v", format, l, err)
		}
		rows = append(rows, row)
	}
	return rows
}

// exportedLines is the JSONL lines the export's writer wrote for ep.
func exportedLines(t *testing.T, ep pipeline.Episode, format, view, system string) []string {
	t.Helper()
	ex, err := export.Render(ep, view, export.RenderOptions{System: system})
	if err != nil {
		t.Fatal(err)
	}
	ex.Split = "train"
	dir := t.TempDir()
	w, err := export.NewJSONL(dir, format, view, pipeline.ExportConfig{Compression: "none", System: system})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var line []byte
	for _, f := range w.Files() {
		if f.Split == "train" {
			line, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	var lines []string
	for l := range strings.Lines(string(line)) {
		lines = append(lines, l)
	}
	return lines
}

// turns reads the chat turns of an exported row in OpenAI's roles.
func turns(t *testing.T, format string, row map[string]any) []llm.Message {
	t.Helper()
	key, roleKey, contentKey := "messages", "role", "content"
	if format == "sharegpt" || format == "agentgym" {
		key, roleKey, contentKey = "conversations", "from", "value"
	}
	roles := map[string]string{"system": "system", "user": "user", "assistant": "assistant", "human": "user", "gpt": "assistant"}
	var out []llm.Message
	for _, m := range row[key].([]any) {
		m := m.(map[string]any)
		out = append(out, llm.Message{Role: roles[m[roleKey].(string)], Content: m[contentKey].(string)})
	}
	return out
}

// TestTrainedPromptIsTheExportPrefix: for every chat, completion and tool export format,
// view, task and system message, the trained layout's request for each step is byte for
// byte what the export wrote before that step's assistant turn (and, for the tool
// formats, its tool list is the export's).
func TestTrainedPromptIsTheExportPrefix(t *testing.T) {
	for _, task := range []string{pipeline.TaskHotpotQA, pipeline.TaskFEVER} {
		for _, view := range []string{export.ViewReAct, export.ViewAct, export.ViewStandard} {
			for _, system := range []string{"", "You solve questions with Search, Lookup and Finish."} {
				for format, exports := range prompt.TrainedFormats {
					if format == prompt.FormatTools && view == export.ViewStandard {
						continue // generate.format tools serves the methods that act
					}
					for _, ef := range exports {
						name := fmt.Sprintf("%s/%s/%s/system=%t", task, view, ef, system != "")
						t.Run(name, func(t *testing.T) {
							if format == prompt.FormatTools {
								checkTrainedTools(t, task, view, ef, system)
								return
							}
							checkTrained(t, task, view, format, ef, system)
						})
					}
				}
			}
		}
	}
}

// beforeAssistant is the turns before the (k+1)-th assistant turn.
func beforeAssistant(all []llm.Message, k int) []llm.Message {
	var out []llm.Message
	seen := 0
	for _, m := range all {
		if m.Role == "assistant" {
			if seen == k {
				break
			}
			seen++
		}
		out = append(out, m)
	}
	return out
}

func checkTrained(t *testing.T, task, view, format, exportFormat, system string) {
	ep := trainedEpisode(task)
	l, err := prompt.NewTrained(task, view, format, exportFormat, system)
	if err != nil {
		t.Fatal(err)
	}
	rows := exported(t, ep, exportFormat, view, system)
	row := rows[0]
	history := make([]prompt.Turn, 0, len(ep.Steps))
	for _, st := range ep.Steps {
		thought := st.Thought
		if view == export.ViewAct {
			thought = ""
		}
		history = append(history, prompt.Turn{Thought: thought, Action: st.Action, Observation: st.Observation})
	}
	steps := len(ep.Steps)
	if view == export.ViewStandard {
		steps = 1
	}
	for k := range steps {
		var req prompt.Request
		if view == export.ViewStandard {
			req = l.Answer(ep.Question)
		} else {
			req = l.Step(ep.Question, history[:k])
		}
		if format == prompt.FormatCompletion {
			// One row per step: its prompt is the request of that step, byte for byte.
			if len(rows) != steps {
				t.Fatalf("%d completion rows, want one per step (%d)", len(rows), steps)
			}
			if req.Prompt != rows[k]["prompt"].(string) {
				t.Fatalf("step %d prompt\n%q\nwant the export's prompt of that step\n%q", k+1, req.Prompt, rows[k]["prompt"])
			}
			next := rows[k]["completion"].(string)
			want := fmt.Sprintf("Thought %d: ", k+1)
			switch view {
			case export.ViewAct:
				want = fmt.Sprintf("Action %d: ", k+1)
			case export.ViewStandard:
				want = "Answer: "
			}
			if !strings.HasPrefix(next, want) {
				t.Fatalf("step %d: the exported text goes on with %q, want %q", k+1, next[:min(len(next), 30)], want)
			}
			continue
		}
		all := turns(t, exportFormat, row)
		want := beforeAssistant(all, k)
		if len(req.Messages) != len(want) {
			t.Fatalf("step %d: %d messages, want %d:\n%q\n%q", k+1, len(req.Messages), len(want), req.Messages, want)
		}
		for i := range want {
			if !reflect.DeepEqual(req.Messages[i], want[i]) {
				t.Fatalf("step %d message %d\n%q\nwant\n%q", k+1, i, req.Messages[i], want[i])
			}
		}
	}
}

func TestTrainedRefusesWhatTheExportNeverWrote(t *testing.T) {
	for _, tc := range []struct{ kind, format, export string }{
		{prompt.KindCoT, prompt.FormatChat, ""},
		{prompt.KindReAct, prompt.FormatChat, "completion"},
		{prompt.KindReAct, prompt.FormatCompletion, "openai-chat"},
		{prompt.KindReAct, prompt.FormatChat, "alpaca"},
	} {
		if _, err := prompt.NewTrained(pipeline.TaskHotpotQA, tc.kind, tc.format, tc.export, ""); err == nil {
			t.Errorf("NewTrained(%s, %s, %s) accepted", tc.kind, tc.format, tc.export)
		}
	}
}

// TestTrainedReask: a trained completion layout re-asks for the action the way the
// export's text goes on (the thought, then "Action i:"); a trained chat layout does not
// re-ask at all.
func TestTrainedReask(t *testing.T) {
	l, err := prompt.NewTrained(pipeline.TaskHotpotQA, prompt.KindReAct, prompt.FormatCompletion, "", "")
	if err != nil {
		t.Fatal(err)
	}
	history := []prompt.Turn{{Thought: "t1", Action: "Search[A]", Observation: "A is a page."}}
	step := l.Step("q?", history)
	re := l.Reask("q?", history, "I should look up B.")
	if want := step.Prompt + "Thought 2: I should look up B.\nAction 2:"; re.Prompt != want || !l.CanReask() {
		t.Errorf("re-ask prompt\n%q\nwant\n%q", re.Prompt, want)
	}
	chat, err := prompt.NewTrained(pipeline.TaskHotpotQA, prompt.KindReAct, prompt.FormatChat, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if chat.CanReask() {
		t.Error("a trained chat layout would re-ask with an instruction the model never saw")
	}
}

// toolRow is an exported tool-format row read back in the request's form: its turns as
// chat messages with calls and its tool list as JSON. sharegpt-tools has no call ids:
// its calls and tool turns carry none.
func toolRow(t *testing.T, format, line string) (msgs []llm.Message, tools string) {
	t.Helper()
	if format == "sharegpt-tools" {
		var row struct {
			Conversations []struct{ From, Value string }
			System, Tools string
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		if row.System != "" {
			msgs = append(msgs, llm.Message{Role: "system", Content: row.System})
		}
		for i, c := range row.Conversations {
			switch c.From {
			case "human":
				msgs = append(msgs, llm.Message{Role: "user", Content: c.Value})
			case "gpt":
				msgs = append(msgs, llm.Message{Role: "assistant", Content: c.Value})
			case "observation":
				role := "tool"
				if row.Conversations[i-1].From == "gpt" {
					role = "user" // after a call-less step
				}
				msgs = append(msgs, llm.Message{Role: role, Content: c.Value})
			case "function_call":
				// The thought, a newline, and the call between LLaMA-Factory's tool-call words.
				thought, js, _ := strings.Cut(c.Value, "<tool_call>")
				thought = strings.TrimSuffix(thought, "\n")
				js = strings.TrimSuffix(js, "</tool_call>")
				var fc struct {
					Name      string
					Arguments json.RawMessage
				}
				if err := json.Unmarshal([]byte(js), &fc); err != nil {
					t.Fatalf("function_call %q: %v", c.Value, err)
				}
				msgs = append(msgs, llm.Message{Role: "assistant", Content: thought,
					ToolCalls: []llm.ToolCall{{Type: "function", Function: llm.FunctionCall{Name: fc.Name, Arguments: string(fc.Arguments)}}}})
			default:
				t.Fatalf("sharegpt-tools turn from %q", c.From)
			}
		}
		return msgs, row.Tools
	}
	var row struct {
		Messages []struct {
			Role       string
			Content    *string
			ToolCallID string `json:"tool_call_id"`
			Name       string
			ToolCalls  []struct {
				ID, Type string
				Function struct {
					Name      string
					Arguments json.RawMessage
				}
			} `json:"tool_calls"`
		}
		Tools json.RawMessage
	}
	if err := json.Unmarshal([]byte(line), &row); err != nil {
		t.Fatal(err)
	}
	for _, m := range row.Messages {
		lm := llm.Message{Role: m.Role, ToolCallID: m.ToolCallID, Name: m.Name}
		if m.Content != nil {
			lm.Content = *m.Content
		}
		for _, c := range m.ToolCalls {
			args := string(c.Function.Arguments)
			if format == "openai-tools" || format == "hf-tools" {
				// OpenAI's and hf-tools' rows hold the arguments as a JSON string.
				if err := json.Unmarshal(c.Function.Arguments, &args); err != nil {
					t.Fatalf("openai-tools arguments %s: %v", c.Function.Arguments, err)
				}
			}
			lm.ToolCalls = append(lm.ToolCalls, llm.ToolCall{ID: c.ID, Type: c.Type, Function: llm.FunctionCall{Name: c.Function.Name, Arguments: args}})
		}
		msgs = append(msgs, lm)
	}
	if format == "hf-tools" { // the tools as a JSON string
		var s string
		if err := json.Unmarshal(row.Tools, &s); err != nil {
			t.Fatalf("hf-tools tools %s: %v", row.Tools, err)
		}
		return msgs, s
	}
	return msgs, string(row.Tools)
}

// checkTrainedTools: the trained tools layout's request of each step is the exported
// row's turns before that step's assistant turn, its tool list the row's, byte for byte.
// The model's earlier calls come back with the ids the server gave them, here the
// export's (sharegpt-tools writes none, so none are compared).
func checkTrainedTools(t *testing.T, task, view, exportFormat, system string) {
	ep := trainedEpisode(task)
	// A step whose action has no tool form: the export writes it as text turns.
	bad := pipeline.Step{Thought: "Maybe the river.", Action: "Look river", ActionType: pipeline.ActionInvalid,
		Observation: "Invalid action: Look river"}
	ep.Steps = slices.Insert(ep.Steps, 1, bad)
	l, err := prompt.NewTrained(task, view, prompt.FormatTools, exportFormat, system)
	if err != nil {
		t.Fatal(err)
	}
	lines := exportedLines(t, ep, exportFormat, view, system)
	if len(lines) != 1 {
		t.Fatalf("%d rows, want one", len(lines))
	}
	all, tools := toolRow(t, exportFormat, lines[0])
	var calls []*llm.ToolCall
	for _, m := range all {
		if m.Role == "assistant" && len(m.ToolCalls) == 1 {
			calls = append(calls, &m.ToolCalls[0])
		}
	}
	if len(calls) != len(ep.Steps)-1 {
		t.Fatalf("%d calls exported, want one per valid step (%d)", len(calls), len(ep.Steps)-1)
	}
	history := make([]prompt.Turn, 0, len(ep.Steps))
	for _, st := range ep.Steps {
		thought := st.Thought
		if view == export.ViewAct {
			thought = ""
		}
		turn := prompt.Turn{Thought: thought, Action: st.Action, Observation: st.Observation}
		if st.ActionType != pipeline.ActionInvalid {
			// The model's call as the server returns it: its own spacing of the arguments.
			c := calls[0]
			calls = calls[1:]
			turn.Call = &llm.ToolCall{ID: c.ID, Type: "function", Function: llm.FunctionCall{Name: c.Function.Name,
				Arguments: strings.ReplaceAll(c.Function.Arguments, `":"`, `": "`)}}
		}
		history = append(history, turn)
	}
	for k := range ep.Steps {
		req := l.Step(ep.Question, history[:k])
		got, err := json.Marshal(req.Tools)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tools {
			t.Fatalf("step %d tools\n%s\nwant the export's\n%s", k+1, got, tools)
		}
		want := beforeAssistant(all, k)
		msgs := req.Messages
		if exportFormat == "sharegpt-tools" {
			msgs = withoutIDs(msgs)
		}
		if !reflect.DeepEqual(msgs, want) {
			t.Fatalf("step %d messages\n%+v\nwant the export's\n%+v", k+1, msgs, want)
		}
		if k == 0 && len(req.Stop) != 0 {
			t.Errorf("a tools request has stop sequences %q", req.Stop)
		}
	}
}

func withoutIDs(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		m.ToolCallID = ""
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for j := range m.ToolCalls {
			m.ToolCalls[j].ID = ""
		}
		out[i] = m
	}
	return out
}
