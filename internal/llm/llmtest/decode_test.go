package llmtest

import (
	"reflect"
	"testing"

	"github.com/reactgen/reactgen/internal/llm"
)

// TestDecodeRequest: the fields the fake reads, with prompt and stop as a string or a
// list, and the bodies a server refuses.
func TestDecodeRequest(t *testing.T) {
	seed := -3
	tests := []struct {
		body string
		want Req
		bad  bool
	}{
		{body: `{"model":"m","messages":[{"role":"user","content":"q \"x\"\n"}],"temperature":0.7,"top_p":1,"n":3,"seed":-3,"max_tokens":256,"stream":false,"stop":["\nObservation"]}`,
			want: Req{Model: "m", Messages: []llm.Message{{Role: "user", Content: "q \"x\"\n"}}, Temperature: 0.7, TopP: 1, N: 3,
				Seed: &seed, MaxTokens: 256, Stop: []string{"\nObservation"}}},
		{body: `{"model":"m","prompt":"Question: x","stop":"]"}`, want: Req{Model: "m", Prompt: "Question: x", Stop: []string{"]"}}},
		{body: `{"model":"m","prompt":["a","b"],"stop":null}`, want: Req{Model: "m", Prompt: "a"}},
		{body: `{}`},
		{body: `{"model":"m"`, bad: true},
		{body: `{"model":"m","n":2.5}`, bad: true},
		{body: `[]`, bad: true},
	}
	for _, tt := range tests {
		got, err := decodeRequest([]byte(tt.body))
		if (err != nil) != tt.bad {
			t.Errorf("%s: error %v, want error %v", tt.body, err, tt.bad)
			continue
		}
		if !tt.bad && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.body, got, tt.want)
		}
	}
}
