package llm

import (
	"encoding/binary"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// The response cache's key is the sha256 of json.Marshal of the whole Request, as every
// cache on disk was written with. Encoding a request of a 10 KB few-shot prompt by
// reflection took 8% of a call's CPU in BenchmarkCallCPU; the functions here append
// exactly the bytes json.Marshal gives (FuzzRequestJSON compares them), by hand.

// appendRequestJSON appends json.Marshal(req)'s bytes to b. It reports false, with b
// unchanged, for what it does not encode by hand (see handEncoded).
func appendRequestJSON(b []byte, req *Request) ([]byte, bool) {
	if !handEncoded(req) {
		return b, false
	}
	b = appendJSONString(append(b, `{"model":`...), req.Model)
	if req.Prompt != "" {
		b = append(appendJSONChars(append(b, `,"prompt":"`...), req.Prompt), '"')
	}
	return appendRequestTail(b, req), true
}

// handEncoded reports whether appendRequestJSON encodes req: not with tools (whose
// parameters json.Marshal compacts), nor with a temperature or top_p that is not finite
// (which json.Marshal refuses).
func handEncoded(req *Request) bool {
	return len(req.Tools) == 0 && finite(req.Temperature) && finite(req.TopP)
}

// appendRequestTail appends what follows the prompt in json.Marshal(req)'s bytes: the
// messages, the sampling settings and the closing brace.
func appendRequestTail(b []byte, req *Request) []byte {
	if len(req.Messages) > 0 {
		b = append(appendMoreMessages(append(b, `,"messages":[`...), req.Messages, 0), ']')
	}
	return appendSettingsJSON(b, req)
}

// appendMoreMessages appends the JSON of msgs[from:], each after a comma but the first
// message of all.
func appendMoreMessages(b []byte, msgs []Message, from int) []byte {
	for i := from; i < len(msgs); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessageJSON(b, &msgs[i])
	}
	return b
}

// appendSettingsJSON appends what follows the messages in json.Marshal(req)'s bytes: the
// sampling settings and the closing brace.
func appendSettingsJSON(b []byte, req *Request) []byte {
	b = append(b, `,"temperature":`...)
	b = appendJSONFloat(b, req.Temperature)
	if req.TopP != 0 {
		b = append(b, `,"top_p":`...)
		b = appendJSONFloat(b, req.TopP)
	}
	b = appendIntField(b, `,"max_tokens":`, req.MaxTokens)
	if len(req.Stop) > 0 {
		b = appendList(append(b, `,"stop":`...), req.Stop, appendJSONString)
	}
	if req.Seed != nil {
		b = append(b, `,"seed":`...)
		b = strconv.AppendInt(b, int64(*req.Seed), 10)
	}
	b = appendIntField(b, `,"n":`, req.N)
	b = appendIntField(b, `,"attempt":`, req.Attempt)
	if req.Logprobs {
		b = append(b, `,"logprobs":true`...)
	}
	if req.TokenIDs {
		b = append(b, `,"token_ids":true`...)
	}
	return append(b, '}')
}

// appendMessageJSON appends json.Marshal(*m)'s bytes.
func appendMessageJSON(b []byte, m *Message) []byte {
	b = append(b, `{"role":`...)
	b = appendJSONString(b, m.Role)
	b = append(b, `,"content":`...)
	b = appendJSONString(b, m.Content)
	if len(m.ToolCalls) > 0 {
		b = appendToolCallsJSON(append(b, `,"tool_calls":`...), m.ToolCalls)
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = appendJSONString(b, m.ToolCallID)
	}
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = appendJSONString(b, m.Name)
	}
	return append(b, '}')
}

// appendToolCallsJSON appends json.Marshal(tcs)'s bytes for a non-empty list.
func appendToolCallsJSON(b []byte, tcs []ToolCall) []byte {
	b = append(b, '[')
	for i, tc := range tcs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(append(b, `{"id":`...), tc.ID)
		b = appendJSONString(append(b, `,"type":`...), tc.Type)
		b = appendJSONString(append(b, `,"function":{"name":`...), tc.Function.Name)
		b = appendJSONString(append(b, `,"arguments":`...), tc.Function.Arguments)
		b = append(b, "}}"...)
	}
	return append(b, ']')
}

// appendIntField appends name and n, or nothing for 0 (omitempty).
func appendIntField(b []byte, name string, n int) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, name...), int64(n), 10)
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// appendJSONFloat appends a finite float64 as json.Marshal writes it: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from 1e21 on, with the
// exponent unpadded (1e-7, not 1e-07).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

// escapeASCII marks the ASCII bytes json.Marshal does not copy as they are: control
// bytes, the quote, the backslash, and <, > and & (HTML-escaped).
var escapeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = true
	}
	return t
}()

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainWords returns the first index from i on, stepping 8 bytes at a time, where the
// next 8 bytes of p may need escaping: a control byte, a non-ASCII byte, or one of
// " \ < > &. For a word x, (x - n*ones) & ^x & highs is nonzero exactly when a byte of x
// is below n (n <= 0x80); with x's own high bits or-ed in, non-ASCII bytes count too. A
// byte equal to c is a byte below 1 of x ^ c*ones.
func plainWords(p []byte, i int) int {
	for ; i+8 <= len(p); i += 8 {
		x := binary.LittleEndian.Uint64(p[i : i+8])
		q, bs, lt, gt, amp := x^('"'*ones), x^('\\'*ones), x^('<'*ones), x^('>'*ones), x^('&'*ones)
		low := (x - 0x20*ones) | x
		eq := (q-ones)&^q | (bs-ones)&^bs | (lt-ones)&^lt | (gt-ones)&^gt | (amp-ones)&^amp
		if (low|eq)&highs != 0 {
			break
		}
	}
	return i
}

// appendJSONString appends s as json.Marshal writes a string: quoted, with the bytes of
// escapeASCII escaped (\n, \r, \t, \b, \f, \" and \\ by their short forms, the others as
// \u00XX), each byte of invalid UTF-8 as \ufffd, and U+2028 and U+2029 as \u2028 and
// \u2029. Runs of 8 plain bytes are skipped a word at a time.
func appendJSONString(b []byte, s string) []byte {
	return append(appendJSONChars(append(b, '"'), s), '"')
}

// appendJSONChars appends s as appendJSONString does, without the quotes. The JSON of a
// string cut after an ASCII byte is the JSON of its two parts one after the other (no
// rune spans the cut).
func appendJSONChars(b []byte, s string) []byte {
	p := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	start := 0
	for i := 0; i < len(s); {
		i = plainWords(p, i)
		// Byte by byte through the word that needs a look (or the tail), then words again.
		for end := min(i+8, len(s)); i < end; {
			c := s[i]
			if c < utf8.RuneSelf {
				if escapeASCII[c] {
					b = appendEscape(append(b, s[start:i]...), c)
					start = i + 1
				}
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				b = append(append(b, s[start:i]...), `\ufffd`...)
				start = i + size
			case r == '\u2028' || r == '\u2029':
				b = append(append(b, s[start:i]...), `\u202`...)
				b = append(b, hexDigits[r&0xf])
				start = i + size
			}
			i += size
		}
	}
	return append(b, s[start:]...)
}

const hexDigits = "0123456789abcdef"

// appendEscape appends the escape of an ASCII byte of escapeASCII.
func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// jsonBufs holds the buffers requests are encoded into for their key; one that grew past
// maxPooledJSON (a huge prompt) is not kept.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxPooledJSON = 1 << 20

func getJSONBuf() *[]byte { return jsonBufs.Get().(*[]byte) }

func putJSONBuf(p *[]byte) {
	if cap(*p) <= maxPooledJSON {
		*p = (*p)[:0]
		jsonBufs.Put(p)
	}
}
