package llmtest

import (
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/llm"
)

// decodeRequest reads a request body into a Req (without Endpoint and Header), as
// encoding/json reads it into wireRequest. Bodies as OpenAI clients write them (the known
// keys, strings and numbers) take a direct path that is several times cheaper than
// encoding/json: at hundreds of requests in flight the fake must cost less than the
// client it serves. Any other body, valid or not, goes through encoding/json.
func decodeRequest(raw []byte) (Req, error) {
	if r, ok := decodeSimple(raw); ok {
		return r, nil
	}
	var wr wireRequest
	if err := json.Unmarshal(raw, &wr); err != nil {
		return Req{}, err
	}
	r := Req{
		Model: wr.Model, Messages: wr.Messages, Stop: stringOrList(wr.Stop),
		Temperature: wr.Temperature, TopP: wr.TopP, N: wr.N, Seed: wr.Seed, MaxTokens: wr.MaxTokens, Tools: wr.Tools,
	}
	if p := stringOrList(wr.Prompt); len(p) > 0 {
		r.Prompt = p[0]
	}
	return r, nil
}

// decodeSimple is the direct path. ok is false for anything it does not handle exactly
// like encoding/json: an unknown key, null, a value of another type, a malformed body.
func decodeSimple(raw []byte) (Req, bool) {
	d := simpleDecoder{b: raw}
	var r Req
	if !d.expect('{') {
		return r, false
	}
	if d.peek() == '}' {
		d.i++
		return r, d.end()
	}
	for {
		key, ok := d.str()
		if !ok || !d.expect(':') {
			return r, false
		}
		switch key {
		case "model":
			r.Model, ok = d.str()
		case "messages":
			r.Messages, ok = d.messages()
		case "prompt":
			var p []string
			if p, ok = d.strings(); ok && len(p) > 0 {
				r.Prompt = p[0]
			}
		case "stop":
			r.Stop, ok = d.strings()
		case "temperature":
			r.Temperature, ok = d.float()
		case "top_p":
			r.TopP, ok = d.float()
		case "n":
			r.N, ok = d.int()
		case "max_tokens":
			r.MaxTokens, ok = d.int()
		case "seed":
			var s int
			if s, ok = d.int(); ok {
				r.Seed = &s
			}
		case "stream": // go-openai sends "stream":false; wireRequest has no such field
			ok = d.boolean()
		default:
			return r, false // encoding/json matches keys case-insensitively and skips unknown ones
		}
		if !ok {
			return r, false
		}
		switch d.next() {
		case ',':
		case '}':
			return r, d.end()
		default:
			return r, false
		}
	}
}

type simpleDecoder struct {
	b []byte
	i int
}

func (d *simpleDecoder) space() {
	for d.i < len(d.b) && (d.b[d.i] == ' ' || d.b[d.i] == '\t' || d.b[d.i] == '\n' || d.b[d.i] == '\r') {
		d.i++
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (d *simpleDecoder) peek() byte {
	d.space()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// next consumes and returns the next byte after white space, or 0 at the end.
func (d *simpleDecoder) next() byte {
	c := d.peek()
	if c != 0 {
		d.i++
	}
	return c
}

func (d *simpleDecoder) expect(c byte) bool { return d.next() == c }

// end reports whether only white space is left.
func (d *simpleDecoder) end() bool {
	d.space()
	return d.i == len(d.b)
}

// str reads a string; text without escapes or non-ASCII bytes is copied as it is.
func (d *simpleDecoder) str() (string, bool) {
	if !d.expect('"') {
		return "", false
	}
	start := d.i
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			s := string(d.b[start:d.i])
			d.i++
			return s, true
		case c == '\\' || c >= utf8.RuneSelf:
			return d.escaped(start)
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// escaped finishes a string that started at start and holds an escape at d.i.
func (d *simpleDecoder) escaped(start int) (string, bool) {
	out := make([]byte, 0, d.i-start+64)
	out = append(out, d.b[start:d.i]...)
	for ; d.i < len(d.b); d.i++ {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return string(out), true
		case c == '\\':
			d.i++
			if d.i >= len(d.b) {
				return "", false
			}
			switch e := d.b[d.i]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				// As encoding/json: a surrogate pair is one rune, a lone surrogate U+FFFD.
				r := d.hex4(d.i + 1)
				if r < 0 {
					return "", false
				}
				d.i += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if d.i+2 < len(d.b) && d.b[d.i+1] == '\\' && d.b[d.i+2] == 'u' {
						r2 = d.hex4(d.i + 3)
					}
					if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
						d.i += 6
						r = dec
					} else {
						r = unicode.ReplacementChar
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", false
			}
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			// As encoding/json: invalid UTF-8 becomes U+FFFD.
			r, size := utf8.DecodeRune(d.b[d.i:])
			out = utf8.AppendRune(out, r)
			d.i += size - 1
		default:
			out = append(out, c)
		}
	}
	return "", false
}

// hex4 reads the four hex digits at i, or returns -1.
func (d *simpleDecoder) hex4(i int) rune {
	if i+4 > len(d.b) {
		return -1
	}
	var r rune
	for _, c := range d.b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// boolean reads true or false.
func (d *simpleDecoder) boolean() bool {
	d.space()
	for _, lit := range []string{"true", "false"} {
		if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
			d.i += len(lit)
			return true
		}
	}
	return false
}

// strings reads a string or a list of strings, as stringOrList does.
func (d *simpleDecoder) strings() ([]string, bool) {
	if d.peek() == '"' {
		s, ok := d.str()
		return []string{s}, ok
	}
	if !d.expect('[') {
		return nil, false
	}
	list := []string{}
	if d.peek() == ']' {
		d.i++
		return list, true
	}
	for {
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		list = append(list, s)
		switch d.next() {
		case ',':
		case ']':
			return list, true
		default:
			return nil, false
		}
	}
}

// messages reads a list of {"role", "content"} objects.
func (d *simpleDecoder) messages() ([]llm.Message, bool) {
	if !d.expect('[') {
		return nil, false
	}
	msgs := make([]llm.Message, 0, 8)
	if d.peek() == ']' {
		d.i++
		return msgs, true
	}
	for {
		m, ok := d.message()
		if !ok {
			return nil, false
		}
		msgs = append(msgs, m)
		switch d.next() {
		case ',':
		case ']':
			return msgs, true
		default:
			return nil, false
		}
	}
}

func (d *simpleDecoder) message() (llm.Message, bool) {
	var m llm.Message
	if !d.expect('{') {
		return m, false
	}
	if d.peek() == '}' {
		d.i++
		return m, true
	}
	for {
		key, ok := d.str()
		if !ok || !d.expect(':') {
			return m, false
		}
		switch key {
		case "role":
			m.Role, ok = d.str()
		case "content":
			m.Content, ok = d.str()
		default:
			return m, false
		}
		if !ok {
			return m, false
		}
		switch d.next() {
		case ',':
		case '}':
			return m, true
		default:
			return m, false
		}
	}
}

// number returns the text of a JSON number and whether it has a fraction or exponent.
func (d *simpleDecoder) number() (string, bool, bool) {
	d.space()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		n := 0
		for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	intStart := d.i
	n := digits()
	if n == 0 || (n > 1 && d.b[intStart] == '0') {
		return "", false, false
	}
	frac := false
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return "", false, false
		}
		frac = true
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return "", false, false
		}
		frac = true
	}
	return string(d.b[start:d.i]), frac, true
}

func (d *simpleDecoder) float() (float64, bool) {
	s, _, ok := d.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func (d *simpleDecoder) int() (int, bool) {
	s, frac, ok := d.number()
	if !ok || frac {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
