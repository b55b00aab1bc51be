package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"unsafe"
)

// requestKey is the sha256 (hex) of the canonical JSON of the whole request, Attempt
// included: the response cache's key. encoding/json writes struct fields in declaration
// order, so the form is stable.
// The JSON is encoded straight into the hash (json.Encoder writes what json.Marshal
// returns, then a newline, which is left out), so the request is not copied once more.
func requestKey(req Request) string {
	h := &noNewline{h: sha256.New()}
	_ = json.NewEncoder(h).Encode(req)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.h.Sum(sum[:0]))
}

// noNewline writes all it is given to h except the last byte, held back until more
// comes: the newline json.Encoder ends each value with.
type noNewline struct {
	h    hash.Hash
	last []byte
}

func (w *noNewline) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if w.last != nil {
		w.h.Write(w.last)
	}
	w.h.Write(p[:len(p)-1])
	w.last = append(w.last[:0], p[len(p)-1])
	return len(p), nil
}

// hashString writes s to h without copying it: a hash only reads what it is given.
func hashString(h hash.Hash, s string) {
	h.Write(unsafe.Slice(unsafe.StringData(s), len(s)))
}
