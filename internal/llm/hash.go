package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"unsafe"
)

// requestKey is the sha256 (hex) of the canonical JSON of the whole request, Attempt
// included: the response cache's key. The JSON is json.Marshal's (encoding/json writes
// struct fields in declaration order, so the form is stable), appended by hand into a
// pooled buffer (appendRequestJSON); a request it does not encode (one with tools) is
// encoded by encoding/json straight into the hash.
func requestKey(req Request) string {
	var sum [sha256.Size]byte
	p := getJSONBuf()
	if b, ok := appendRequestJSON((*p)[:0], &req); ok {
		sum = sha256.Sum256(b)
		*p = b
	} else {
		h := &noNewline{h: sha256.New()}
		_ = json.NewEncoder(h).Encode(req)
		h.h.Sum(sum[:0])
	}
	putJSONBuf(p)
	return hex.EncodeToString(sum[:])
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
