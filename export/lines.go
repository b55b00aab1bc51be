package export

import (
	"strings"
)

// lineOptions are the config switches that change a JSONL row.
type lineOptions struct {
	System          string // the system message, for formats that carry it outside the turns
	Weights         bool   // openai-chat: weight 0/1 on assistant turns
	ObservationRole bool   // sharegpt: observation turns as "observation", not "human"
	// TrainObservations is export.train_observations: completion and alpaca write one row
	// with the whole trajectory instead of one row per step (textRows).
	TrainObservations bool
	// Reasoning is export.reasoning (keep, drop, inline): the Example carries the
	// reasoning in its own fields under keep, in the message text under inline; the
	// ToolMessages carry it apart under both.
	Reasoning string
}

// lineFormat builds the rows of ex in one JSONL format: structs whose JSON tags, in their
// order, are the format's keys, usually one (completion and alpaca may make several or
// none; textRows). They define the format: jsonlEncoder writes the bytes that
// github.com/goccy/go-json writes for them without HTML escaping, through the format's
// rowAppender (rows.go), which appends the same bytes without building the structs
// (TestRowAppendersMatchEncoders), or through the encoder itself where the appender
// gives up. (docs/bench-export.md, "Third round: JSONL rows", has what the appenders
// save.)
type lineFormat func(ex *Example, o lineOptions) []any

// jsonlFormats are the JSONL training formats by export.formats name.
var jsonlFormats = map[string]lineFormat{
	"openai-chat":  openAIChatLine,
	"axolotl-chat": axolotlChatLine,
	"completion":   completionLine,
	"alpaca":       alpacaLine,
	"sharegpt":     shareGPTLine,
	"agentgym":     agentGymLine,
	// The tool-calling formats (tools.go).
	"openai-tools":   openAIToolsLine,
	"hf-tools":       hfToolsLine,
	"sharegpt-tools": shareGPTToolsLine,
	// The interchange formats (interchange.go).
	"adp":  adpLine,
	"atif": atifLine,
	// Written with export.chat_template (chattext.go).
	ChatTextFormat: chatTextLine,
}

// maskedFormats are the JSONL formats that carry a per-turn loss mask, checked after writing.
var maskedFormats = map[string]bool{"openai-chat": true, "axolotl-chat": true, "agentgym": true}

// chatTurn is a turn of openai-chat: weight 0/1 on assistant turns under export.weights.
type chatTurn struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is an assistant turn's reasoning (export.reasoning keep), as the
	// Qwen3-family and TRL templates read it. OpenAI's fine-tuning format has no such
	// key: reactgen train uploads the rows without it (finetune.ForUpload).
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Weight           *int   `json:"weight,omitempty"`
}

type chatRow struct {
	Messages []chatTurn `json:"messages"`
}

var weightOf = map[bool]*int{false: new(int), true: func() *int { one := 1; return &one }()}

func openAIChatLine(ex *Example, o lineOptions) []any {
	row := chatRow{Messages: make([]chatTurn, len(ex.Messages))}
	for i, m := range ex.Messages {
		row.Messages[i] = chatTurn{Role: m.Role, Content: m.Content, ReasoningContent: m.Reasoning}
		if o.Weights && m.Role == RoleAssistant {
			row.Messages[i].Weight = weightOf[m.Trainable]
		}
	}
	return []any{row}
}

// axolotlTurn is a turn of axolotl-chat: every turn says whether it is trained on.
type axolotlTurn struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is an assistant turn's reasoning (export.reasoning keep), which
	// axolotl's chat_template loader hands to the template with the turn.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Train            bool   `json:"train"`
}

type axolotlRow struct {
	Messages []axolotlTurn `json:"messages"`
}

func axolotlChatLine(ex *Example, _ lineOptions) []any {
	row := axolotlRow{Messages: make([]axolotlTurn, len(ex.Messages))}
	for i, m := range ex.Messages {
		row.Messages[i] = axolotlTurn{Role: m.Role, Content: m.Content, ReasoningContent: m.Reasoning, Train: m.Trainable}
	}
	return []any{row}
}

// completionPrompt is the prompt of the completion and pairs formats: the system message,
// a blank line, and the question line.
func completionPrompt(ex *Example, system string) string {
	if system == "" {
		return ex.Prompt()
	}
	return system + "\n\n" + ex.Prompt()
}

// textRow is one row of the completion and alpaca formats: the trajectory before the
// trained text (after the question line) and the trained text.
type textRow struct{ history, completion string }

// textRows are the rows an example makes in the completion and alpaca formats, whose whole
// completion (output) carries the loss. In the react and act views with
// export.train_observations off there is one row per trained step: the history is every
// step before it, observations included, and the completion is the step's "Thought k: …
// \nAction k: …", so no observation is ever in the trained text (a masked step has no
// row, and stays in the later rows' history). Otherwise, and in the cot and standard
// views, which have no observations, one row holds the whole trajectory.
func textRows(ex *Example, o lineOptions) []textRow {
	head := len(ex.Prompt())
	if o.TrainObservations || len(ex.spans) == 0 {
		return []textRow{{completion: ex.Completion()}}
	}
	rows := make([]textRow, 0, len(ex.spans))
	for _, sp := range ex.spans {
		if !ex.Messages[sp.msg].Trainable {
			continue
		}
		rows = append(rows, textRow{history: ex.Text[head:sp.start], completion: ex.Text[sp.start:sp.end]})
	}
	return rows
}

type completionRow struct {
	Prompt     string `json:"prompt"`
	Completion string `json:"completion"`
}

// completionLine writes {"prompt", "completion"} per row of textRows: prompt =
// [system + "\n\n"] + question line + history.
func completionLine(ex *Example, o lineOptions) []any {
	prompt := completionPrompt(ex, o.System)
	var rows []any
	for _, r := range textRows(ex, o) {
		rows = append(rows, completionRow{Prompt: prompt + r.history, Completion: r.completion})
	}
	return rows
}

type alpacaRow struct {
	Instruction string `json:"instruction"`
	Input       string `json:"input"`
	Output      string `json:"output"`
	System      string `json:"system,omitempty"`
}

// alpacaLine writes {"instruction", "input", "output"[, "system"]} per row of textRows:
// instruction = the question line, input = the history (without its last newline).
func alpacaLine(ex *Example, o lineOptions) []any {
	var rows []any
	for _, r := range textRows(ex, o) {
		rows = append(rows, alpacaRow{Instruction: QuestionLine(ex.Task, ex.Question),
			Input: strings.TrimSuffix(r.history, "\n"), Output: r.completion, System: o.System})
	}
	return rows
}

// isObservation reports whether m is an observation turn (a user turn after the first).
func isObservation(i int, m Message) bool {
	return m.Role == RoleUser && i > 0 && strings.HasPrefix(m.Content, "Observation: ")
}

type shareGPTTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

type shareGPTRow struct {
	Conversations []shareGPTTurn `json:"conversations"`
}

func shareGPTLine(ex *Example, o lineOptions) []any {
	row := shareGPTRow{Conversations: make([]shareGPTTurn, len(ex.Messages))}
	for i, m := range ex.Messages {
		row.Conversations[i] = shareGPTTurn{From: shareGPTFrom(i, m, o), Value: withReasoning(m.Reasoning, m.Content)}
	}
	return []any{row}
}

// shareGPTFrom is the "from" of the sharegpt turn of ex.Messages[i]: system, gpt, human,
// or observation for an observation turn under ObservationRole.
func shareGPTFrom(i int, m Message, o lineOptions) string {
	switch {
	case m.Role == RoleSystem:
		return "system"
	case m.Role == RoleAssistant:
		return "gpt"
	case o.ObservationRole && isObservation(i, m):
		return "observation"
	}
	return "human"
}

// agentGymTurn is a turn of AgentGym's layout: human turns carry loss null (true for
// observation turns under export.train_observations), gpt turns loss true or false.
type agentGymTurn struct {
	From  string `json:"from"`
	Loss  *bool  `json:"loss"`
	Value string `json:"value"`
	// ReasoningContent is a gpt turn's reasoning (export.reasoning keep). AgentGym's
	// trainer reads from, loss and value only: inline trains on the reasoning.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

type agentGymRow struct {
	Conversations []agentGymTurn `json:"conversations"`
	ItemID        string         `json:"item_id"`
}

var lossOf = map[bool]*bool{false: new(bool), true: func() *bool { t := true; return &t }()}

// agentGymLine writes AgentGym's layout. AgentGym has no system turn, so the system
// message opens the first human turn.
func agentGymLine(ex *Example, _ lineOptions) []any {
	row := agentGymRow{Conversations: make([]agentGymTurn, 0, len(ex.Messages)), ItemID: ex.Task + "_" + ex.ID}
	first, system := true, ""
	for _, m := range ex.Messages {
		if m.Role == RoleSystem {
			system = m.Content
			continue
		}
		content := m.Content
		if first && system != "" {
			content = system + "\n\n" + content
		}
		first = false
		t := agentGymTurn{From: "human", Value: content}
		switch {
		case m.Role == RoleAssistant:
			t.From, t.Loss, t.ReasoningContent = "gpt", lossOf[m.Trainable], m.Reasoning
		case m.Trainable:
			t.Loss = lossOf[true]
		}
		row.Conversations = append(row.Conversations, t)
	}
	return []any{row}
}
