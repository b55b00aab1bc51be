package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/reactgen/reactgen/internal/fastjson"
	"github.com/reactgen/reactgen/internal/jsonenc"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// RoleTool is the role of a tool result turn in the tool-calling rendering.
const RoleTool = "tool"

// ToolCall is one function call in a tool turn: an id unique within its example, the
// function and its arguments as JSON text (OpenAI's form; hf-tools writes them as an
// object).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolMessage is one turn of the tool-calling rendering of an example. An assistant turn
// holds the thought as content and the action as its one tool call; the observation is a
// tool turn answering that call. Trainable is the loss mask, as in Message.
type ToolMessage struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"` // a tool turn: the function it answers
	Trainable  bool       `json:"trainable"`
	// Reasoning is an assistant turn's reasoning text, apart from its content (the
	// thought), under export.reasoning keep and inline; each format puts it where it
	// goes (reasoning_content, thought words, or inline before the content).
	Reasoning string `json:"reasoning,omitempty"`
}

// toolSet is a task's tool definitions in every form the writers need, built once.
type toolSet struct {
	defs       []tool.Def
	json       string   // the defs as a JSON array
	parameters []string // each def's parameters as JSON, for the Arrow column
	// encoded is the defs as the JSONL rows' encoder writes them (openai-tools' tools,
	// atif's tool_definitions), quoted the json string as a JSON string (hf-tools' and
	// sharegpt-tools' tools): what the row appenders copy into every row.
	encoded, quoted string
}

var (
	toolSetsMu sync.Mutex
	toolSets   = map[string]*toolSet{}
)

// toolsOf returns the tools of task in view: a game's act view offers its actions
// without think, as the act prompts do.
func toolsOf(task, view string) *toolSet {
	act := view == ViewAct && tool.Game(task)
	key := task
	if act {
		key += "/" + ViewAct
	}
	toolSetsMu.Lock()
	defer toolSetsMu.Unlock()
	if ts, ok := toolSets[key]; ok {
		return ts
	}
	ts := &toolSet{defs: tool.Defs(task), json: tool.JSON(task)}
	if act {
		ts.defs = tool.CommandDefs(task, false)
		data, err := json.Marshal(ts.defs)
		if err != nil {
			panic(err) // built from constants
		}
		ts.json = string(data)
	}
	for _, d := range ts.defs {
		p, err := json.Marshal(d.Function.Parameters)
		if err != nil {
			panic(err) // built from constants
		}
		ts.parameters = append(ts.parameters, string(p))
	}
	var enc bytes.Buffer
	e := fastjson.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	if err := e.Encode(ts.defs); err != nil {
		panic(err) // built from constants
	}
	ts.encoded = strings.TrimSuffix(enc.String(), "\n")
	ts.quoted = string(jsonenc.AppendString(nil, ts.json))
	toolSets[key] = ts
	return ts
}

// parametersOf is the parameters column's JSON of tool d, an example's i-th: the task's
// own tool's, encoded once, or d's encoded now.
func (ts *toolSet) parametersOf(i int, d tool.Def) string {
	if i < len(ts.parameters) && d.Function.Name == ts.defs[i].Function.Name {
		return ts.parameters[i]
	}
	p, _ := json.Marshal(d.Function.Parameters)
	return string(p)
}

// toolCallID is the id of step i's call in episode id: nine hex digits of a hash, the same
// on every export, and of the shape Mistral's templates require (nine alphanumerics).
func toolCallID(episodeID string, i int) string {
	h := sha256.Sum256([]byte(episodeID + "/" + strconv.Itoa(i)))
	return hex.EncodeToString(h[:5])[:9]
}

// renderTools builds the tool-calling turns of ep in view: system?, the question, then per
// step an assistant turn (thought as content, the action as a call) and, but for the
// Finish, a tool turn with the observation. An invalid action of a tools-format episode is
// rendered as the model made it (invalidToolStep); one of a text-format episode has no
// call: its step is an assistant turn with the thought and the action text as the model
// wrote it, and its observation a user turn.
// The standard view is the question and one finish call with the prediction; the cot
// view the same call with the winning chain as its content.
func renderTools(ep *pipeline.Episode, view string, opts RenderOptions) []ToolMessage {
	msgs := make([]ToolMessage, 0, 2*len(ep.Steps)+2)
	if opts.System != "" {
		msgs = append(msgs, ToolMessage{Role: RoleSystem, Content: opts.System})
	}
	msgs = append(msgs, ToolMessage{Role: RoleUser, Content: QuestionLine(ep.Task, ep.Question)})
	call := func(i int, actionType, arg string) ([]ToolCall, bool) {
		name, args, ok := tool.FromAction(actionType, arg)
		if pipeline.GameTask(ep.Task) {
			// A game's calls are its actions as sent (the standard view's prediction is
			// its last).
			text := ep.Prediction
			if actionType != pipeline.ActionFinish && i < len(ep.Steps) {
				text = ep.Steps[i].Action
			}
			name, args, ok = tool.ParseCommand(ep.Task, text)
		}
		if !ok {
			return nil, false
		}
		return []ToolCall{{ID: toolCallID(ep.ID, i), Name: name, Arguments: args}}, true
	}
	switch view {
	case ViewStandard:
		calls, _ := call(0, pipeline.ActionFinish, ep.Prediction)
		return append(msgs, ToolMessage{Role: RoleAssistant, ToolCalls: calls, Trainable: true, Reasoning: answerReasoning(ep, view, opts)})
	case ViewCoT:
		chain, _ := ep.Chain()
		calls, _ := call(0, pipeline.ActionFinish, ep.Prediction)
		return append(msgs, ToolMessage{Role: RoleAssistant, Content: chain, ToolCalls: calls, Trainable: true, Reasoning: answerReasoning(ep, view, opts)})
	}
	masked := maskedOf(ep)
	for i, s := range ep.Steps {
		thought := s.Thought
		if view == ViewAct {
			thought = ""
		}
		train := !slices.Contains(masked, i)
		reasoning := stepReasoning(&ep.Steps[i], view, opts)
		calls, ok := call(i, s.ActionType, s.Argument)
		if !ok && ep.Format == formatTools {
			msgs = append(msgs, invalidToolStep(ep, i, thought, train, reasoning, opts)...)
			continue
		}
		if !ok {
			content := "Action: " + s.Action
			if thought != "" {
				content = thought + "\n" + content
			}
			msgs = append(msgs, ToolMessage{Role: RoleAssistant, Content: content, Trainable: train, Reasoning: reasoning},
				ToolMessage{Role: RoleUser, Content: "Observation: " + s.Observation, Trainable: opts.TrainObservations})
			continue
		}
		msgs = append(msgs, ToolMessage{Role: RoleAssistant, Content: thought, ToolCalls: calls, Trainable: train, Reasoning: reasoning})
		if i == len(ep.Steps)-1 && ep.Ended() {
			break
		}
		msgs = append(msgs, ToolMessage{Role: RoleTool, Content: s.Observation, ToolCallID: calls[0].ID, Name: calls[0].Name,
			Trainable: opts.TrainObservations})
	}
	return msgs
}

// formatTools is generate.format tools: the model acted through function calls.
const formatTools = "tools"

// invalidToolStep renders step i of a tools-format episode that has no usable action as
// the model made it, and as the model saw it in its next request
// (prompt.Layout.toolHistory): its call, when it named one of the task's tools (a wrong,
// missing or empty argument), as an assistant turn with that call (arguments that are no
// JSON become {}, as they were sent back) answered by a tool turn with the observation;
// a reply with no call, or one naming a function the task does not have (which a
// tool-calling dataset cannot declare: OpenAI refuses calls to undeclared tools), as an
// assistant turn with the reply's text and the observation as a user turn. Never the text
// layout's "Action:" and "Observation:" lines.
func invalidToolStep(ep *pipeline.Episode, i int, thought string, train bool, reasoning string, opts RenderOptions) []ToolMessage {
	s := &ep.Steps[i]
	if c := s.ToolCall; c != nil && tool.ValidFor(ep.Task, c.Name) {
		args := c.Arguments
		if !json.Valid([]byte(args)) {
			args = "{}"
		}
		id := toolCallID(ep.ID, i)
		return []ToolMessage{
			{Role: RoleAssistant, Content: thought, ToolCalls: []ToolCall{{ID: id, Name: c.Name, Arguments: args}}, Trainable: train, Reasoning: reasoning},
			{Role: RoleTool, Content: s.Observation, ToolCallID: id, Name: c.Name, Trainable: opts.TrainObservations},
		}
	}
	content := thought
	if content == "" {
		content = s.Action // the act view, or a reply with no text: "(no tool call)" or the call as written
	}
	return []ToolMessage{
		{Role: RoleAssistant, Content: content, Trainable: train, Reasoning: reasoning},
		{Role: RoleUser, Content: s.Observation, Trainable: opts.TrainObservations},
	}
}

// validateTools checks the tool turns: system? user, then assistant turns each followed
// by the tool turn answering its call (or a user turn after a call-less one), the last
// turn an assistant's finish call; ids unique and answered in order; the loss mask as in
// Validate.
func validateTools(ex *Example, opts ValidateOptions) error {
	fail := func(format string, args ...any) error {
		return &ValidationError{ID: ex.ID, View: ex.View, Reason: "tool turns: " + fmt.Sprintf(format, args...)}
	}
	msgs := ex.ToolMessages
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		msgs = msgs[1:]
	}
	if len(msgs) < 2 || msgs[0].Role != RoleUser || msgs[0].Trainable {
		return fail("want the question as an untrained user turn, then the assistant")
	}
	seen := map[string]bool{}
	pending := ""
	step := -1
	for i, m := range msgs[1:] {
		turn := i + 2
		switch m.Role {
		case RoleAssistant:
			step++
			if pending != "" {
				return fail("turn %d: call %s has no tool turn", turn, pending)
			}
			if !m.Trainable && !ex.isMasked(step) {
				return fail("turn %d: assistant turn is not trainable", turn)
			}
			if len(m.ToolCalls) > 1 {
				return fail("turn %d: %d calls in one turn, want one", turn, len(m.ToolCalls))
			}
			for _, c := range m.ToolCalls {
				if seen[c.ID] || c.ID == "" {
					return fail("turn %d: call id %q is empty or used twice", turn, c.ID)
				}
				if !tool.ValidFor(ex.Task, c.Name) || !json.Valid([]byte(c.Arguments)) {
					return fail("turn %d: call %s(%s) is not a tool call", turn, c.Name, c.Arguments)
				}
				seen[c.ID] = true
				pending = c.ID
			}
		case RoleTool, RoleUser:
			if m.Role == RoleTool && m.ToolCallID != pending {
				return fail("turn %d: tool turn answers %q, want %q", turn, m.ToolCallID, pending)
			}
			if m.Role == RoleUser && pending != "" {
				return fail("turn %d: user turn after call %s, want its tool turn", turn, pending)
			}
			if m.Trainable && !opts.TrainObservations {
				return fail("turn %d: %s turn is marked trainable", turn, m.Role)
			}
			pending = ""
		default:
			return fail("turn %d: role %q", turn, m.Role)
		}
	}
	last := msgs[len(msgs)-1]
	if pipeline.GameTask(ex.Task) && ex.View != ViewStandard && ex.View != ViewCoT {
		if last.Role != RoleAssistant || !last.Trainable {
			return fail("the last turn is not the assistant's trainable action that ended the game")
		}
		return nil
	}
	if last.Role != RoleAssistant || len(last.ToolCalls) != 1 || last.ToolCalls[0].Name != tool.Finish {
		return fail("the last turn is not the assistant's finish call")
	}
	if !last.Trainable {
		return fail("the finish call is masked")
	}
	return nil
}

// The JSON shapes of the tool formats, written like every JSONL row by jsonlEncoder.
type (
	openAIToolsRow struct {
		Messages          []openAIToolMsg `json:"messages"`
		Tools             []tool.Def      `json:"tools"`
		ParallelToolCalls bool            `json:"parallel_tool_calls"`
	}
	openAIToolMsg struct {
		Role    string  `json:"role"`
		Content *string `json:"content,omitempty"`
		// ReasoningContent is the turn's reasoning under export.reasoning keep: the field
		// the Qwen3-family templates render. OpenAI's fine-tuning format has no such key:
		// reactgen train uploads the rows without it (finetune.ForUpload).
		ReasoningContent string           `json:"reasoning_content,omitempty"`
		ToolCalls        []openAIToolCall `json:"tool_calls,omitempty"`
		ToolCallID       string           `json:"tool_call_id,omitempty"`
		Weight           *int             `json:"weight,omitempty"`
	}
	openAIToolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	// hfToolsRow keeps the keys a datasets load makes uniform harmless: the tools as one
	// JSON string (TRL's SFTTrainer and the hand-off parse it), each call's arguments as a
	// JSON string, so that Arrow's JSON inference cannot merge one function's argument
	// keys into another's as nulls (docs/formats.md, "Loading the files").
	hfToolsRow struct {
		Messages []hfToolMsg `json:"messages"`
		Tools    string      `json:"tools"`
	}
	hfToolMsg struct {
		Role             string           `json:"role"`
		Content          string           `json:"content"`
		ReasoningContent string           `json:"reasoning_content,omitempty"`
		ToolCalls        []openAIToolCall `json:"tool_calls,omitempty"`
		ToolCallID       string           `json:"tool_call_id,omitempty"`
		Name             string           `json:"name,omitempty"`
	}
	shareGPTToolsRow struct {
		Conversations []shareGPTTurn `json:"conversations"`
		System        string         `json:"system,omitempty"`
		Tools         string         `json:"tools"`
	}
)

// openAIToolsLine writes OpenAI's fine-tuning chat format with tools: a top-level tools
// array, assistant turns with tool_calls (arguments as a JSON string) and weight 1, tool
// turns with tool_call_id, parallel_tool_calls false (one call per turn). A call-less
// assistant turn and the user turn after it are plain chat turns.
func openAIToolsLine(ex *Example, o lineOptions) []any {
	row := openAIToolsRow{Messages: make([]openAIToolMsg, 0, len(ex.ToolMessages)), Tools: toolsOf(ex.Task, ex.View).defs}
	one, zero := 1, 0
	for _, m := range ex.ToolMessages {
		om := openAIToolMsg{Role: m.Role, ToolCallID: m.ToolCallID}
		content := m.Content
		if o.Reasoning == ReasoningInline {
			content = InlineThink(m.Reasoning) + content
		} else {
			om.ReasoningContent = m.Reasoning
		}
		if content != "" || len(m.ToolCalls) == 0 {
			om.Content = &content
		}
		for _, c := range m.ToolCalls {
			var oc openAIToolCall
			oc.ID, oc.Type = c.ID, "function"
			oc.Function.Name, oc.Function.Arguments = c.Name, c.Arguments
			om.ToolCalls = append(om.ToolCalls, oc)
		}
		if m.Role == RoleAssistant {
			om.Weight = &one
			if !m.Trainable { // a step the filter masked
				om.Weight = &zero
			}
		}
		row.Messages = append(row.Messages, om)
	}
	return []any{row}
}

// hfToolsLine writes the layout of tokenizer.apply_chat_template(messages, tools=...), as
// TRL's SFTTrainer and axolotl's chat_template loader read it: assistant turns with the
// thought as content, the reasoning text as reasoning_content (the field Qwen3- and
// GLM-family templates render) and tool_calls, tool turns with tool_call_id and the
// function's name, and the tool definitions. The tools and each call's arguments are JSON
// strings (hfToolsRow says why).
func hfToolsLine(ex *Example, _ lineOptions) []any {
	row := hfToolsRow{Messages: make([]hfToolMsg, 0, len(ex.ToolMessages)), Tools: toolsOf(ex.Task, ex.View).json}
	for _, m := range ex.ToolMessages {
		hm := hfToolMsg{Role: m.Role, Content: m.Content, ReasoningContent: m.Reasoning, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			var hc openAIToolCall
			hc.ID, hc.Type = c.ID, "function"
			hc.Function.Name, hc.Function.Arguments = c.Name, c.Arguments
			hm.ToolCalls = append(hm.ToolCalls, hc)
		}
		row.Messages = append(row.Messages, hm)
	}
	return []any{row}
}

// thoughtOpen and thoughtClose are LLaMA-Factory's default thought words (its
// register_template default, and what its Qwen3, DeepSeek-R1 and GLM templates use): the
// reasoning text of a gpt or function_call turn goes between them, ahead of the rest.
// toolCallOpen and toolCallClose are its default tool-call words: a function_call value
// that holds them is parsed as free text (the ReAct thought) and the call's JSON between
// them (LLaMA-Factory >= 0.9.4's FunctionFormatter).
const (
	thoughtOpen   = "<think>\n"
	thoughtClose  = "\n</think>\n\n"
	toolCallOpen  = "<tool_call>"
	toolCallClose = "</tool_call>"
)

// withReasoning puts reasoning ahead of content in LLaMA-Factory's thought words; content
// alone when there is none.
func withReasoning(reasoning, content string) string {
	if reasoning == "" {
		return content
	}
	return thoughtOpen + reasoning + thoughtClose + content
}

// shareGPTToolsLine writes LLaMA-Factory's sharegpt layout for tool use: human, then per
// step a function_call turn and an observation turn; the system message and the tools (a
// JSON string) as columns. A function_call value is the reasoning text in thought words
// (when the model returned any), the ReAct thought and a newline, then the call
// {"name", "arguments"} between the tool-call words: LLaMA-Factory keeps everything
// outside the tool-call words as the turn's text and formats the call in its template's
// tool syntax. A call-less step is a gpt turn.
func shareGPTToolsLine(ex *Example, _ lineOptions) []any {
	row := shareGPTToolsRow{Conversations: make([]shareGPTTurn, 0, len(ex.ToolMessages)), Tools: toolsOf(ex.Task, ex.View).json}
	for _, m := range ex.ToolMessages {
		switch {
		case m.Role == RoleSystem:
			row.System = m.Content
		case m.Role == RoleUser && len(row.Conversations) == 0:
			row.Conversations = append(row.Conversations, shareGPTTurn{"human", m.Content})
		case m.Role == RoleUser, m.Role == RoleTool:
			row.Conversations = append(row.Conversations, shareGPTTurn{"observation", m.Content})
		case len(m.ToolCalls) == 0:
			row.Conversations = append(row.Conversations, shareGPTTurn{"gpt", withReasoning(m.Reasoning, m.Content)})
		default:
			var v strings.Builder
			if m.Content != "" {
				v.WriteString(m.Content)
				v.WriteByte('\n')
			}
			c := m.ToolCalls[0]
			name, _ := json.Marshal(c.Name)
			v.WriteString(toolCallOpen + `{"name": `)
			v.Write(name)
			v.WriteString(`, "arguments": `)
			v.WriteString(c.Arguments)
			v.WriteString("}" + toolCallClose)
			row.Conversations = append(row.Conversations, shareGPTTurn{"function_call", withReasoning(m.Reasoning, v.String())})
		}
	}
	return []any{row}
}

// The Arrow layout of the tool columns: the same structure as hf-tools' rows, with each
// call's arguments and each tool's parameters as JSON text (one Arrow type for every
// function, where objects with different keys would not share one).
var (
	toolCallType = arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "type", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "function", Type: arrow.StructOf(
			arrow.Field{Name: "name", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "arguments", Type: arrow.BinaryTypes.String},
		)},
	)
	toolMessagesType = arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "role", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "content", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "tool_calls", Type: arrow.ListOf(toolCallType)},
		arrow.Field{Name: "tool_call_id", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "trainable", Type: arrow.FixedWidthTypes.Boolean},
		arrow.Field{Name: "reasoning", Type: arrow.BinaryTypes.String},
	))
	toolsType = arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "type", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "function", Type: arrow.StructOf(
			arrow.Field{Name: "name", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "description", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "parameters", Type: arrow.BinaryTypes.String},
		)},
	))
)

func putTools(c *colBuf, ex *Example) {
	st, f := c.structs()
	fn := f[1].children
	ts := toolsOf(ex.Task, ex.View)
	for i, d := range ex.Tools {
		st.n++
		f[0].str(d.Type)
		f[1].n++
		fn[0].str(d.Function.Name)
		fn[1].str(d.Function.Description)
		fn[2].str(ts.parametersOf(i, d))
	}
	c.endList()
}

func readTools(a arrow.Array, i int, ex *Example) {
	l := a.(*array.List)
	st := l.ListValues().(*array.Struct)
	typ := st.Field(0).(*array.String)
	fn := st.Field(1).(*array.Struct)
	name, desc, params := fn.Field(0).(*array.String), fn.Field(1).(*array.String), fn.Field(2).(*array.String)
	start, end := l.ValueOffsets(i)
	ex.Tools = make([]tool.Def, 0, end-start)
	for k := int(start); k < int(end); k++ {
		d := tool.Def{Type: typ.Value(k), Function: tool.Function{Name: name.Value(k), Description: desc.Value(k)}}
		if err := json.Unmarshal([]byte(params.Value(k)), &d.Function.Parameters); err != nil {
			d.Function.Description += " (parameters unreadable: " + err.Error() + ")"
		}
		ex.Tools = append(ex.Tools, d)
	}
}

func toolsSize(ex *Example) int {
	ts := toolsOf(ex.Task, ex.View)
	n := 4
	for i, d := range ts.defs {
		n += len(d.Type) + len(d.Function.Name) + len(d.Function.Description) + len(ts.parameters[i]) + 16
	}
	return n
}

func putToolMessages(c *colBuf, ex *Example) {
	st, f := c.structs()
	calls := f[2]
	cst, cf := calls.structs()
	cfn := cf[2].children
	for _, m := range ex.ToolMessages {
		st.n++
		f[0].str(m.Role)
		f[1].str(m.Content)
		for _, tc := range m.ToolCalls {
			cst.n++
			cf[0].str(tc.ID)
			cf[1].str("function")
			cf[2].n++
			cfn[0].str(tc.Name)
			cfn[1].str(tc.Arguments)
		}
		calls.endList()
		f[3].str(m.ToolCallID)
		f[4].str(m.Name)
		f[5].boolean(m.Trainable)
		f[6].str(m.Reasoning)
	}
	c.endList()
}

func readToolMessages(a arrow.Array, i int, ex *Example) {
	l := a.(*array.List)
	st := l.ListValues().(*array.Struct)
	role, content := st.Field(0).(*array.String), st.Field(1).(*array.String)
	calls := st.Field(2).(*array.List)
	cst := calls.ListValues().(*array.Struct)
	cid := cst.Field(0).(*array.String)
	cfn := cst.Field(2).(*array.Struct)
	cname, cargs := cfn.Field(0).(*array.String), cfn.Field(1).(*array.String)
	callID, name := st.Field(3).(*array.String), st.Field(4).(*array.String)
	trainable := st.Field(5).(*array.Boolean)
	var reasoning *array.String
	if st.NumField() > 6 {
		reasoning = st.Field(6).(*array.String)
	}
	start, end := l.ValueOffsets(i)
	ex.ToolMessages = make([]ToolMessage, 0, end-start)
	for k := int(start); k < int(end); k++ {
		m := ToolMessage{Role: role.Value(k), Content: content.Value(k), ToolCallID: callID.Value(k), Name: name.Value(k),
			Trainable: trainable.Value(k)}
		if reasoning != nil {
			m.Reasoning = reasoning.Value(k)
		}
		cs, ce := calls.ValueOffsets(k)
		for j := int(cs); j < int(ce); j++ {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: cid.Value(j), Name: cname.Value(j), Arguments: cargs.Value(j)})
		}
		ex.ToolMessages = append(ex.ToolMessages, m)
	}
}

func toolMessagesSize(ex *Example) int {
	n := 4
	for _, m := range ex.ToolMessages {
		n += len(m.Role) + len(m.Content) + len(m.ToolCallID) + len(m.Name) + len(m.Reasoning) + 28
		for _, c := range m.ToolCalls {
			n += len(c.ID) + len(c.Name) + len(c.Arguments) + 24
		}
	}
	return n
}
