package envserver

import (
	"bytes"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/fastjson"
)

// plainStep reads the message nearly every /ws message is, a step with nothing but its
// action: {"type": "step", "data": {"action": "…"}}, in either key order, with any JSON
// whitespace. It does in one pass, without a map, what handleMessage's general path
// does in three decodes. ok is false for anything else (another type, metadata, an extra
// or repeated key, an escaped key, malformed JSON), which the general path answers,
// errors included.
func plainStep(msg []byte) (action string, ok bool) {
	p := scanner{b: msg}
	if !p.byte('{') {
		return "", false
	}
	var sawType, sawData bool
	for {
		key, ok := p.key()
		if !ok {
			return "", false
		}
		switch {
		case key == "type" && !sawType:
			v, ok := p.plainString()
			if !ok || v != "step" {
				return "", false
			}
			sawType = true
		case key == "data" && !sawData:
			if !p.byte('{') {
				return "", false
			}
			if k, ok := p.key(); !ok || k != "action" {
				return "", false
			}
			if action, ok = p.string(); !ok || !p.byte('}') {
				return "", false
			}
			sawData = true
		default:
			return "", false
		}
		if p.byte('}') {
			break
		}
		if !p.byte(',') {
			return "", false
		}
	}
	p.space()
	return action, sawType && sawData && p.i == len(p.b)
}

// scanner reads JSON tokens from b at i.
type scanner struct {
	b []byte
	i int
}

// space skips JSON whitespace.
func (p *scanner) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c after whitespace; false (consuming nothing) when another byte is next.
func (p *scanner) byte(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// key reads an object key without escapes and its colon.
func (p *scanner) key() (string, bool) {
	k, ok := p.plainString()
	return k, ok && p.byte(':')
}

// raw returns a JSON string's bytes between its quotes, and whether it holds a
// backslash; false when no string is next or it is not closed or holds a control byte.
func (p *scanner) raw() (s []byte, escaped, ok bool) {
	if !p.byte('"') {
		return nil, false, false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], escaped, true
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return nil, false, false
		default:
			p.i++
		}
	}
	return nil, false, false
}

// plainString reads a string without escapes, in valid UTF-8.
func (p *scanner) plainString() (string, bool) {
	s, escaped, ok := p.raw()
	if !ok || escaped || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// string reads a string value; one with escapes is decoded as JSON decodes it.
func (p *scanner) string() (string, bool) {
	start := p.i
	s, escaped, ok := p.raw()
	switch {
	case !ok || !utf8.Valid(s):
		return "", false
	case !escaped:
		return string(s), true
	}
	var v string
	quoted := p.b[start:p.i]
	if err := fastjson.Unmarshal(bytes.TrimLeft(quoted, " \t\n\r"), &v); err != nil {
		return "", false
	}
	return v, true
}
