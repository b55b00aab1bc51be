package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// requestKey is the sha256 (hex) of the canonical JSON of the whole request, Attempt
// included: the response cache's key. encoding/json writes struct fields in declaration
// order, so the form is stable.
func requestKey(req Request) string {
	b, _ := json.Marshal(req)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
