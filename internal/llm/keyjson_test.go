package llm

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/jsonenc"
)

// jsonStringSeeds are strings whose JSON takes every branch of the string escaper: each
// escaped ASCII byte, at every offset within an 8-byte word, invalid UTF-8, U+2028/9,
// other multi-byte runes and runes cut short at the end.
var jsonStringSeeds = []string{
	"", "a", "12345678", "1234567\n", "\n1234567", "Thought: I need to search <b>&</b>.\nAction: Search[\"x\"]\n",
	"\x00\x01\x1f\x7f\b\f\t\r\\/", "é\u2028\u2029\u2027\u202a", "\xff\xfe", "ab\xe2\x80", "\xe2\x80\xa8x", "日本語のテキスト",
	strings.Repeat("Observation 1: plain text of a page.\n", 300), "\U0001F600 emoji \xc3", "tab\there", "1234567\xe2\x80\xa8",
}

// The hand encoder writes json.Marshal's bytes for every request the cache keys:
// prompts and messages of any text, every optional field on and off, floats across the
// exponent cut-offs.
func TestRequestJSONIsMarshal(t *testing.T) {
	seed, zero := 42, 0
	floats := []float64{0, 0.7, 1, 2, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e300, -0.5, 5e-324, math.SmallestNonzeroFloat64, 0.1 + 0.2}
	var reqs []Request
	for i, s := range jsonStringSeeds {
		f := floats[i%len(floats)]
		reqs = append(reqs,
			Request{Model: s, Prompt: s, Temperature: f, TopP: floats[(i+3)%len(floats)], MaxTokens: i * 100, Stop: []string{s, "\nObservation"}, N: i, Attempt: i % 3},
			Request{Model: "m", Messages: []Message{{Role: "system", Content: s}, {Role: "assistant", Content: s, ToolCalls: []ToolCall{{ID: s, Type: "function", Function: FunctionCall{Name: s, Arguments: `{"q":"` + s + `"}`}}}},
				{Role: "tool", Content: s, ToolCallID: "c1", Name: s}}, Temperature: -f, Seed: &seed, Logprobs: true, TokenIDs: i%2 == 0},
		)
	}
	reqs = append(reqs, Request{}, Request{Seed: &zero, Stop: []string{}}, Request{Messages: []Message{}})
	for i := range reqs {
		checkRequestJSON(t, &reqs[i])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		s := randomText(rng)
		checkRequestJSON(t, &Request{Model: "m", Prompt: s, Stop: []string{s}})
	}
}

// randomText mixes the bytes and runes that matter for JSON at random lengths.
func randomText(rng *rand.Rand) string {
	pieces := []string{"a", "plain words ", "\n", "\"", "\\", "<", ">", "&", "\x00", "\x1f", "\x7f", "é", "\u2028", "\u2029", "\xff", "\xe2\x80", "日", "\U0001F600", "\t"}
	var sb strings.Builder
	for range rng.IntN(40) {
		sb.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return sb.String()
}

func checkRequestJSON(t *testing.T, req *Request) {
	t.Helper()
	want, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := appendRequestJSON([]byte("prefix"), req)
	if !ok {
		t.Fatalf("request %+v not encoded by hand", req)
	}
	if !bytes.Equal(got[len("prefix"):], want) {
		t.Errorf("request %q:\n got %s\nwant %s", req.Prompt, got[len("prefix"):], want)
	}
}

// What the hand encoder leaves to encoding/json: tools, and floats json.Marshal refuses.
func TestRequestJSONFallsBack(t *testing.T) {
	for _, req := range []Request{
		{Model: "m", Messages: []Message{{Role: "user", Content: "q"}}, Tools: []Tool{{Type: "function", Function: FunctionDef{Name: "f", Parameters: json.RawMessage(`{ "type" : "object" }`)}}}},
		{Model: "m", Temperature: math.NaN()},
		{Model: "m", TopP: math.Inf(1)},
	} {
		if b, ok := appendRequestJSON(nil, &req); ok || len(b) != 0 {
			t.Errorf("request %+v encoded by hand: %s", req, b)
		}
	}
}

func FuzzRequestJSON(f *testing.F) {
	for i, s := range jsonStringSeeds {
		f.Add(s, float64(i)/7)
	}
	f.Fuzz(func(t *testing.T, s string, temp float64) {
		if !jsonenc.Finite(temp) {
			return
		}
		checkRequestJSON(t, &Request{Model: s, Prompt: s, Temperature: temp, Stop: []string{s}, Messages: []Message{{Role: "user", Content: s}}})
	})
}
