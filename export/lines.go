package export

import (
	"strings"
	"unicode/utf8"
)

// lineOptions are the config switches that change a JSONL row.
type lineOptions struct {
	System          string // the system message, for formats that carry it outside the turns
	Weights         bool   // openai-chat: weight 0/1 on assistant turns
	ObservationRole bool   // sharegpt: observation turns as "observation", not "human"
	// TrainObservations is export.train_observations: completion and alpaca write one row
	// with the whole trajectory instead of one row per step (textRows).
	TrainObservations bool
}

// lineFormat appends the rows of ex to buf: one JSON object per row, newline-separated,
// with no newline after the last (completion and alpaca may write several rows per
// example; textRows).
type lineFormat func(buf []byte, ex *Example, o lineOptions) []byte

// jsonlFormats are the JSONL training formats by export.formats name. The encoders write
// JSON by hand: they are the hot loop of an export and encoding/json's reflection costs
// more than the rest of the pipeline together.
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
}

// maskedFormats are the JSONL formats that carry a per-turn loss mask, checked after writing.
var maskedFormats = map[string]bool{"openai-chat": true, "axolotl-chat": true, "agentgym": true}

func openAIChatLine(b []byte, ex *Example, o lineOptions) []byte {
	b = append(b, `{"messages":[`...)
	for i, m := range ex.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":`...)
		b = appendString(b, m.Role)
		b = append(b, `,"content":`...)
		b = appendString(b, m.Content)
		if o.Weights && m.Role == RoleAssistant {
			if m.Trainable {
				b = append(b, `,"weight":1`...)
			} else {
				b = append(b, `,"weight":0`...)
			}
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func axolotlChatLine(b []byte, ex *Example, _ lineOptions) []byte {
	b = append(b, `{"messages":[`...)
	for i, m := range ex.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":`...)
		b = appendString(b, m.Role)
		b = append(b, `,"content":`...)
		b = appendString(b, m.Content)
		b = append(b, `,"train":`...)
		b = appendBool(b, m.Trainable)
		b = append(b, '}')
	}
	return append(b, "]}"...)
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

// completionLine writes {"prompt", "completion"} per row of textRows: prompt =
// [system + "\n\n"] + question line + history.
func completionLine(b []byte, ex *Example, o lineOptions) []byte {
	prompt := completionPrompt(ex, o.System)
	for i, r := range textRows(ex, o) {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, `{"prompt":`...)
		b = appendString(b, prompt+r.history)
		b = append(b, `,"completion":`...)
		b = appendString(b, r.completion)
		b = append(b, '}')
	}
	return b
}

// alpacaLine writes {"instruction", "input", "output"[, "system"]} per row of textRows:
// instruction = the question line, input = the history (without its last newline).
func alpacaLine(b []byte, ex *Example, o lineOptions) []byte {
	for i, r := range textRows(ex, o) {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, `{"instruction":`...)
		b = appendString(b, QuestionLine(ex.Task, ex.Question))
		b = append(b, `,"input":`...)
		b = appendString(b, strings.TrimSuffix(r.history, "\n"))
		b = append(b, `,"output":`...)
		b = appendString(b, r.completion)
		if o.System != "" {
			b = append(b, `,"system":`...)
			b = appendString(b, o.System)
		}
		b = append(b, '}')
	}
	return b
}

// isObservation reports whether m is an observation turn (a user turn after the first).
func isObservation(i int, m Message) bool {
	return m.Role == RoleUser && i > 0 && strings.HasPrefix(m.Content, "Observation: ")
}

func shareGPTLine(b []byte, ex *Example, o lineOptions) []byte {
	b = append(b, `{"conversations":[`...)
	for i, m := range ex.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		from := "human"
		switch {
		case m.Role == RoleSystem:
			from = "system"
		case m.Role == RoleAssistant:
			from = "gpt"
		case o.ObservationRole && isObservation(i, m):
			from = "observation"
		}
		b = append(b, `{"from":`...)
		b = appendString(b, from)
		b = append(b, `,"value":`...)
		b = appendString(b, m.Content)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// agentGymLine writes AgentGym's layout: human turns carry loss null (true for observation
// turns under export.train_observations), gpt turns loss true. AgentGym has no system turn,
// so the system message opens the first human turn.
func agentGymLine(b []byte, ex *Example, _ lineOptions) []byte {
	b = append(b, `{"conversations":[`...)
	first, system := true, ""
	for _, m := range ex.Messages {
		if m.Role == RoleSystem {
			system = m.Content
			continue
		}
		if !first {
			b = append(b, ',')
		}
		content := m.Content
		if first && system != "" {
			content = system + "\n\n" + content
		}
		first = false
		if m.Role == RoleAssistant {
			b = append(b, `{"from":"gpt","loss":`...)
			b = appendBool(b, m.Trainable)
		} else {
			b = append(b, `{"from":"human","loss":`...)
			if m.Trainable {
				b = append(b, "true"...)
			} else {
				b = append(b, "null"...)
			}
		}
		b = append(b, `,"value":`...)
		b = appendString(b, content)
		b = append(b, '}')
	}
	b = append(b, `],"item_id":`...)
	b = appendString(b, ex.Task+"_"+ex.ID)
	return append(b, '}')
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

const hexDigits = "0123456789abcdef"

// plainByte marks the bytes a JSON string holds as they are: ASCII, no control
// character, quote or backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as encoding/json
// does, so every line is valid JSON whatever the model wrote.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Most text needs no escaping: one table look-up per byte skips it (twice as
		// fast as the tests below).
		for i < len(s) && plainByte[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
