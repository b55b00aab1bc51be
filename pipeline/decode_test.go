package pipeline

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// fullEpisode sets every field of the record, with strings that need escaping.
func fullEpisode() Episode {
	call := Call{Model: "gpt", PromptHash: "ab12", Prompt: "Question: <x> & y", Completion: "Thought: é \"q\"\n",
		FinishReason: "stop", Usage: Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CostUSD: 0.00125},
		LatencyMS: 321, Retries: 2, Cached: true, Bad: true, Error: "boom",
		ToolCalls: []ToolCall{{ID: "call_1", Name: "search", Arguments: `{"entity":"Ada \"L\""}`}, {Name: "browse", Arguments: "not json"}}}
	return Episode{Schema: SchemaVersion, ID: "0123456789abcdef", RunID: "run", Task: TaskHotpotQA, QuestionID: "q1",
		Question: "Who is \"A\"?\tTab \u2028 line", Answer: "Ada", QuestionType: "bridge", Method: "react", Branch: "react",
		Policy: "expert", Format: "chat", Attempt: 3, Seed: -9007199254740993,
		Steps: []Step{
			{Thought: "I need \\ to search 日本", Action: "Search[Ada]", ActionType: ActionSearch, Argument: "Ada",
				Observation: "Ada was... \"Quoted\"\x01\x1f end", Calls: []Call{call, {}},
				ToolCall: &ToolCall{ID: "call_1", Name: "search", Arguments: `{"entity":"Ada"}`}},
			{Action: "Finish[Ada]", ActionType: ActionFinish, Argument: "Ada", Calls: []Call{}},
		},
		Samples:    []Sample{{Thought: "t", Answer: "a", Call: &call}, {Thought: "u"}},
		Prediction: "Ada", Finished: true, Correct: true, EM: 1, F1: 0.6666666666666666, StopReason: StopFinished,
		LLMCalls: 2, BadCalls: 1, Usage: Usage{PromptTokens: 1 << 40, CostUSD: 1e-9}, LatencyMS: 1 << 50,
		Rationalized: true, Error: "none"}
}

// TestDecodeEpisodeMatchesEncodingJSON holds decodeEpisode to json.Unmarshal: the same
// record and the same error on lines written by json.Marshal and on lines that leave the
// direct path.
func TestDecodeEpisodeMatchesEncodingJSON(t *testing.T) {
	full, err := json.Marshal(fullEpisode())
	if err != nil {
		t.Fatal(err)
	}
	minimal, _ := json.Marshal(Episode{ID: "x"})
	noSteps, _ := json.Marshal(Episode{ID: "x", Steps: []Step{}})
	f := string(full)
	cases := map[string]string{
		"full":                f,
		"minimal":             string(minimal),
		"empty steps":         string(noSteps),
		"white space":         " { \"id\" : \"x\" , \"steps\" : [ { \"thought\" : \"a\" } , { } ] , \"em\" : 1.5e-3 }\n",
		"empty object":        `{}`,
		"null steps":          `{"id":"x","steps":null}`,
		"null string":         `{"id":null}`,
		"null call":           `{"samples":[{"call":null}]}`,
		"unknown key":         `{"id":"x","extra":{"a":[1,2]}}`,
		"other case key":      `{"ID":"x","Steps":[{"Thought":"t"}]}`,
		"escaped key":         `{"\u0069d":"x"}`,
		"repeated key":        `{"id":"x","id":"y"}`,
		"repeated steps":      `{"steps":[{"thought":"a","action":"b"}],"steps":[{"thought":"c"}]}`,
		"int as float":        `{"attempt":1.0}`,
		"int exponent":        `{"attempt":1e2}`,
		"int overflow":        `{"seed":9223372036854775808}`,
		"negative zero":       `{"attempt":-0,"em":-0}`,
		"float overflow":      `{"f1":1e400}`,
		"leading zero":        `{"attempt":01}`,
		"bad fraction":        `{"em":1.}`,
		"plus sign":           `{"em":+1}`,
		"string as int":       `{"attempt":"1"}`,
		"int as string":       `{"id":1}`,
		"bool as string":      `{"finished":"true"}`,
		"bad literal":         `{"finished":tru}`,
		"surrogate pair":      `{"question":"\ud83d\ude00"}`,
		"lone surrogate":      `{"question":"\ud83d x"}`,
		"escapes":             `{"question":"\"\\\/\b\f\n\r\t\u00e9\u0000"}`,
		"bad escape":          `{"question":"\x"}`,
		"bad unicode escape":  `{"question":"\u12g4"}`,
		"short unicode":       `{"question":"\u12"}`,
		"invalid utf-8":       "{\"question\":\"a\xffb\"}",
		"invalid utf-8 esc":   "{\"question\":\"a\xff\\nb\"}",
		"control character":   "{\"question\":\"a\x01b\"}",
		"trailing data":       `{"id":"x"} {}`,
		"trailing comma":      `{"id":"x",}`,
		"truncated":           f[:len(f)/2],
		"not an object":       `["id"]`,
		"empty":               ``,
		"array trailing":      `{"steps":[{},]}`,
		"missing colon":       `{"id" "x"}`,
		"number key":          `{1:"x"}`,
		"usage object":        `{"usage":{"prompt_tokens":3,"cost_usd":0.5}}`,
		"usage wrong":         `{"usage":[]}`,
		"calls in step":       `{"steps":[{"calls":[{"usage":{"total_tokens":7}},{"cached":false}]}]}`,
		"huge int in float":   `{"em":123456789012345678901234567890}`,
		"deep unknown nested": `{"steps":[{"calls":[{"other":1}]}]}`,
		"null tool call":      `{"steps":[{"tool_call":null}]}`,
		"tool call unknown":   `{"steps":[{"tool_call":{"id":"c","type":"function"}}]}`,
		"tool calls in call":  `{"steps":[{"calls":[{"tool_calls":[{"name":"search","arguments":"{}"},{}]}]}]}`,
		"tool calls null":     `{"steps":[{"calls":[{"tool_calls":null}]}]}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			checkDecode(t, in)
		})
	}
}

func checkDecode(t *testing.T, in string) {
	t.Helper()
	var want, got Episode
	werr := json.Unmarshal([]byte(in), &want)
	gerr := decodeEpisode([]byte(in), &got)
	if fmt.Sprint(werr) != fmt.Sprint(gerr) {
		t.Fatalf("%q: error %v, encoding/json says %v", in, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", in, got, want)
	}
}

func FuzzDecodeEpisode(f *testing.F) {
	full, _ := json.Marshal(fullEpisode())
	f.Add(string(full))
	f.Add(`{"id":"x","steps":[{"thought":"a\u00e9\n"}],"em":1e-3}`)
	f.Add(strings.Replace(string(full), `"id"`, `"Id"`, 1))
	f.Fuzz(func(t *testing.T, in string) {
		checkDecode(t, in)
	})
}

func BenchmarkDecodeEpisode(b *testing.B) {
	line, _ := json.Marshal(fullEpisode())
	for _, bc := range []struct {
		name   string
		decode func([]byte, *Episode) error
	}{
		{"direct", decodeEpisode},
		{"encoding-json", func(b []byte, ep *Episode) error { return json.Unmarshal(b, ep) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				var ep Episode
				if err := bc.decode(line, &ep); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodeEpisodeFastPathTakesToolCalls checks that a record with tool calls, as
// json.Marshal writes it, stays on the direct path.
func TestDecodeEpisodeFastPathTakesToolCalls(t *testing.T) {
	b, err := json.Marshal(fullEpisode())
	if err != nil {
		t.Fatal(err)
	}
	var ep Episode
	d := episodeDecoder{s: string(b)}
	if !d.episode(&ep) || !d.end() {
		t.Fatalf("the direct path left the record at byte %d of %d", d.i, len(b))
	}
	var want Episode
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ep, want) {
		t.Errorf("direct path: got %+v, want %+v", ep, want)
	}
}
