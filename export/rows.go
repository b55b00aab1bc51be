package export

import (
	"strconv"

	"github.com/reactgen/reactgen/internal/jsonenc"
	"github.com/reactgen/reactgen/pipeline"
)

// rowAppender appends the rows of w's example in one JSONL format, each followed by a
// newline: the bytes jsonlEncoder wrote by encoding the structs of the format's
// lineFormat (lines.go, tools.go, interchange.go), without building them. It returns
// the rows appended, or ok false when the example holds something it does not write
// exactly as the encoder (rowjson.go); the caller then drops what it appended and
// encodes the structs.
type rowAppender func(w *rowWriter, dst []byte) (out []byte, rows int, ok bool)

// rowAppenders are the JSONL formats written by hand; chat-text is encoded from its
// struct.
var rowAppenders = map[string]rowAppender{
	"openai-chat":    (*rowWriter).openAIChat,
	"axolotl-chat":   (*rowWriter).axolotlChat,
	"completion":     (*rowWriter).completion,
	"alpaca":         (*rowWriter).alpaca,
	"sharegpt":       (*rowWriter).shareGPT,
	"agentgym":       (*rowWriter).agentGym,
	"openai-tools":   (*rowWriter).openAITools,
	"hf-tools":       (*rowWriter).hfTools,
	"sharegpt-tools": (*rowWriter).shareGPTTools,
	"adp":            (*rowWriter).adp,
	"atif":           (*rowWriter).atif,
}

// appendKey appends ,"key": (without the comma for the first key of an object, which
// the caller writes with its brace).
func appendKey(dst []byte, key string) []byte {
	dst = append(dst, ",\""...)
	dst = append(dst, key...)
	return append(dst, "\":"...)
}

// appendStringKey appends ,"key":"s", and nothing when omit and s is empty (omitempty).
func appendStringKey(dst []byte, key, s string, omit bool) []byte {
	if omit && s == "" {
		return dst
	}
	return jsonenc.AppendString(appendKey(dst, key), s)
}

// appendWeight appends ,"weight":1 or 0.
func appendWeight(dst []byte, trainable bool) []byte {
	if trainable {
		return append(dst, `,"weight":1`...)
	}
	return append(dst, `,"weight":0`...)
}

// appendTurn appends a turn's role, content and reasoning_content (chatTurn,
// axolotlTurn, and hf-tools' turn), the object left open.
func appendTurn(dst []byte, role, content, reasoning string) []byte {
	dst = jsonenc.AppendString(append(dst, `{"role":`...), role)
	dst = appendStringKey(dst, "content", content, false)
	return appendStringKey(dst, "reasoning_content", reasoning, true)
}

// openAIChat writes openAIChatLine's row.
func (w *rowWriter) openAIChat(dst []byte) ([]byte, int, bool) {
	dst = append(dst, `{"messages":[`...)
	for i, m := range w.ex.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendTurn(dst, m.Role, m.Content, m.Reasoning)
		if w.o.Weights && m.Role == RoleAssistant {
			dst = appendWeight(dst, m.Trainable)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}\n"...), 1, true
}

// axolotlChat writes axolotlChatLine's row.
func (w *rowWriter) axolotlChat(dst []byte) ([]byte, int, bool) {
	dst = append(dst, `{"messages":[`...)
	for i, m := range w.ex.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendBool(append(appendTurn(dst, m.Role, m.Content, m.Reasoning), `,"train":`...), m.Trainable)
		dst = append(dst, '}')
	}
	return append(dst, "]}\n"...), 1, true
}

// textRows appends the rows of textRows with row, which writes one from the text's
// history and completion ([start, end) in ex.Text).
func (w *rowWriter) textRows(dst []byte, row func(dst []byte, history, completion [2]int) []byte) ([]byte, int) {
	ex := w.ex
	head := len(ex.Prompt())
	if w.o.TrainObservations || len(ex.spans) == 0 {
		if len(ex.Text) < head || ex.Text[:head] != ex.Prompt() {
			head = 0 // Completion is the whole text
		}
		return row(dst, [2]int{head, head}, [2]int{head, len(ex.Text)}), 1
	}
	rows := 0
	for _, sp := range ex.spans {
		if !ex.Messages[sp.msg].Trainable {
			continue
		}
		dst = row(dst, [2]int{head, sp.start}, [2]int{sp.start, sp.end})
		rows++
	}
	return dst, rows
}

// completion writes completionLine's rows.
func (w *rowWriter) completion(dst []byte) ([]byte, int, bool) {
	qline := QuestionLine(w.ex.Task, w.ex.Question)
	dst, rows := w.textRows(dst, func(dst []byte, history, completion [2]int) []byte {
		dst = append(dst, `{"prompt":"`...)
		if w.o.System != "" {
			dst = append(append(dst, w.system...), `\n\n`...)
		}
		dst = append(jsonenc.AppendEscaped(dst, qline), `\n`...)
		dst = append(w.textSpan(dst, history[0], history[1]), `","completion":"`...)
		return append(w.textSpan(dst, completion[0], completion[1]), "\"}\n"...)
	})
	return dst, rows, true
}

// alpaca writes alpacaLine's rows.
func (w *rowWriter) alpaca(dst []byte) ([]byte, int, bool) {
	qline := QuestionLine(w.ex.Task, w.ex.Question)
	dst, rows := w.textRows(dst, func(dst []byte, history, completion [2]int) []byte {
		dst = jsonenc.AppendString(append(dst, `{"instruction":`...), qline)
		dst = w.textSpan(append(dst, `,"input":"`...), history[0], history[1])
		if history[1] > history[0] && w.ex.Text[history[1]-1] == '\n' {
			dst = dst[:len(dst)-len(`\n`)] // strings.TrimSuffix(history, "\n")
		}
		dst = w.textSpan(append(dst, `","output":"`...), completion[0], completion[1])
		dst = append(dst, '"')
		if w.o.System != "" {
			dst = append(append(append(dst, `,"system":"`...), w.system...), '"')
		}
		return append(dst, "}\n"...)
	})
	return dst, rows, true
}

// appendWithReasoning appends withReasoning(reasoning, content) as the inside of a JSON
// string.
func appendWithReasoning(dst []byte, reasoning, content string) []byte {
	if reasoning != "" {
		dst = append(jsonenc.AppendEscaped(append(dst, `<think>\n`...), reasoning), `\n</think>\n\n`...)
	}
	return jsonenc.AppendEscaped(dst, content)
}

// shareGPT writes shareGPTLine's row.
func (w *rowWriter) shareGPT(dst []byte) ([]byte, int, bool) {
	dst = append(dst, `{"conversations":[`...)
	for i, m := range w.ex.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(append(dst, `{"from":"`...), shareGPTFrom(i, m, w.o)...), `","value":"`...)
		dst = append(appendWithReasoning(dst, m.Reasoning, m.Content), "\"}"...)
	}
	return append(dst, "]}\n"...), 1, true
}

// agentGym writes agentGymLine's row.
func (w *rowWriter) agentGym(dst []byte) ([]byte, int, bool) {
	dst = append(dst, `{"conversations":[`...)
	first, system := true, ""
	for _, m := range w.ex.Messages {
		if m.Role == RoleSystem {
			system = m.Content
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		from, loss := "human", "null"
		switch {
		case m.Role == RoleAssistant:
			from, loss = "gpt", strconv.FormatBool(m.Trainable)
		case m.Trainable:
			loss = "true"
		}
		dst = append(append(append(dst, `{"from":"`...), from...), `","loss":`...)
		dst = append(append(dst, loss...), `,"value":"`...)
		if first && system != "" {
			dst = append(jsonenc.AppendEscaped(dst, system), `\n\n`...)
		}
		first = false
		dst = append(jsonenc.AppendEscaped(dst, m.Content), '"')
		if m.Role == RoleAssistant {
			dst = appendStringKey(dst, "reasoning_content", m.Reasoning, true)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"item_id":"`...)
	dst = append(jsonenc.AppendEscaped(dst, w.ex.Task), '_')
	return append(jsonenc.AppendEscaped(dst, w.ex.ID), "\"}\n"...), 1, true
}

// appendCall appends one tool call in OpenAI's layout (openAIToolCall).
func appendCall(dst []byte, c ToolCall) []byte {
	dst = jsonenc.AppendString(append(dst, `{"id":`...), c.ID)
	dst = jsonenc.AppendString(append(dst, `,"type":"function","function":{"name":`...), c.Name)
	dst = jsonenc.AppendString(append(dst, `,"arguments":`...), c.Arguments)
	return append(dst, "}}"...)
}

// appendCalls appends ,"tool_calls":[…], or nothing for none (omitempty).
func appendCalls(dst []byte, calls []ToolCall) []byte {
	if len(calls) == 0 {
		return dst
	}
	dst = append(dst, `,"tool_calls":[`...)
	for i, c := range calls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendCall(dst, c)
	}
	return append(dst, ']')
}

// openAITools writes openAIToolsLine's row.
func (w *rowWriter) openAITools(dst []byte) ([]byte, int, bool) {
	dst = append(dst, `{"messages":[`...)
	inlineMode := w.o.Reasoning == ReasoningInline
	for i, m := range w.ex.ToolMessages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonenc.AppendString(append(dst, `{"role":`...), m.Role)
		inline := inlineMode && m.Reasoning != ""
		if inline || m.Content != "" || len(m.ToolCalls) == 0 {
			dst = append(dst, `,"content":"`...)
			if inline {
				dst = append(jsonenc.AppendEscaped(append(dst, `<think>\n`...), m.Reasoning), `\n</think>\n\n`...)
			}
			dst = append(jsonenc.AppendEscaped(dst, m.Content), '"')
		}
		if !inlineMode {
			dst = appendStringKey(dst, "reasoning_content", m.Reasoning, true)
		}
		dst = appendCalls(dst, m.ToolCalls)
		dst = appendStringKey(dst, "tool_call_id", m.ToolCallID, true)
		if m.Role == RoleAssistant {
			dst = appendWeight(dst, m.Trainable)
		}
		dst = append(dst, '}')
	}
	dst = append(append(dst, `],"tools":`...), w.tools().encoded...)
	return append(dst, ",\"parallel_tool_calls\":false}\n"...), 1, true
}

// hfTools writes hfToolsLine's row.
func (w *rowWriter) hfTools(dst []byte) ([]byte, int, bool) {
	dst = append(dst, `{"messages":[`...)
	for i, m := range w.ex.ToolMessages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendCalls(appendTurn(dst, m.Role, m.Content, m.Reasoning), m.ToolCalls)
		dst = appendStringKey(dst, "tool_call_id", m.ToolCallID, true)
		dst = appendStringKey(dst, "name", m.Name, true)
		dst = append(dst, '}')
	}
	dst = append(append(dst, `],"tools":`...), w.tools().quoted...)
	return append(dst, "}\n"...), 1, true
}

// shareGPTTools writes shareGPTToolsLine's row.
func (w *rowWriter) shareGPTTools(dst []byte) ([]byte, int, bool) {
	dst = append(dst, `{"conversations":[`...)
	system, n := "", 0
	turn := func(from string) {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(append(append(dst, `{"from":"`...), from...), `","value":"`...)
	}
	for _, m := range w.ex.ToolMessages {
		switch {
		case m.Role == RoleSystem:
			system = m.Content
			continue
		case m.Role == RoleUser && n == 0:
			turn("human")
			dst = jsonenc.AppendEscaped(dst, m.Content)
		case m.Role == RoleUser, m.Role == RoleTool:
			turn("observation")
			dst = jsonenc.AppendEscaped(dst, m.Content)
		case len(m.ToolCalls) == 0:
			turn("gpt")
			dst = appendWithReasoning(dst, m.Reasoning, m.Content)
		default:
			c := m.ToolCalls[0]
			if !jsonenc.PlainHTML(c.Name) {
				return dst, 0, false // json.Marshal of the name would escape it
			}
			turn("function_call")
			if m.Reasoning != "" {
				dst = append(jsonenc.AppendEscaped(append(dst, `<think>\n`...), m.Reasoning), `\n</think>\n\n`...)
			}
			if m.Content != "" {
				dst = append(jsonenc.AppendEscaped(dst, m.Content), `\n`...)
			}
			dst = append(append(dst, `<tool_call>{\"name\": \"`...), c.Name...)
			dst = append(dst, `\", \"arguments\": `...)
			dst = append(jsonenc.AppendEscaped(dst, c.Arguments), `}</tool_call>`...)
		}
		dst = append(dst, "\"}"...)
	}
	dst = append(dst, ']')
	dst = appendStringKey(dst, "system", system, true)
	dst = append(append(dst, `,"tools":`...), w.tools().quoted...)
	return append(dst, "}\n"...), 1, true
}

// appendReward appends ,"reward":r, or nothing for none; ok is false for a reward the
// encoder refuses.
func appendReward(dst []byte, key string, r *float64) ([]byte, bool) {
	if r == nil {
		return dst, true
	}
	return appendFloat(appendKey(dst, key), *r)
}

// adp writes adpLine's row.
func (w *rowWriter) adp(dst []byte) ([]byte, int, bool) {
	ex := w.ex
	steps := ex.interchangeSteps()
	dst = append(dst, `{"schema_version":"`+ADPSchemaVersion+`","id":"`...)
	dst = append(jsonenc.AppendEscaped(jsonenc.AppendEscaped(dst, ex.ID), viewSuffix(ex.View)), `","content":[`...)
	// Every item but the last is closed as the next one starts: the last one takes the
	// reward.
	dst = jsonenc.AppendString(append(dst, `{"class_":"text_observation","content":`...), QuestionLine(ex.Task, ex.Question))
	dst = append(dst, `,"source":"user"`...)
	for i := range steps {
		s := &steps[i]
		if s.Call != nil {
			if !rawAsIs(s.Call.Arguments) {
				return dst, 0, false
			}
			dst = jsonenc.AppendString(append(dst, `},{"class_":"api_action","function":`...), s.Call.Name)
			dst = append(append(dst, `,"kwargs":`...), s.Call.Arguments...)
		} else {
			dst = jsonenc.AppendString(append(dst, `},{"class_":"message_action","content":`...), s.Action)
		}
		dst = appendStringKey(dst, "description", s.Thought, true)
		dst = appendStringKey(dst, "reasoning_content", s.Reasoning, true)
		if s.HasObservation {
			dst = jsonenc.AppendString(append(dst, `},{"class_":"text_observation","content":`...), s.Observation)
			dst = append(dst, `,"source":"environment"`...)
		}
	}
	var ok bool
	if dst, ok = appendReward(dst, "reward", ex.Reward); !ok {
		return dst, 0, false
	}
	dst = append(dst, `}],"details":{"source":"reactgen"`...)
	dst = appendStringKey(dst, "episode_id", ex.ID, false)
	dst = appendStringKey(dst, "run_id", ex.RunID, false)
	dst = appendStringKey(dst, "task", ex.Task, false)
	dst = appendStringKey(dst, "question_id", ex.QuestionID, false)
	dst = appendStringKey(dst, "question", ex.Question, false)
	dst = appendStringKey(dst, "answer", ex.Answer, false)
	dst = appendStringKey(dst, "prediction", ex.Prediction, false)
	dst = appendBool(append(dst, `,"correct":"`...), ex.Correct)
	dst = strconv.AppendFloat(append(dst, `","em":"`...), ex.EM, 'g', -1, 64)
	dst = strconv.AppendFloat(append(dst, `","f1":"`...), ex.F1, 'g', -1, 64)
	dst = append(dst, '"')
	if ex.Reward != nil {
		dst = strconv.AppendFloat(append(dst, `,"reward":"`...), *ex.Reward, 'g', -1, 64)
		dst = append(dst, '"')
	}
	dst = appendStringKey(dst, "method", ex.Method, false)
	dst = appendStringKey(dst, "policy", ex.Policy, false)
	dst = appendStringKey(dst, "view", ex.View, false)
	dst = appendStringKey(dst, "split", ex.Split, false)
	return append(dst, "}}\n"...), 1, true
}

// atifAgentVersion is the version in ATIF's agent object.
var atifAgentVersion = "episode-schema-" + strconv.Itoa(pipeline.SchemaVersion)

// appendIntsKey appends ,"key":[…], or nothing for none (omitempty).
func appendIntsKey(dst []byte, key string, ns []int64) []byte {
	if len(ns) == 0 {
		return dst
	}
	dst = append(appendKey(dst, key), '[')
	for i, n := range ns {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, n, 10)
	}
	return append(dst, ']')
}

// appendIntKey appends ,"key":n, and nothing when omit and n is 0 (omitempty).
func appendIntKey(dst []byte, key string, n int, omit bool) []byte {
	if omit && n == 0 {
		return dst
	}
	return strconv.AppendInt(appendKey(dst, key), int64(n), 10)
}

// appendFloatKey appends ,"key":f, and nothing when omit and f is 0 (omitempty); ok is
// false for a float the encoder refuses.
func appendFloatKey(dst []byte, key string, f float64, omit bool) ([]byte, bool) {
	if omit && f == 0 {
		return dst, true
	}
	return appendFloat(appendKey(dst, key), f)
}

// appendATIFMetrics appends a step's "metrics" object (atifMetrics).
func appendATIFMetrics(dst []byte, m *atifMetrics) ([]byte, bool) {
	dst = strconv.AppendInt(append(dst, `,"metrics":{"prompt_tokens":`...), int64(m.PromptTokens), 10)
	dst = appendIntKey(dst, "completion_tokens", m.CompletionTokens, false)
	dst = appendIntKey(dst, "cached_tokens", m.CachedTokens, true)
	var ok bool
	if dst, ok = appendFloatKey(dst, "cost_usd", m.CostUSD, true); !ok {
		return dst, false
	}
	dst = appendIntsKey(dst, "prompt_token_ids", m.PromptTokenIDs)
	dst = appendIntsKey(dst, "completion_token_ids", m.CompletionTokenIDs)
	if len(m.Logprobs) > 0 {
		dst = append(dst, `,"logprobs":[`...)
		for i, f := range m.Logprobs {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendFloat(dst, f); !ok {
				return dst, false
			}
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), true
}

// atif writes atifLine's row.
func (w *rowWriter) atif(dst []byte) ([]byte, int, bool) {
	ex := w.ex
	steps := ex.interchangeSteps()
	ts := w.tools()
	defs := ts.encoded
	switch {
	case ex.Tools == nil:
		defs = "null"
	case len(ex.Tools) == 0:
		defs = "[]"
	case len(ex.Tools) != len(ts.defs) || &ex.Tools[0] != &ts.defs[0]:
		return dst, 0, false // tools of the example's own: encoded from the struct
	}
	dst = append(dst, `{"schema_version":"`+ATIFSchemaVersion+`"`...)
	dst = appendStringKey(dst, "session_id", ex.RunID, true)
	dst = append(jsonenc.AppendEscaped(jsonenc.AppendEscaped(append(dst, `,"trajectory_id":"`...), ex.ID), viewSuffix(ex.View)), '"')
	dst = append(dst, `,"agent":{"name":"`+atifAgentName+`","version":"`...)
	dst = append(append(dst, atifAgentVersion...), '"')
	dst = appendStringKey(dst, "model_name", ex.Policy, true)
	dst = append(append(append(dst, `,"tool_definitions":`...), defs...), `},"steps":[`...)
	id := 0
	step := func(source string) {
		if id > 0 {
			dst = append(dst, ',')
		}
		id++
		dst = strconv.AppendInt(append(dst, `{"step_id":`...), int64(id), 10)
		dst = append(append(append(dst, `,"source":"`...), source...), '"')
	}
	if w.o.System != "" {
		step("system")
		dst = append(append(append(dst, `,"message":"`...), w.system...), "\"}"...)
	}
	step("user")
	dst = append(appendStringKey(dst, "message", QuestionLine(ex.Task, ex.Question), false), '}')
	var final atifFinalMetrics
	metered := false
	for i := range steps {
		s := &steps[i]
		step("agent")
		m, n, model, calls := atifStepMetrics(s.Calls)
		if calls {
			dst = appendStringKey(dst, "model_name", model, true)
		}
		dst = append(dst, `,"message":"`...)
		if s.Call != nil {
			dst = jsonenc.AppendEscaped(dst, s.Thought)
		} else {
			if s.Thought != "" {
				dst = append(jsonenc.AppendEscaped(dst, s.Thought), `\n`...)
			}
			dst = jsonenc.AppendEscaped(append(dst, "Action: "...), s.Action)
		}
		dst = append(dst, '"')
		dst = appendStringKey(dst, "reasoning_content", s.Reasoning, true)
		if s.Call != nil {
			if !rawAsIs(s.Call.Arguments) {
				return dst, 0, false
			}
			dst = jsonenc.AppendString(append(dst, `,"tool_calls":[{"tool_call_id":`...), s.Call.ID)
			dst = appendStringKey(dst, "function_name", s.Call.Name, false)
			dst = append(append(append(dst, `,"arguments":`...), s.Call.Arguments...), "}]"...)
		}
		if s.HasObservation {
			dst = append(dst, `,"observation":{"results":[{`...)
			if s.Call != nil && s.Call.ID != "" {
				dst = jsonenc.AppendString(append(dst, `"source_call_id":`...), s.Call.ID)
				dst = append(dst, ',')
			}
			dst = append(jsonenc.AppendString(append(dst, `"content":`...), s.Observation), "}]}"...)
		}
		if calls {
			var ok bool
			if dst, ok = appendATIFMetrics(dst, &m); !ok {
				return dst, 0, false
			}
			dst = strconv.AppendInt(append(dst, `,"llm_call_count":`...), int64(n), 10)
			final.TotalPromptTokens += m.PromptTokens
			final.TotalCompletionTokens += m.CompletionTokens
			final.TotalCachedTokens += m.CachedTokens
			final.TotalCostUSD += m.CostUSD
			metered = true
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	var ok bool
	if metered {
		dst = strconv.AppendInt(append(dst, `,"final_metrics":{"total_prompt_tokens":`...), int64(final.TotalPromptTokens), 10)
		dst = appendIntKey(dst, "total_completion_tokens", final.TotalCompletionTokens, false)
		dst = appendIntKey(dst, "total_cached_tokens", final.TotalCachedTokens, true)
		if dst, ok = appendFloatKey(dst, "total_cost_usd", final.TotalCostUSD, true); !ok {
			return dst, 0, false
		}
		dst = append(appendIntKey(dst, "total_steps", id, false), '}')
	}
	dst = append(dst, `,"extra":{"source":"reactgen"`...)
	dst = appendStringKey(dst, "episode_id", ex.ID, false)
	dst = appendStringKey(dst, "task", ex.Task, false)
	dst = appendStringKey(dst, "question_id", ex.QuestionID, false)
	dst = appendStringKey(dst, "question", ex.Question, false)
	dst = appendStringKey(dst, "answer", ex.Answer, false)
	dst = appendStringKey(dst, "prediction", ex.Prediction, false)
	dst = appendBool(append(dst, `,"correct":`...), ex.Correct)
	if dst, ok = appendFloatKey(dst, "em", ex.EM, false); !ok {
		return dst, 0, false
	}
	if dst, ok = appendFloatKey(dst, "f1", ex.F1, false); !ok {
		return dst, 0, false
	}
	if dst, ok = appendReward(dst, "reward", ex.Reward); !ok {
		return dst, 0, false
	}
	dst = appendStringKey(dst, "method", ex.Method, false)
	dst = appendStringKey(dst, "policy", ex.Policy, false)
	dst = appendStringKey(dst, "view", ex.View, false)
	dst = appendStringKey(dst, "split", ex.Split, false)
	return append(dst, "}}\n"...), 1, true
}
