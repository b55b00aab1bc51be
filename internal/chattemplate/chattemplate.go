// Package chattemplate renders conversations through a model's chat template the way
// transformers' apply_chat_template does: the Jinja template (trim_blocks and
// lstrip_blocks, tojson, raise_exception) with messages, tools, add_generation_prompt
// false and the tokenizer's special tokens, and the {% generation %} spans that mark the
// assistant output a training template trains on. It consumes a template file or a
// model's tokenizer_config.json and produces rendered text and spans. The engine is
// github.com/ardanlabs/jinja; tests hold its output to @huggingface/jinja's byte for byte.
package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Template is a compiled chat template, safe for concurrent use.
type Template struct {
	Path   string         // where it was read from
	Source string         // the template text
	tokens map[string]any // bos_token, eos_token, ... from tokenizer_config.json
	tpl    *jinja.Template
}

// The markers the generation tags become: private-use characters no conversation of
// reactgen's holds (Render refuses one that does).
const (
	markOpen  = "\uE000"
	markClose = "\uE001"
)

var generationTag = regexp.MustCompile(`{%(-?)\s*(end)?generation\s*(-?)%}`)

// Load reads a template from path: a Jinja file, or a tokenizer_config.json whose
// chat_template is a string or a list of named templates ("default" is taken, as
// transformers does without tools; "tool_use" when tools is true and the list has it),
// with its special tokens.
func Load(path string, tools bool) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("export.chat_template: %w", err)
	}
	if !strings.HasSuffix(path, ".json") {
		return Parse(path, string(data), nil)
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("export.chat_template: %s is not JSON: %w", path, err)
	}
	raw, ok := cfg["chat_template"]
	if !ok {
		return nil, fmt.Errorf("export.chat_template: %s has no chat_template key", path)
	}
	var src string
	if err := json.Unmarshal(raw, &src); err != nil {
		var named []struct{ Name, Template string }
		if err := json.Unmarshal(raw, &named); err != nil {
			return nil, fmt.Errorf("export.chat_template: %s: chat_template is neither a string nor a list of {name, template}", path)
		}
		want := "default"
		for _, n := range named {
			if n.Name == "tool_use" && tools {
				want = "tool_use"
			}
		}
		for _, n := range named {
			if n.Name == want {
				src = n.Template
			}
		}
		if src == "" {
			return nil, fmt.Errorf("export.chat_template: %s: chat_template has no template named %q", path, want)
		}
	}
	tokens := map[string]any{}
	for k, v := range cfg {
		if !strings.HasSuffix(k, "_token") {
			continue
		}
		var s string
		var added struct{ Content string }
		switch {
		case json.Unmarshal(v, &s) == nil:
			tokens[k] = s
		case json.Unmarshal(v, &added) == nil && added.Content != "":
			tokens[k] = added.Content // an AddedToken
		}
	}
	return Parse(path, src, tokens)
}

// Parse compiles src; path names it in errors.
func Parse(path, src string, tokens map[string]any) (*Template, error) {
	if strings.Contains(src, markOpen) || strings.Contains(src, markClose) {
		return nil, fmt.Errorf("export.chat_template: %s holds U+E000 or U+E001", path)
	}
	marked := generationTag.ReplaceAllStringFunc(src, func(tag string) string {
		m := generationTag.FindStringSubmatch(tag)
		mark := markOpen
		if m[2] != "" {
			mark = markClose
		}
		return "{%" + m[1] + " if true %}" + mark + "{% endif " + m[3] + "%}"
	})
	tpl, err := jinja.Compile(marked)
	if err != nil {
		return nil, fmt.Errorf("export.chat_template: %s: %w", path, err)
	}
	if tokens == nil {
		tokens = map[string]any{}
	}
	return &Template{Path: path, Source: src, tokens: tokens, tpl: tpl}, nil
}

// Render renders messages and tools (nil for none) as apply_chat_template(messages,
// tools=tools, add_generation_prompt=False) does, and returns the text and the
// {% generation %} spans as byte offsets into it.
func (t *Template) Render(messages []map[string]any, tools []any) (string, [][2]int, error) {
	data := make(map[string]any, len(t.tokens)+3)
	for k, v := range t.tokens {
		data[k] = v
	}
	msgs := make([]any, len(messages))
	for i, m := range messages {
		msgs[i] = m
	}
	data["messages"] = msgs
	if tools != nil {
		data["tools"] = tools
	} else {
		data["tools"] = nil
	}
	data["add_generation_prompt"] = false
	out, err := t.tpl.Render(data)
	if err != nil {
		return "", nil, err
	}
	return Spans(out)
}

// RenderJSON is Render with the messages and tools given as JSON (tools empty or null
// for none), decoded with every object's keys in their order, as Python's json.loads and
// a datasets load keep them: a template that prints an object with tojson (the tool
// definitions) prints it in the order the file has, as transformers does.
func (t *Template) RenderJSON(messages, tools []byte) (string, [][2]int, error) {
	data := make(map[string]jinja.Value, len(t.tokens)+3)
	for k, v := range t.tokens {
		data[k] = jinja.FromGoValue(v)
	}
	msgs, err := decodeOrdered(messages)
	if err != nil {
		return "", nil, fmt.Errorf("messages: %w", err)
	}
	data["messages"] = msgs
	data["tools"] = jinja.None()
	if len(tools) > 0 {
		v, err := decodeOrdered(tools)
		if err != nil {
			return "", nil, fmt.Errorf("tools: %w", err)
		}
		data["tools"] = v
	}
	data["add_generation_prompt"] = jinja.NewBool(false)
	out, err := t.tpl.RenderValues(data)
	if err != nil {
		return "", nil, err
	}
	return Spans(out)
}

// decodeOrdered decodes JSON into the engine's values, objects as dicts in key order.
func decodeOrdered(data []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Value{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Value{}, errors.New("data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			var items []jinja.Value
			for dec.More() {
				item, err := decodeValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				items = append(items, item)
			}
			_, err := dec.Token() // ]
			return jinja.NewList(items), err
		}
		d := jinja.NewDict()
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return jinja.Value{}, err
			}
			val, err := decodeValue(dec)
			if err != nil {
				return jinja.Value{}, err
			}
			d.AsDict().Set(k.(string), val)
		}
		_, err := dec.Token() // }
		return d, err
	default:
		return jinja.FromGoValue(v), nil // nil, bool, json.Number, string
	}
}

// Spans strips the generation markers from out and returns the text and the spans.
func Spans(out string) (string, [][2]int, error) {
	var b strings.Builder
	var spans [][2]int
	open := -1
	for {
		i := strings.IndexAny(out, markOpen+markClose)
		if i < 0 {
			b.WriteString(out)
			break
		}
		b.WriteString(out[:i])
		mark := out[i : i+len(markOpen)]
		out = out[i+len(markOpen):]
		switch {
		case mark == markOpen && open >= 0:
			return "", nil, errors.New("a generation block inside a generation block")
		case mark == markOpen:
			open = b.Len()
		case open < 0:
			return "", nil, errors.New("endgeneration without generation")
		default:
			spans = append(spans, [2]int{open, b.Len()})
			open = -1
		}
	}
	if open >= 0 {
		return "", nil, errors.New("a generation block is not closed")
	}
	return b.String(), spans, nil
}
