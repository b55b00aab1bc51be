package export

import (
	"fmt"
	"strings"

	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// A chat template is judged by what it does with a probe conversation, not by its name:
// the rule holds for any template a user brings. The probe is a short ReAct trajectory
// in the hf-tools layout, with a reasoning text on every step: a question, a search call
// beside its thought (arguments as a JSON string, as hf-tools writes them) and its tool
// result, an invalid action (a call-less turn) and its observation as a user turn, and a
// finish call beside its thought.
const (
	probeQuestion = "Question: Where is the probe museum?"
	probeEntity   = "PROBE-ENTITY Museum"
	probeResult   = "PROBE-RESULT The museum is in Oslo."
	probeInvalid  = "Observation: PROBE-INVALID Invalid action: Searhc[x]"
	probeAnswer   = "PROBE-ANSWER Oslo"
)

var (
	probeThoughts  = []string{"PROBE-THOUGHT-1 I should search the museum.", "PROBE-THOUGHT-2 I try another action.\nAction: Searhc[x]", "PROBE-THOUGHT-3 It is Oslo."}
	probeReasoning = []string{"PROBE-REASONING-1 the user wants a place.", "PROBE-REASONING-2 maybe a typo.", "PROBE-REASONING-3 the page says Oslo."}
)

// ProbeMessages is the probe conversation as apply_chat_template's messages.
func ProbeMessages() []map[string]any {
	call := func(id, name, args string) []any {
		return []any{map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}
	}
	_, search, _ := tool.FromAction(pipeline.ActionSearch, probeEntity)
	_, finish, _ := tool.FromAction(pipeline.ActionFinish, probeAnswer)
	return []map[string]any{
		{"role": RoleUser, "content": probeQuestion},
		{"role": RoleAssistant, "content": probeThoughts[0], "reasoning_content": probeReasoning[0],
			"tool_calls": call("probe0001", tool.Search, search)},
		{"role": RoleTool, "content": probeResult, "tool_call_id": "probe0001", "name": tool.Search},
		{"role": RoleAssistant, "content": probeThoughts[1], "reasoning_content": probeReasoning[1]},
		{"role": RoleUser, "content": probeInvalid},
		{"role": RoleAssistant, "content": probeThoughts[2], "reasoning_content": probeReasoning[2],
			"tool_calls": call("probe0002", tool.Finish, finish)},
	}
}

// ProbeTools are the tools of the probe conversation: the HotpotQA tool definitions.
func ProbeTools() []tool.Def { return tool.Defs(pipeline.TaskHotpotQA) }

// TemplateTraits is what a chat template does with a ReAct trajectory in tool-calling
// form, read off its rendering of the probe conversation.
type TemplateTraits struct {
	Thought    bool // renders an assistant turn's content beside its tool call (every call turn)
	Reasoning  bool // renders reasoning_content
	StringArgs bool // renders arguments given as a JSON string as the JSON object, not a quoted string
	Calls      bool // renders each call's name and argument
	Generation bool // marks the trained text with {% generation %} spans
	Masks      bool // its generation spans hold exactly the assistant turns
	Error      string
}

// ProbeTemplate reads a template's traits from its rendering of ProbeMessages with
// ProbeTools: text and the {% generation %} spans (byte offsets) the renderer found, or
// the error it raised.
func ProbeTemplate(text string, spans [][2]int, err error) TemplateTraits {
	if err != nil {
		return TemplateTraits{Error: err.Error()}
	}
	var tr TemplateTraits
	once := func(xs []string) bool {
		for _, x := range xs {
			if strings.Count(text, x) != 1 {
				return false
			}
		}
		return true
	}
	tr.Thought = once(probeThoughts)
	tr.Reasoning = once(probeReasoning)
	entity, answer := jsonString(probeEntity), jsonString(probeAnswer)
	tr.Calls = strings.Contains(text, tool.Search) && strings.Contains(text, probeEntity) && strings.Contains(text, probeAnswer)
	tr.StringArgs = (strings.Contains(text, `"entity": `+entity) || strings.Contains(text, `"entity":`+entity)) &&
		(strings.Contains(text, `"answer": `+answer) || strings.Contains(text, `"answer":`+answer))
	tr.Generation = len(spans) > 0
	if len(spans) == len(probeThoughts) {
		tr.Masks = true
		for k, sp := range spans {
			s := text[sp[0]:sp[1]]
			for _, x := range []string{probeQuestion, probeResult, probeInvalid} {
				if strings.Contains(s, x) {
					tr.Masks = false
				}
			}
			if tr.Thought && !strings.Contains(s, probeThoughts[k]) || tr.Reasoning && !strings.Contains(s, probeReasoning[k]) {
				tr.Masks = false
			}
		}
		tr.Masks = tr.Masks && strings.Contains(text[spans[0][0]:spans[0][1]], probeEntity) && strings.Contains(text[spans[2][0]:spans[2][1]], probeAnswer)
	}
	return tr
}

// Shortfall says what a template with these traits cannot train from a ReAct
// trajectory in tool-calling form, or "" when it trains all of it; reasoning says
// whether the data holds reasoning texts.
func (tr TemplateTraits) Shortfall(reasoning bool) string {
	var miss []string
	switch {
	case tr.Error != "":
		return "it fails on a tool-calling conversation: " + tr.Error
	case !tr.Calls:
		miss = append(miss, "it does not render tool calls")
	}
	if tr.Generation && !tr.Masks {
		miss = append(miss, "its generation spans are not exactly the assistant turns")
	}
	if !tr.Thought {
		miss = append(miss, "it drops an assistant turn's content (the ReAct thought) beside a tool call, so the model would learn to act without reasoning")
	}
	if !tr.StringArgs {
		miss = append(miss, "it renders arguments given as a JSON string as a quoted string (tool_call.arguments | tojson)")
	}
	if reasoning && !tr.Reasoning {
		miss = append(miss, "it does not render every turn's reasoning_content (Qwen3's own template drops those before the last user turn)")
	}
	return strings.Join(miss, "; ")
}

var shortEscape = map[rune]string{'\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}

// jsonString is s as a JSON string, as tojson and json.dumps write it (HTML not escaped).
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case shortEscape[r] != "":
			b.WriteString(shortEscape[r])
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
