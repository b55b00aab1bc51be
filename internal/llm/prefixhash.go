package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/reactgen/reactgen/internal/jsonenc"
)

// prefixHashes computes the cache key (requestKey) and the prompt hash (textHash) of a
// request without encoding and hashing again the part many requests share: a few-shot
// prompt's instruction and exemplars, 8 KB of a 10 KB request. For completion prompts it
// learns such a prefix from two prompts that begin alike; for chat messages it is the
// first message when that is a system message of minPrefix bytes or more. It keeps the
// sha256 states after the prefix, so a request that starts with a known one hashes only
// what follows. The results are those of requestKey and textHash
// (TestPrefixHashesAreTheHashes). It is safe for concurrent use.
type prefixHashes struct {
	memos atomic.Pointer[[]*prefixMemo] // copied on write, newest first
	last  atomic.Pointer[lastPrompt]    // the last request no memo matched
	mu    sync.Mutex                    // serializes learning
}

// lastPrompt is a request's model and prompt.
type lastPrompt struct{ model, prompt string }

// prefixMemo is what is known after one prefix of a model's prompts, or after the
// system message that opens a model's chat requests.
type prefixMemo struct {
	model, prefix string
	chat          bool        // prefix is the content of a first, system, message
	key           hash.Cloner // sha256 after the JSON of the request up to the end of the prefix
	text          hash.Cloner // sha256 after the prefix as textHash reads it
}

const (
	// minPrefix is the shortest prefix remembered: below it hashing it costs little.
	minPrefix = 1 << 10
	// maxMemos bounds the prefixes remembered (one per prompt layout and model in use).
	maxMemos = 8
)

// key is requestKey(*req), and the memo it started from (nil for none), for text.
func (p *prefixHashes) key(req *Request) (string, *prefixMemo) {
	m := p.memo(req)
	if m == nil {
		return requestKey(*req), nil
	}
	h := clone(m.key)
	buf := getJSONBuf()
	var b []byte
	if m.chat {
		b = append(appendMoreMessages((*buf)[:0], req.Messages, 1), ']')
		b = appendSettingsJSON(b, req)
	} else {
		b = append(jsonenc.AppendEscapedHTML((*buf)[:0], req.Prompt[len(m.prefix):]), '"')
		b = appendRequestTail(b, req)
	}
	_, _ = h.Write(b)
	*buf = b
	putJSONBuf(buf)
	return sum(h), m
}

// text is textHash(*req), started from m, the memo key gave for req (nil: none).
func text(req *Request, m *prefixMemo) string {
	if m == nil {
		return textHash(*req)
	}
	h := clone(m.text)
	if m.chat {
		buf := getJSONBuf()
		b := append(appendMoreMessages((*buf)[:0], req.Messages, 1), ']')
		_, _ = h.Write(b)
		*buf = b
		putJSONBuf(buf)
	} else {
		hashString(h, req.Prompt[len(m.prefix):])
	}
	return sum(h)
}

// memo returns the memo of a prefix req's prompt starts with, learning one from req and
// the last request no memo matched when there is none; nil when none applies.
func (p *prefixHashes) memo(req *Request) *prefixMemo {
	if (req.Prompt == "") == (len(req.Messages) == 0) || !handEncoded(req) {
		return nil
	}
	if m := p.find(req); m != nil {
		return m
	}
	if req.Prompt == "" {
		if !systemFirst(req.Messages) {
			return nil
		}
		return p.learn(req.Model, req.Messages[0].Content, true)
	}
	last := p.last.Swap(&lastPrompt{model: req.Model, prompt: req.Prompt})
	if last == nil || last.model != req.Model {
		return nil
	}
	return p.learn(req.Model, commonLines(last.prompt, req.Prompt), false)
}

// find returns the memo of the longest prefix req's prompt starts with, for its model,
// or nil.
func (p *prefixHashes) find(req *Request) *prefixMemo {
	ms := p.memos.Load()
	if ms == nil || (req.Prompt == "") == (len(req.Messages) == 0) {
		return nil
	}
	chat := req.Prompt == ""
	if chat && !systemFirst(req.Messages) {
		return nil
	}
	var best *prefixMemo
	for _, m := range *ms {
		switch {
		case m.chat != chat || m.model != req.Model:
		case chat && m.prefix == req.Messages[0].Content:
			return m
		case !chat && (best == nil || len(m.prefix) > len(best.prefix)) && hasPrefix(req.Prompt, m.prefix):
			best = m
		}
	}
	return best
}

// systemFirst reports whether msgs opens with a system message of minPrefix bytes or
// more and nothing but its role and content, the form a chat memo's prefix has.
func systemFirst(msgs []Message) bool {
	m := &msgs[0]
	return m.Role == "system" && len(m.Content) >= minPrefix && len(m.ToolCalls) == 0 && m.ToolCallID == "" && m.Name == ""
}

// hasPrefix is strings.HasPrefix for a prefix of minPrefix bytes or more, which first
// compares the prefix's last 8 bytes: a memo of another episode's prompt fails there.
func hasPrefix(s, prefix string) bool {
	n := len(prefix)
	return len(s) >= n && s[n-8:n] == prefix[n-8:] && s[:n] == prefix
}

// commonLines is the longest run of whole lines (ending in a newline) both a and b
// start with. It ends in an ASCII byte, so no rune spans its end.
func commonLines(a, b string) string {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return a[:strings.LastIndexByte(a[:i], '\n')+1]
}

// learn remembers prefix of model's prompts (chat: the content of the first, system,
// message) and returns its memo; nil when it is too short to be worth it.
func (p *prefixHashes) learn(model, prefix string, chat bool) *prefixMemo {
	if len(prefix) < minPrefix {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var old []*prefixMemo
	if ms := p.memos.Load(); ms != nil {
		old = *ms
	}
	for _, m := range old {
		if m.model == model && m.prefix == prefix && m.chat == chat {
			return m
		}
	}
	key, text := sha256.New(), sha256.New()
	buf := getJSONBuf()
	b := jsonenc.AppendStringHTML(append((*buf)[:0], `{"model":`...), model)
	if chat {
		b = append(b, `,"messages":`...)
		at := len(b)
		b = appendMessageJSON(append(b, '['), &Message{Role: "system", Content: prefix})
		_, _ = text.Write(b[at:])
	} else {
		b = jsonenc.AppendEscapedHTML(append(b, `,"prompt":"`...), prefix)
		hashString(text, prefix)
	}
	_, _ = key.Write(b)
	*buf = b
	putJSONBuf(buf)
	m := &prefixMemo{model: model, prefix: prefix, chat: chat, key: key.(hash.Cloner), text: text.(hash.Cloner)}
	ms := append([]*prefixMemo{m}, old[:min(len(old), maxMemos-1)]...)
	p.memos.Store(&ms)
	return m
}

func clone(c hash.Cloner) hash.Hash {
	h, err := c.Clone()
	if err != nil {
		panic("llm: sha256 state cannot be cloned: " + err.Error())
	}
	return h.(hash.Hash)
}

func sum(h hash.Hash) string {
	var s [sha256.Size]byte
	return hex.EncodeToString(h.Sum(s[:0]))
}
