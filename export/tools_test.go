package export

import (
	"encoding/json"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// openAIExampleLimit is the per-example token limit the OpenAI cookbook's chat
// fine-tuning data-preparation check flags (16,385, the context of the smallest chat
// model it fine-tunes).
const openAIExampleLimit = 16385

// checkOpenAIRow applies the checks of OpenAI's chat fine-tuning data preparation
// (the cookbook's format checks: data type, messages list, message keys, unrecognised
// keys, roles, content, an assistant message; its token count) and of the fine-tuning
// guide's tool-calling and weight rules: weight 0 or 1 on assistant messages only;
// tool_calls of type function naming a declared tool, with arguments a string holding a
// JSON object; each tool message answering, by tool_call_id, an unanswered call of an
// earlier assistant message. It returns every problem found, by the cookbook's error
// names where it has one.
func checkOpenAIRow(line []byte, c bpe.Counter) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	var row map[string]json.RawMessage
	if err := json.Unmarshal(line, &row); err != nil {
		return []string{"data_type: " + err.Error()}
	}
	for k := range row {
		if !slices.Contains([]string{"messages", "tools", "parallel_tool_calls"}, k) {
			add("unrecognized top-level key %q", k)
		}
	}
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	}
	declared := map[string]bool{}
	if raw, ok := row["tools"]; ok {
		if err := json.Unmarshal(raw, &tools); err != nil {
			add("tools: not a list of tool objects: %v", err)
		}
		for i, t := range tools {
			if t.Type != "function" || t.Function.Name == "" || t.Function.Parameters["type"] != "object" {
				add("tools[%d]: want type function, a name and object parameters", i)
			}
			declared[t.Function.Name] = true
		}
	}
	var msgs []map[string]json.RawMessage
	raw, ok := row["messages"]
	if !ok {
		return append(errs, "missing_messages_list")
	}
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return append(errs, "missing_messages_list: "+err.Error())
	}
	known := []string{"role", "content", "name", "function_call", "weight", "tool_calls", "tool_call_id"}
	pending := map[string]bool{} // calls not yet answered
	assistants := 0
	var counted []Message
	for i, m := range msgs {
		for k := range m {
			if !slices.Contains(known, k) {
				add("message %d: message_unrecognized_key %q", i, k)
			}
		}
		var role string
		if json.Unmarshal(m["role"], &role) != nil {
			add("message %d: message_missing_key role", i)
		}
		if !slices.Contains([]string{"system", "user", "assistant", "tool"}, role) {
			add("message %d: unrecognized_role %q", i, role)
		}
		_, hasCalls := m["tool_calls"]
		var content string
		if rc, ok := m["content"]; ok {
			if json.Unmarshal(rc, &content) != nil {
				add("message %d: missing_content: content is not a string", i)
			}
		} else if !hasCalls {
			add("message %d: message_missing_key content", i)
		}
		if content == "" && !hasCalls {
			add("message %d: missing_content", i)
		}
		if w, ok := m["weight"]; ok {
			if role != "assistant" {
				add("message %d: weight on a %s message (only assistant messages take one)", i, role)
			}
			if s := string(w); s != "0" && s != "1" {
				add("message %d: weight %s, want 0 or 1", i, s)
			}
		}
		if hasCalls && role != "assistant" {
			add("message %d: tool_calls on a %s message", i, role)
		}
		var calls []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		}
		if hasCalls {
			if err := json.Unmarshal(m["tool_calls"], &calls); err != nil || len(calls) == 0 {
				add("message %d: tool_calls is not a non-empty list of calls", i)
			}
			if len(pending) > 0 {
				add("message %d: assistant message before the tool messages of calls %v", i, pending)
			}
		}
		callText := ""
		for j, call := range calls {
			if call.ID == "" || call.Type != "function" || !declared[call.Function.Name] {
				add("message %d call %d: want an id, type function and a declared function, got %q %q %q", i, j, call.ID, call.Type, call.Function.Name)
			}
			var args string
			var obj map[string]any
			if json.Unmarshal(call.Function.Arguments, &args) != nil || json.Unmarshal([]byte(args), &obj) != nil {
				add("message %d call %d: arguments are not a string holding a JSON object", i, j)
			}
			if pending[call.ID] {
				add("message %d call %d: id %s used twice", i, j, call.ID)
			}
			pending[call.ID] = true
			callText += call.Function.Name + args
		}
		if role == "tool" {
			var id string
			if json.Unmarshal(m["tool_call_id"], &id) != nil || !pending[id] {
				add("message %d: tool message answers %q, which no earlier assistant call left open", i, id)
			}
			delete(pending, id)
		} else if _, ok := m["tool_call_id"]; ok {
			add("message %d: tool_call_id on a %s message", i, role)
		}
		if role == "assistant" {
			assistants++
		}
		counted = append(counted, Message{Role: role, Content: content + callText})
	}
	if assistants == 0 {
		add("example_missing_assistant_message")
	}
	// Calls left open are allowed only in the last message: the model is trained to make
	// them, and nothing came back yet.
	if len(msgs) > 0 {
		var last []struct {
			ID string `json:"id"`
		}
		json.Unmarshal(msgs[len(msgs)-1]["tool_calls"], &last)
		for _, c := range last {
			delete(pending, c.ID)
		}
	}
	if len(pending) > 0 {
		add("calls never answered: %v", pending)
	}
	toolsText, _ := json.Marshal(tools)
	if n := ChatTokens(c, counted) + c.Count(string(toolsText)); n > openAIExampleLimit {
		add("%d tokens, over the %d of one example", n, openAIExampleLimit)
	}
	return errs
}

// toolEpisodes is a stream with what the tool form must handle: HotpotQA and FEVER,
// lookups, and an invalid action that has no tool call.
func toolEpisodes(n int) func() iter.Seq2[pipeline.Episode, error] {
	return episodetest.Stream(n, func(i int, ep *pipeline.Episode) {
		if i%7 == 3 && len(ep.Steps) > 2 {
			ep.Steps[1].Action, ep.Steps[1].ActionType, ep.Steps[1].Argument = "Searhc[x]", pipeline.ActionInvalid, ""
			ep.Steps[1].Observation = "Invalid action: Searhc[x]"
		}
	})
}

// TestOpenAIToolsRowsPassOpenAIChecks runs every openai-tools row of every view through
// OpenAI's data-preparation checks.
func TestOpenAIToolsRowsPassOpenAIChecks(t *testing.T) {
	const n = 40
	cfg := pipeline.ExportConfig{Formats: []string{"openai-tools"}, System: "Use the tools to answer.", ValidationFraction: 0.2,
		SplitSeed: 1, Views: []string{ViewReAct, ViewAct, ViewStandard}, CorrectOnly: true}
	res, dir := runExport(t, cfg, toolEpisodes(n))
	if rows := checkOpenAIToolsRows(t, res, dir, func(string, int, []byte) {}); rows != 3*n {
		t.Errorf("checked %d rows, want %d (3 views of %d)", rows, 3*n, n)
	}
}

// checkOpenAIToolsRows runs every openai-tools row of an export through OpenAI's
// data-preparation checks, hands each row on to each with its file and line number, and
// returns how many rows there were.
func checkOpenAIToolsRows(t *testing.T, res Result, dir string, each func(path string, line int, row []byte)) int {
	t.Helper()
	c := o200k(t)
	rows := 0
	for _, f := range res.Files {
		if f.Format != "openai-tools" {
			continue
		}
		for i, line := range lines(t, filepath.Join(dir, f.Path)) {
			rows++
			for _, e := range checkOpenAIRow(line, c) {
				t.Errorf("%s line %d: %s", f.Path, i+1, e)
			}
			each(f.Path, i+1, line)
		}
	}
	return rows
}

// TestOpenAIChecksCatchFaults: the checker is not a rubber stamp.
func TestOpenAIChecksCatchFaults(t *testing.T) {
	good := `{"messages":[{"role":"user","content":"Question: q"},{"role":"assistant","content":"t","tool_calls":[{"id":"a1","type":"function","function":{"name":"search","arguments":"{\"entity\":\"X\"}"}}],"weight":1},{"role":"tool","tool_call_id":"a1","content":"obs"},{"role":"assistant","tool_calls":[{"id":"a2","type":"function","function":{"name":"finish","arguments":"{\"answer\":\"y\"}"}}],"weight":1}],"tools":` + tool.JSON("hotpotqa") + `}`
	c := o200k(t)
	if errs := checkOpenAIRow([]byte(good), c); len(errs) > 0 {
		t.Fatalf("a good row: %v", errs)
	}
	faults := []struct{ name, from, to, want string }{
		{"weight on user", `"content":"Question: q"}`, `"content":"Question: q","weight":1}`, "weight on a user"},
		{"id mismatch", `"tool_call_id":"a1"`, `"tool_call_id":"zz"`, "answers \"zz\""},
		{"arguments object", `"arguments":"{\"entity\":\"X\"}"`, `"arguments":{"entity":"X"}`, "arguments are not a string"},
		{"unknown role", `"role":"tool"`, `"role":"observation"`, "unrecognized_role"},
		{"unknown key", `"weight":1},{"role":"tool"`, `"weight":1,"train":true},{"role":"tool"`, "message_unrecognized_key"},
		{"undeclared tool", `"name":"search"`, `"name":"browse"`, "declared function"},
		{"unanswered call", `{"role":"tool","tool_call_id":"a1","content":"obs"},`, ``, "before the tool messages"},
	}
	for _, f := range faults {
		row := strings.Replace(good, f.from, f.to, 1)
		if row == good {
			t.Fatalf("%s: the fault was not applied", f.name)
		}
		errs := checkOpenAIRow([]byte(row), c)
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, f.want) }) {
			t.Errorf("%s: got %v, want an error containing %q", f.name, errs, f.want)
		}
	}
}

// TestShareGPTToolsLayout: LLaMA-Factory's rules for tool turns: human/observation at even
// positions, gpt/function_call at odd ones, the last an assistant turn; each function_call
// parses by LLaMA-Factory's function formatter (llamaFactoryCall) into one call; tools a
// JSON string.
func TestShareGPTToolsLayout(t *testing.T) {
	cfg := pipeline.ExportConfig{Formats: []string{"sharegpt-tools"}, System: "Be brief.", CorrectOnly: true}
	res, dir := runExport(t, cfg, toolEpisodes(20))
	for _, f := range res.Files {
		if f.Format != "sharegpt-tools" {
			continue
		}
		for li, line := range lines(t, filepath.Join(dir, f.Path)) {
			var row struct {
				Conversations []struct{ From, Value string } `json:"conversations"`
				System        string                         `json:"system"`
				Tools         string                         `json:"tools"`
			}
			if err := json.Unmarshal(line, &row); err != nil {
				t.Fatal(err)
			}
			var defs []tool.Def
			if err := json.Unmarshal([]byte(row.Tools), &defs); err != nil || len(defs) != 3 || row.System != "Be brief." {
				t.Errorf("line %d: tools %q (%v), system %q", li+1, row.Tools, err, row.System)
			}
			for i, c := range row.Conversations {
				even := slices.Contains([]string{"human", "observation"}, c.From)
				if even != (i%2 == 0) {
					t.Errorf("line %d turn %d: %s at an %s position", li+1, i, c.From, map[bool]string{true: "even", false: "odd"}[i%2 == 0])
				}
				if c.From == "function_call" {
					_, calls, err := llamaFactoryCall(c.Value)
					if err != nil || len(calls) != 1 || !tool.Valid(calls[0].name) {
						t.Errorf("line %d turn %d: function_call %q: %+v (%v)", li+1, i, c.Value, calls, err)
					}
				}
			}
			if last := row.Conversations[len(row.Conversations)-1]; last.From != "function_call" || !strings.Contains(last.Value, `"name": "finish"`) {
				t.Errorf("line %d: last turn %+v, want the finish call", li+1, last)
			}
		}
	}
}

func TestValidateTools(t *testing.T) {
	base := func() Example {
		ex, err := Render(episodetest.Synth(1), ViewReAct, RenderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}
	tests := []struct {
		name   string
		mod    func(ex *Example)
		reason string
	}{
		{"wrong id", func(ex *Example) { ex.ToolMessages[2].ToolCallID = "nope" }, "answers \"nope\""},
		{"observation trained", func(ex *Example) { ex.ToolMessages[2].Trainable = true }, "tool turn is marked trainable"},
		{"no finish", func(ex *Example) { ex.ToolMessages = ex.ToolMessages[:len(ex.ToolMessages)-1] }, ""},
		{"two calls", func(ex *Example) {
			ex.ToolMessages[1].ToolCalls = append(ex.ToolMessages[1].ToolCalls, ex.ToolMessages[1].ToolCalls[0])
		}, "2 calls"},
		{"unknown function", func(ex *Example) { ex.ToolMessages[1].ToolCalls[0].Name = "browse" }, "not a tool call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := base()
			tt.mod(&ex)
			err := validateTools(&ex, ValidateOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("got %v, want an error containing %q", err, tt.reason)
			}
		})
	}
	ex := base()
	if err := validateTools(&ex, ValidateOptions{}); err != nil {
		t.Errorf("a rendered example: %v", err)
	}
}

// TestMaxTokensHoldsForTheToolForm: with a tool format written, an episode whose tool form
// (which carries the tool definitions) is over export.max_tokens is left out, though its
// text form fits.
func TestMaxTokensHoldsForTheToolForm(t *testing.T) {
	c := o200k(t)
	ex, err := Render(episodetest.Synth(0), ViewReAct, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text, tools := ChatTokens(c, ex.Messages), ToolChatTokens(c, &ex)
	if tools <= text {
		t.Fatalf("tool form %d tokens, text form %d: want the tool form longer", tools, text)
	}
	limit := (text + tools) / 2
	for _, tt := range []struct {
		formats []string
		dropped int
	}{{[]string{"openai-chat"}, 0}, {[]string{"openai-chat", "openai-tools"}, 1}} {
		cfg := pipeline.ExportConfig{Formats: tt.formats, MaxTokens: limit}
		res, _ := runExport(t, cfg, episodetest.Stream(1, nil))
		if res.Dropped["max_tokens"] != tt.dropped {
			t.Errorf("%v with max_tokens %d (text %d, tools %d): dropped %d, want %d", tt.formats, limit, text, tools, res.Dropped["max_tokens"], tt.dropped)
		}
	}
}

// toolsFormatEpisodes is a stream of tools-format episodes (generate.format tools: every
// step records the call the model made) whose second step had no usable call: a known
// tool with a wrong argument, no call, an unknown function, a known tool with arguments
// that are no JSON.
func toolsFormatEpisodes(n int) func() iter.Seq2[pipeline.Episode, error] {
	bad := []*pipeline.ToolCall{
		{ID: "c1", Name: "search", Arguments: `{"query":"Kelmor"}`},
		nil,
		{ID: "c2", Name: "browse", Arguments: `{"url":"x"}`},
		{ID: "c3", Name: "lookup", Arguments: `keyword=river`},
	}
	return episodetest.Stream(n, func(i int, ep *pipeline.Episode) {
		ep.Format = "tools"
		for k := range ep.Steps {
			s := &ep.Steps[k]
			if name, args, ok := tool.FromAction(s.ActionType, s.Argument); ok {
				s.ToolCall = &pipeline.ToolCall{ID: fmt.Sprintf("call_%d", k), Name: name, Arguments: args}
			}
		}
		if len(ep.Steps) > 2 {
			s := &ep.Steps[1]
			s.ToolCall = bad[i%len(bad)]
			s.ActionType, s.Argument, s.Action = pipeline.ActionInvalid, "", "(no tool call)"
			if c := s.ToolCall; c != nil {
				s.Action = c.Name + "(" + c.Arguments + ")"
			}
			s.Observation = "Invalid action: " + s.Action
		}
	})
}

// TestToolsFormatInvalidStepStaysInToolForm: a tools-format episode's invalid step is
// exported as the model made it in tool form (its call of a known tool answered by a tool
// turn; no call, or an unknown function, as a call-less turn and a user turn), never as
// the text layout's "Action:"/"Observation:" lines, and every row passes OpenAI's checks.
func TestToolsFormatInvalidStepStaysInToolForm(t *testing.T) {
	const n = 24
	cfg := pipeline.ExportConfig{Formats: []string{"openai-tools", "hf-tools", "sharegpt-tools"}, SplitSeed: 1,
		Views: []string{ViewReAct, ViewAct}}
	res, dir := runExport(t, cfg, toolsFormatEpisodes(n))
	var wrongArg, noJSON int
	rows := checkOpenAIToolsRows(t, res, dir, func(path string, i int, line []byte) {
		var row struct {
			Messages []struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			t.Fatal(err)
		}
		for k, m := range row.Messages {
			if m.Content != nil && (strings.Contains(*m.Content, "Action: ") || strings.HasPrefix(*m.Content, "Observation: ")) {
				t.Errorf("%s line %d turn %d: a text ReAct turn in a tool-calling row: %q", path, i, k, *m.Content)
			}
			for _, tc := range m.ToolCalls {
				switch {
				case tc.Function.Name == "search" && tc.Function.Arguments == `{"query":"Kelmor"}`:
					wrongArg++
				case tc.Function.Name == "lookup" && tc.Function.Arguments == `{}`:
					noJSON++
				default:
					continue
				}
				if k+1 >= len(row.Messages) || row.Messages[k+1].Role != "tool" || row.Messages[k+1].ToolCallID != tc.ID {
					t.Errorf("%s line %d turn %d: the invalid call is not answered by its tool turn", path, i, k)
				}
			}
		}
	})
	if rows == 0 || wrongArg == 0 || noJSON == 0 {
		t.Errorf("checked %d rows, %d calls with a wrong argument, %d with arguments that were no JSON; want some of each", rows, wrongArg, noJSON)
	}
}
