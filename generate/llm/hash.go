package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// PromptHash is the sha256 (hex) of a request's prompt alone: its messages or its prompt
// text, in a canonical JSON form. Episode records carry it so that two calls with the
// same prompt can be recognised without storing the prompt.
func PromptHash(req Request) string {
	v := struct {
		Prompt   string    `json:"prompt,omitempty"`
		Messages []Message `json:"messages,omitempty"`
	}{req.Prompt, req.Messages}
	b, _ := json.Marshal(v) // a struct of strings always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// requestKey is the sha256 (hex) of the canonical JSON of the whole request, Attempt
// included: the response cache's key. encoding/json writes struct fields in declaration
// order, so the form is stable.
func requestKey(req Request) string {
	b, _ := json.Marshal(req)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
