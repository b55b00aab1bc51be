package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// LLaMA-Factory's parse rules (hiyouga/LLaMA-Factory, v0.9.4 and the main branch of
// August 2026, read there and written here): its register_template defaults, the words
// every template without its own uses.
var (
	lfThoughtWords  = [2]string{"<think>\n", "\n</think>\n\n"}
	lfToolCallWords = [2]string{"<tool_call>", "</tool_call>"}
)

// lfCall is one function call as LLaMA-Factory's FunctionCall holds it: the name and the
// arguments as json.dumps(arguments, ensure_ascii=False) writes them.
type lfCall struct{ name, arguments string }

// wordsRegexp is re.compile(rf"{re.escape(open)}(.*?){re.escape(close)}", re.DOTALL).
func wordsRegexp(w [2]string) *regexp.Regexp {
	return regexp.MustCompile(`(?s)` + regexp.QuoteMeta(w[0]) + `(.*?)` + regexp.QuoteMeta(w[1]))
}

// llamaFactoryCall parses a function_call value as FunctionFormatter.apply does: when the
// tool-call words enclose a part, that part is the calls' JSON and everything else the
// text kept before the formatted calls (every copy of the enclosed part removed, as
// Python's str.replace does); otherwise the first thought-words block, if any, is the
// text and the rest is the JSON. The JSON is one call or a list of calls, each with a
// name and arguments. It returns the text LLaMA-Factory keeps and the calls, or the error
// it raises.
func llamaFactoryCall(content string) (string, []lfCall, error) {
	var text, jsonPart string
	if m := wordsRegexp(lfToolCallWords).FindStringSubmatch(content); m != nil {
		text = strings.ReplaceAll(content, m[0], "")
		jsonPart = m[1]
	} else if m := wordsRegexp(lfThoughtWords).FindStringSubmatch(content); m != nil {
		text = m[0]
		jsonPart = strings.ReplaceAll(content, m[0], "")
	} else {
		jsonPart = content
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(jsonPart))
	if err := dec.Decode(&v); err != nil {
		return "", nil, fmt.Errorf("Invalid JSON format in function message: %q", content)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", nil, fmt.Errorf("Invalid JSON format in function message (extra data): %q", content)
	}
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	var calls []lfCall
	for _, x := range list {
		obj, ok := x.(map[string]any)
		if !ok {
			return "", nil, fmt.Errorf("TypeError: a call is %T, not an object", x)
		}
		name, ok := obj["name"].(string)
		if !ok {
			return "", nil, errors.New(`KeyError: 'name'`)
		}
		if _, ok := obj["arguments"]; !ok {
			return "", nil, errors.New(`KeyError: 'arguments'`)
		}
		args, err := pyDumps(jsonPart, name)
		if err != nil {
			return "", nil, err
		}
		calls = append(calls, lfCall{name: name, arguments: args})
	}
	return text, calls, nil
}

// pyDumps returns the arguments of the call named name in the JSON text src as Python's
// json.dumps(..., ensure_ascii=False) writes them: keys in their order, ", " and ": "
// between items, strings escaped as jsonString does.
func pyDumps(src, name string) (string, error) {
	var calls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	trimmed := strings.TrimSpace(src)
	if !strings.HasPrefix(trimmed, "[") {
		trimmed = "[" + trimmed + "]"
	}
	if err := json.Unmarshal([]byte(trimmed), &calls); err != nil {
		return "", err
	}
	for _, c := range calls {
		if c.Name != name {
			continue
		}
		var b strings.Builder
		dec := json.NewDecoder(bytes.NewReader(c.Arguments))
		dec.UseNumber()
		if err := pyValue(dec, &b); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("no call %s", name)
}

func pyValue(dec *json.Decoder, b *strings.Builder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		end := map[json.Delim]string{'{': "}", '[': "]"}[v]
		b.WriteString(v.String())
		for i := 0; dec.More(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				s := jsonString(k.(string))
				b.WriteString(s + ": ")
			}
			if err := pyValue(dec, b); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteString(end)
	case string:
		s := jsonString(v)
		b.WriteString(s)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		fmt.Fprint(b, v)
	case nil:
		b.WriteString("null")
	}
	return nil
}

// llamaFactoryConvert is LLaMA-Factory's SharegptDatasetConverter on one row (not a
// ranking or KTO dataset): the system turn or column, then turns that alternate
// human/observation and gpt/function_call, an even number of them. It returns the roles
// and contents LLaMA-Factory keeps, or why it would skip the row as abnormal.
func llamaFactoryConvert(row map[string]any) (system string, roles, contents []string, err error) {
	tags := map[string]string{"human": "user", "gpt": "assistant", "observation": "observation", "function_call": "function", "system": "system"}
	msgs, _ := row["conversations"].([]any)
	if len(msgs) > 0 && msgs[0].(map[string]any)["from"] == "system" {
		system = msgs[0].(map[string]any)["value"].(string)
		msgs = msgs[1:]
	} else if s, ok := row["system"].(string); ok {
		system = s
	}
	accept := [2][]string{{"human", "observation"}, {"gpt", "function_call"}}
	for i, x := range msgs {
		m := x.(map[string]any)
		from, _ := m["from"].(string)
		if !slices.Contains(accept[i%2], from) {
			return "", nil, nil, fmt.Errorf("Invalid role tag %q at turn %d", from, i)
		}
		roles = append(roles, tags[from])
		contents = append(contents, m["value"].(string))
	}
	if len(roles)%2 != 0 {
		return "", nil, nil, fmt.Errorf("Invalid message count %d", len(roles))
	}
	return system, roles, contents, nil
}

// TestLlamaFactoryParsesEveryRow runs LLaMA-Factory's converter and function formatter
// (ported above) on every sharegpt and sharegpt-tools row: no row is skipped, every
// function_call parses into the step's call with its arguments, the text beside it is the
// step's reasoning in the thought words and its thought, and every gpt turn's reasoning
// is what the template's thought words remove.
func TestLlamaFactoryParsesEveryRow(t *testing.T) {
	const n = 30
	eps, kept := templateEpisodes(n)()
	byQuestion := map[string]pipeline.Episode{}
	for _, ep := range eps {
		byQuestion[QuestionLine(ep.Task, ep.Question)] = ep
	}
	cfg := pipeline.ExportConfig{Formats: []string{"sharegpt", "sharegpt-tools"}, System: "Use the tools.",
		Views: []string{ViewReAct, ViewAct}, ObservationRole: true, CorrectOnly: true}
	res, dir := runExport(t, cfg, kept)
	calls := 0
	for _, f := range res.Files {
		if f.Format != "sharegpt" && f.Format != "sharegpt-tools" {
			continue
		}
		for li, row := range readJSONLRows(t, filepath.Join(dir, f.Path)) {
			where := fmt.Sprintf("%s line %d", f.Path, li+1)
			system, roles, contents, err := llamaFactoryConvert(row)
			if err != nil {
				t.Errorf("%s: LLaMA-Factory skips the row: %v", where, err)
				continue
			}
			if system != "Use the tools." {
				t.Errorf("%s: system %q", where, system)
			}
			ep, ok := byQuestion[contents[0]]
			if !ok {
				t.Fatalf("%s: question %q is no episode's", where, contents[0])
			}
			step := 0
			for i, role := range roles {
				if role != "assistant" && role != "function" {
					continue
				}
				s := ep.Steps[step]
				step++
				reasoning, thought := s.Reasoning, s.Thought
				if f.View == ViewAct {
					reasoning, thought = "", ""
				}
				think := ""
				if reasoning != "" {
					think = lfThoughtWords[0] + reasoning + lfThoughtWords[1]
				}
				// The template's remove_thought strips the thought words' block and the
				// newlines after it.
				rest := strings.TrimLeft(wordsRegexp(lfThoughtWords).ReplaceAllString(contents[i], ""), "\n")
				if role == "assistant" {
					want := "Action: " + s.Action
					if f.Format == "sharegpt-tools" && thought != "" {
						want = thought + "\n" + want
					} else if thought != "" {
						want = "Thought: " + thought + "\n" + want
					}
					if contents[i] != think+want || rest != want {
						t.Errorf("%s turn %d: gpt %q, want %q", where, i, contents[i], think+want)
					}
					continue
				}
				text, cs, err := llamaFactoryCall(contents[i])
				if err != nil {
					t.Errorf("%s turn %d: LLaMA-Factory raises: %v", where, i, err)
					continue
				}
				calls++
				wantText := think
				if thought != "" {
					wantText += thought + "\n"
				}
				name, args, _ := tool.FromAction(s.ActionType, s.Argument)
				var want map[string]string
				json.Unmarshal([]byte(args), &want)
				key := ""
				for k := range want {
					key = k
				}
				v := jsonString(s.Argument)
				wantArgs := "{" + `"` + key + `": ` + v + "}"
				if text != wantText || len(cs) != 1 || cs[0].name != name || cs[0].arguments != wantArgs {
					t.Errorf("%s turn %d: LLaMA-Factory reads text %q calls %+v, want %q %s(%s)", where, i, text, cs, wantText, name, wantArgs)
				}
			}
			if step != len(ep.Steps) {
				t.Errorf("%s: %d assistant turns for %d steps", where, step, len(ep.Steps))
			}
		}
	}
	if calls == 0 {
		t.Fatal("no function_call parsed")
	}
	t.Logf("%d function_call turns parsed", calls)
}

// TestLlamaFactoryCallParse holds the port to the rules it reads: the tool-call words
// win over the thought words, a thought-words block is kept as text, a bare JSON call
// parses, and what LLaMA-Factory rejects (reactgen's old <think>THOUGHT</think>{json},
// a call without arguments, trailing text) is rejected.
func TestLlamaFactoryCallParse(t *testing.T) {
	tests := []struct {
		in, text, args string
		fail           bool
	}{
		{in: `{"name": "search", "arguments": {"entity": "A"}}`, args: `{"entity": "A"}`},
		{in: "<think>\nwhy\n</think>\n\n{\"name\": \"search\", \"arguments\": {\"entity\":\"A\"}}", text: "<think>\nwhy\n</think>\n\n", args: `{"entity": "A"}`},
		{in: "<think>\nwhy\n</think>\n\nI look.\n<tool_call>{\"name\": \"search\", \"arguments\": {\"entity\": \"A\"}}</tool_call>", text: "<think>\nwhy\n</think>\n\nI look.\n", args: `{"entity": "A"}`},
		{in: `<think>I look.</think>{"name": "search", "arguments": {"entity": "A"}}`, fail: true},
		{in: `{"name": "search"}`, fail: true},
		{in: `{"name": "search", "arguments": {}} and more`, fail: true},
	}
	for _, tt := range tests {
		text, calls, err := llamaFactoryCall(tt.in)
		if tt.fail {
			if err == nil {
				t.Errorf("%q: parsed as %q %+v, want LLaMA-Factory's error", tt.in, text, calls)
			}
			continue
		}
		if err != nil || text != tt.text || len(calls) != 1 || calls[0].name != "search" || calls[0].arguments != tt.args {
			t.Errorf("%q: got %q %+v %v, want %q search(%s)", tt.in, text, calls, err, tt.text, tt.args)
		}
	}
}
