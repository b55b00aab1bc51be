package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// The cache key and the prompt hash, computed without copying the request, are the
// sha256 of the bytes json.Marshal gives (and of the prompt), as the keys of every cache
// written before were.
func TestRequestKeyIsTheHashOfMarshal(t *testing.T) {
	seed := 7
	reqs := []Request{
		{},
		{Model: "m", Prompt: "Question: <a> & \"b\"\u2028 é\n" + strings.Repeat("Thought: x\n", 2000), MaxTokens: 100, Stop: []string{"\nObservation"}},
		{Model: "m", Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "Question: q\n"}}, Temperature: 0.7, TopP: 0.9, Seed: &seed, N: 3, Attempt: 2, Logprobs: true, TokenIDs: true},
		{Model: "m", Messages: []Message{{Role: "user", Content: "q"}}, Tools: []Tool{{Type: "function", Function: FunctionDef{Name: "search", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}}}},
	}
	for i, req := range reqs {
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got, want := requestKey(req), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("request %d: key %s, want %s", i, got, want)
		}
		if req.Messages == nil {
			p := sha256.Sum256([]byte(req.Prompt))
			if got, want := textHash(req), hex.EncodeToString(p[:]); got != want {
				t.Errorf("request %d: prompt hash %s, want %s", i, got, want)
			}
		}
	}
}
