package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"strings"

	"github.com/reactgen/reactgen/internal/llm"
)

// Text is the request's full prompt as episode records keep it: the completion prompt,
// or the chat messages as JSON.
func (r Request) Text() string {
	if r.Messages == nil {
		return r.Prompt
	}
	b, _ := json.Marshal(r.Messages) // messages of strings always marshal
	return string(b)
}

// Hash is the sha256 (hex) of Text. A request rendered by a Layout starts with the
// layout's prefix, whose hash state the layout keeps: only what follows the prefix is
// encoded and hashed, so the cost of a request does not grow with the exemplars. The
// result is the same as hashing Text.
func (r Request) Hash() string {
	h := r.layout.resume(r)
	if h == nil {
		h = sha256.New()
		_, _ = h.Write([]byte(r.Text()))
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// prefixHash is the sha256 state after a layout's prefix in Text's form: the completion
// prompt's first bytes, or the opening of the chat messages' JSON up to the end of the
// system message.
type prefixHash struct {
	state hash.Cloner
}

func newPrefixHash(format, prefix string) prefixHash {
	h := sha256.New()
	if format == FormatChat {
		b, _ := json.Marshal([]llm.Message{{Role: "system", Content: prefix}})
		_, _ = h.Write(b[:len(b)-1]) // without the closing bracket
	} else {
		_, _ = h.Write([]byte(prefix))
	}
	return prefixHash{state: h.(hash.Cloner)}
}

// newMessagesHash is the prefix state of the tools format: the opening of the messages'
// JSON up to the end of head, the system message and the exemplars' turns.
func newMessagesHash(head []llm.Message) prefixHash {
	h := sha256.New()
	b, _ := json.Marshal(head)
	_, _ = h.Write(b[:len(b)-1]) // without the closing bracket
	return prefixHash{state: h.(hash.Cloner)}
}

// resume returns a hash that has consumed all of r's Text, starting from the layout's
// prefix state, or nil when r does not start with the prefix (or l is nil).
func (l *Layout) resume(r Request) hash.Hash {
	if l == nil {
		return nil
	}
	if r.Messages == nil {
		if !strings.HasPrefix(r.Prompt, l.prefix) {
			return nil
		}
		h := l.clonePrefix()
		_, _ = h.Write([]byte(r.Prompt[len(l.prefix):]))
		return h
	}
	head := l.head
	if l.format == FormatChat {
		head = []llm.Message{{Role: "system", Content: l.prefix}}
	}
	if len(head) == 0 || len(r.Messages) < len(head) {
		return nil
	}
	for i, m := range head {
		if !sameMessage(r.Messages[i], m) {
			return nil
		}
	}
	h := l.clonePrefix()
	if len(r.Messages) == len(head) {
		_, _ = h.Write([]byte("]"))
		return h
	}
	// The JSON of a slice is its elements' JSON joined by commas within brackets, so the
	// rest of the list continues the prefix's bytes exactly.
	tail, _ := json.Marshal(r.Messages[len(head):])
	tail[0] = ','
	_, _ = h.Write(tail)
	return h
}

func (l *Layout) clonePrefix() hash.Hash {
	c, err := l.hash.state.Clone()
	if err != nil {
		panic("prompt: sha256 state cannot be cloned: " + err.Error())
	}
	return c.(hash.Hash)
}

// sameMessage reports whether a and b are the same message.
func sameMessage(a, b llm.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || a.Name != b.Name || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i] != b.ToolCalls[i] {
			return false
		}
	}
	return true
}
