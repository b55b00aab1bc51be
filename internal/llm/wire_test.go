package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

func TestWithTemperature(t *testing.T) {
	tests := []struct {
		name, in string
		want     any // the temperature in the result; nil means the body is unchanged
	}{
		{"absent", `{"model":"m","messages":[{"role":"user","content":"q"}]}`, 0.0},
		{"empty object", `{}`, 0.0},
		{"leading space", " \n{ \"model\":\"m\"}", 0.0},
		{"present", `{"model":"m","temperature":0.7}`, nil},
		{"quoted in content", `{"model":"m","messages":[{"role":"user","content":"\"temperature\": 5"}]}`, 0.0},
		{"as a value", `{"model":"m","stop":["temperature"]}`, 0.0},
		{"nested key", `{"model":"m","response_format":{"temperature":1}}`, 0.0},
		{"not an object", `["temperature"]`, nil},
		{"not json", `<html>`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := withTemperature([]byte(tt.in))
			// Read with room in front, as the transport does, it gives the same bytes.
			buf := make([]byte, temperatureRoom+len(tt.in))
			copy(buf[temperatureRoom:], tt.in)
			if in := withTemperatureIn(buf, temperatureRoom, false); string(in) != string(out) {
				t.Errorf("with room in front: got %s, want %s", in, out)
			}
			if tt.want == nil {
				if string(out) != tt.in {
					t.Errorf("got %s, want it unchanged", out)
				}
				return
			}
			var in, got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("result %s is not a JSON object: %v", out, err)
			}
			if err := json.Unmarshal([]byte(tt.in), &in); err != nil {
				t.Fatal(err)
			}
			if got["temperature"] != tt.want {
				t.Errorf("temperature: got %v in %s, want %v", got["temperature"], out, tt.want)
			}
			delete(got, "temperature")
			if a, b := mustJSON(t, in), mustJSON(t, got); a != b {
				t.Errorf("other keys: got %s, want %s", b, a)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A request with no temperature and no tools has "temperature":0 written in without its
// body being searched for the key: the server receives the bytes the search gave
// (withTemperature of json.Marshal of go-openai's request) for prompts and messages
// that name the key in their text, and a request with its own temperature is sent as
// go-openai wrote it.
func TestTemperatureKnownAbsentSameBytes(t *testing.T) {
	var mu sync.Mutex
	var last []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if bytes.Contains(b, []byte(`"messages"`)) {
			_, _ = io.WriteString(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
			return
		}
		_, _ = io.WriteString(w, `{"object":"text_completion","choices":[{"index":0,"text":"ok","finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	c, err := NewOpenAI(OpenAIOptions{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	seed := 5
	for i, req := range []Request{
		{Model: "m", Prompt: "Question: \"temperature\" of <Zembla>?\nThought:", MaxTokens: 100, Stop: []string{"\nObservation"}},
		{Model: "m", Prompt: "p", Temperature: 1e-60, Seed: &seed, N: 2},
		{Model: "", Prompt: "p"},
		{Model: "m", Messages: []Message{{Role: "system", Content: `{"temperature":1}`}, {Role: "user", Content: "q"}}, TopP: 0.9},
		{Model: "m", Prompt: "p", Temperature: 0.7},
	} {
		if _, err := c.Complete(t.Context(), req); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		mu.Lock()
		raw := last
		mu.Unlock()
		var sent any = completionRequest(req)
		if req.Messages != nil {
			sent = chatRequest(req)
		}
		if want := withTemperature([]byte(mustJSON(t, sent))); !bytes.Equal(raw, want) {
			t.Errorf("request %d: server got\n%s\nwant\n%s", i, raw, want)
		}
	}
}
