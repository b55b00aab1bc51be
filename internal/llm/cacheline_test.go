package llm

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// A cache line written by hand is the line json.Marshal wrote before: every field of a
// choice, a usage with and without cached tokens, token ids, times of every precision.
func TestLogEntryJSONIsMarshal(t *testing.T) {
	seed := 3
	req := Request{Model: "gpt-x", Temperature: 0.7, TopP: 0.95, MaxTokens: 256, Stop: []string{"\nObservation"}, Seed: &seed, N: 2, Attempt: 1, Logprobs: true, TokenIDs: true}
	times := []time.Time{
		time.Date(2026, 12, 4, 17, 30, 0, 0, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 100000000, time.FixedZone("x", 5*3600+30*60)), {},
	}
	var entries []logEntry
	for i, s := range jsonStringSeeds {
		e := logEntry{V: logVersion, Key: "k" + s, PromptHash: s, Request: req, Model: s, Written: times[i%len(times)], Original: int64(i * 37),
			Usage: Usage{PromptTokens: i, CompletionTokens: 2 * i, TotalTokens: 3 * i, CachedPromptTokens: i % 2}}
		e.Choices = []Choice{
			{Text: s, FinishReason: "stop"},
			{Text: s, FinishReason: "tool_calls", ToolCalls: []ToolCall{{ID: "c" + s, Type: "function", Function: FunctionCall{Name: "search", Arguments: `{"q":"` + s + `"}`}}},
				Reasoning: s, Logprobs: []float64{-0.25, -1e-7, 0, -30.5, math.SmallestNonzeroFloat64}, TokenIDs: []int64{1, 2, 151643}},
		}
		if i%3 == 0 {
			e.PromptTokenIDs = []int64{9, 8, 7}
			e.Request = Request{}
		}
		entries = append(entries, e)
	}
	entries = append(entries, logEntry{}, logEntry{Choices: []Choice{}})
	for i := range entries {
		want, err := json.Marshal(entries[i])
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendLogEntry([]byte("x"), &entries[i])
		if !ok {
			t.Fatalf("entry %d not encoded by hand", i)
		}
		if !bytes.Equal(got[1:], want) {
			t.Errorf("entry %d:\n got %s\nwant %s", i, got[1:], want)
		}
	}
}

// What the hand encoder leaves to encoding/json, which refuses the first two.
func TestLogEntryJSONFallsBack(t *testing.T) {
	for _, e := range []logEntry{
		{Choices: []Choice{{Text: "a", Logprobs: []float64{math.Inf(-1)}}}},
		{Written: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Request: Request{Tools: []Tool{{Type: "function", Function: FunctionDef{Name: "f", Parameters: json.RawMessage(`{}`)}}}}},
	} {
		if b, ok := appendLogEntry([]byte("x"), &e); ok || string(b) != "x" {
			t.Errorf("entry %+v encoded by hand: %s", e, b)
		}
	}
}
