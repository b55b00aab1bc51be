package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/chattemplate"
	"github.com/reactgen/reactgen/pipeline"
)

// ChatTextFormat is the JSONL format export.chat_template adds: each example rendered by
// the model's chat template, for trainers that train on plain text.
const ChatTextFormat = "chat-text"

// chatTextRow is one row of chat-text: the rendered text and the spans of it that carry
// loss, as [start, end) character offsets (Python's str indices: text[start:end]).
type chatTextRow struct {
	ID        string   `json:"id"`
	Text      string   `json:"text"`
	LossSpans [][2]int `json:"loss_spans"`
}

func chatTextLine(ex *Example, _ lineOptions) []any {
	spans := make([][2]int, 0, len(ex.chatSpans))
	for _, sp := range ex.chatSpans {
		spans = append(spans, [2]int{utf8.RuneCountInString(ex.chatText[:sp[0]]), utf8.RuneCountInString(ex.chatText[:sp[1]])})
	}
	return []any{chatTextRow{ID: ex.ID, Text: ex.chatText, LossSpans: spans}}
}

// chatRenderer renders examples with export.chat_template.
type chatRenderer struct {
	tpl    *chattemplate.Template
	traits TemplateTraits
}

// loadChatTemplate reads export.chat_template and judges it on the probe conversation:
// a template that cannot train a ReAct trajectory whole (it drops the thought beside a
// call, quotes string arguments, fails) or marks no generation spans (so no loss mask
// can come from it) is refused, naming what works. Nil without the key.
func loadChatTemplate(cfg pipeline.ExportConfig) (*chatRenderer, error) {
	if cfg.ChatTemplate == "" {
		return nil, nil
	}
	tpl, err := chattemplate.Load(cfg.ChatTemplate, true)
	if err != nil {
		return nil, &pipeline.ConfigError{Key: "export.chat_template", Message: err.Error()}
	}
	tr := probeWith(tpl)
	refuse := func(why string) error {
		return &pipeline.ConfigError{Key: "export.chat_template", Message: fmt.Sprintf("%s: %s. What works: a training template "+
			"with {%% generation %%} tags that renders an assistant turn's content beside its tool_calls and prints string arguments as they are "+
			"(TRL's chat_templates/qwen3_training.jinja, or any Qwen3- or GLM-family template with generation tags added); "+
			"or leave export.chat_template empty and train on hf-tools with such a model", cfg.ChatTemplate, why)}
	}
	if why := tr.Shortfall(false); why != "" {
		return nil, refuse(why)
	}
	if !tr.Generation {
		return nil, refuse("it has no {% generation %} tags, so it cannot say which turns carry loss")
	}
	return &chatRenderer{tpl: tpl, traits: tr}, nil
}

// probeWith renders the probe conversation with tpl and reads its traits.
func probeWith(tpl *chattemplate.Template) TemplateTraits {
	var tools []any
	if err := json.Unmarshal([]byte(toolsOf(pipeline.TaskHotpotQA, ViewReAct).json), &tools); err != nil {
		return TemplateTraits{Error: err.Error()}
	}
	text, spans, err := tpl.Render(ProbeMessages(), tools)
	return ProbeTemplate(text, spans, err)
}

// render sets ex's chat text and loss spans: the hf-tools row of ex (its messages and
// tools, as TRL hands them to apply_chat_template) rendered by the template, and its
// generation spans but those of the steps the filter masked. The spans must be one per
// assistant turn.
func (c *chatRenderer) render(ex *Example) error {
	row := hfToolsLine(ex, lineOptions{})[0].(hfToolsRow)
	msgs, err := json.Marshal(row.Messages)
	if err != nil {
		return err
	}
	// The tools as TRL hands them over: json.loads of the row's string, keys in order.
	text, spans, err := c.tpl.RenderJSON(msgs, []byte(row.Tools))
	if err != nil {
		return fmt.Errorf("export.chat_template %s: episode %s (%s view): %w", c.tpl.Path, ex.ID, ex.View, err)
	}
	var assistants []int // the assistant turns, by step
	for _, m := range ex.ToolMessages {
		if m.Role == RoleAssistant {
			assistants = append(assistants, len(assistants))
		}
	}
	if len(spans) != len(assistants) {
		return fmt.Errorf("export.chat_template %s: episode %s (%s view): %d generation spans for %d assistant turns",
			c.tpl.Path, ex.ID, ex.View, len(spans), len(assistants))
	}
	ex.chatText, ex.chatSpans = text, spans[:0:0]
	for k, sp := range spans {
		if !ex.isMasked(k) {
			ex.chatSpans = append(ex.chatSpans, sp)
		}
	}
	if len(ex.chatSpans) == 0 {
		return errors.New("export.chat_template: no span carries loss")
	}
	return nil
}
