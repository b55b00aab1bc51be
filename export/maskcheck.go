package export

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// openJSONL opens a JSONL file written by the exporter, decompressing by extension.
func openJSONL(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case strings.HasSuffix(path, ".gz"):
		zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("open %s: %w", path, err)
		}
		return zr, func() error { zr.Close(); return f.Close() }, nil
	case strings.HasSuffix(path, ".zst"):
		zr, err := zstd.NewReader(bufio.NewReaderSize(f, 1<<20), zstd.WithDecoderConcurrency(1))
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("open %s: %w", path, err)
		}
		return zr, func() error { zr.Close(); return f.Close() }, nil
	}
	return bufio.NewReaderSize(f, 1<<20), f.Close, nil
}

// MaskError is a written row whose loss mask marks a non-assistant turn trainable.
type MaskError struct {
	Path string
	Line int
	Turn int
	Role string
}

func (e *MaskError) Error() string {
	return fmt.Sprintf("loss mask check %s line %d turn %d: %s turn is marked trainable", e.Path, e.Line, e.Turn, e.Role)
}

// checkMasks re-reads a written JSONL file of a masked format and proves that no system,
// user or observation turn is trainable (observation turns may be with trainObs), and
// that a weight appears only on assistant turns. Each line is parsed strictly as JSON by
// a scanner that decodes only the mask fields: encoding/json made this re-read a tenth
// of the whole export.
func checkMasks(path, format string, trainObs bool) (rows int, err error) {
	r, closeFn, err := openJSONL(path)
	if err != nil {
		return 0, fmt.Errorf("loss mask check: %w", err)
	}
	defer closeFn()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	list := "messages"
	if format == "agentgym" {
		list = "conversations"
	}
	var turns []maskTurn
	for sc.Scan() {
		rows++
		turns, err = scanMaskLine(sc.Bytes(), list, trainObs, turns[:0])
		if err != nil {
			return rows, fmt.Errorf("loss mask check %s line %d: %w", path, rows, err)
		}
		if len(turns) == 0 {
			return rows, fmt.Errorf("loss mask check %s line %d: no %s", path, rows, list)
		}
		switch format {
		case "openai-chat", "axolotl-chat":
			user := 0
			for i, m := range turns {
				if m.role == RoleAssistant {
					continue
				}
				if m.role == RoleUser {
					user++
				}
				if m.weight {
					return rows, &MaskError{Path: path, Line: rows, Turn: i + 1, Role: m.role}
				}
				if m.train && !(m.role == RoleUser && trainObs && user-1 > 0 && m.obs) {
					return rows, &MaskError{Path: path, Line: rows, Turn: i + 1, Role: m.role}
				}
			}
		case "agentgym":
			for i, c := range turns {
				if c.role == "gpt" {
					continue
				}
				if c.train && !(trainObs && i > 0 && c.obs) {
					return rows, &MaskError{Path: path, Line: rows, Turn: i + 1, Role: c.role}
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return rows, fmt.Errorf("loss mask check %s line %d: %w", path, rows+1, err)
	}
	return rows, nil
}

// maskTurn is the loss mask of one turn as written: its role ("role" or "from"), whether
// it carries a non-null weight, whether "train" or "loss" is true, and whether its text
// ("content" or "value") starts with "Observation: " (looked at only under trainObs).
type maskTurn struct {
	role   string
	weight bool
	train  bool
	obs    bool
}

// scanMaskLine parses line as one JSON object and appends the turns of its array list
// ("messages" or "conversations"). Like encoding/json it rejects malformed JSON and
// trailing data, and a repeated key counts by its last value.
func scanMaskLine(line []byte, list string, trainObs bool, turns []maskTurn) ([]maskTurn, error) {
	s := jsonScanner{b: line}
	s.space()
	found := false
	err := s.object(func(key []byte) error {
		if string(key) != list {
			return s.skip()
		}
		if found {
			turns = turns[:0]
		}
		found = true
		if s.peek() == 'n' {
			return s.literal("null")
		}
		return s.array(func() error {
			var t maskTurn
			if err := s.object(func(key []byte) error {
				switch string(key) {
				case "role", "from":
					v, err := s.str()
					t.role = internRole(v)
					return err
				case "content", "value":
					if !trainObs {
						return s.skip()
					}
					v, err := s.str()
					t.obs = strings.HasPrefix(v, "Observation: ")
					return err
				case "weight":
					null, err := s.nullOr()
					t.weight = !null
					return err
				case "train", "loss":
					v, err := s.boolOrNull()
					t.train = v
					return err
				}
				return s.skip()
			}); err != nil {
				return err
			}
			turns = append(turns, t)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if s.space(); s.i != len(s.b) {
		return nil, s.errorf("data after the top-level value")
	}
	return turns, nil
}

// jsonScanner is a strict JSON reader over one line that decodes only what is asked
// for and skips the rest.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", s.i, fmt.Sprintf(format, args...))
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (s *jsonScanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScanner) expect(c byte) error {
	if s.peek() != c {
		return s.errorf("want %q", c)
	}
	s.i++
	return nil
}

// object reads {"key": value, ...}, calling field with each key (escape-free keys
// only: the exporter's keys never need escapes) positioned at its value.
func (s *jsonScanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		raw, esc, err := s.rawString()
		if err != nil {
			return err
		}
		if esc {
			k, err := unquote(raw)
			if err != nil {
				return s.errorf("key: %v", err)
			}
			raw = []byte(k)
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.space()
		if err := field(raw); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("want , or } in an object")
		}
	}
}

// array reads [value, ...], calling elem positioned at each value.
func (s *jsonScanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		s.space()
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("want , or ] in an array")
		}
	}
}

// strByte marks the bytes that end the fast path of a string: the quote, the backslash
// and the control characters JSON forbids unescaped.
var strByte = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// rawString reads a string and returns its bytes between the quotes, and whether they
// hold an escape.
func (s *jsonScanner) rawString() ([]byte, bool, error) {
	if err := s.expect('"'); err != nil {
		return nil, false, err
	}
	start, esc := s.i, false
	b := s.b
	for i := s.i; i < len(b); {
		if i+8 <= len(b) && !specialIn8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
			continue
		}
		c := b[i]
		if !strByte[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			s.i = i + 1
			return b[start:i], esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				s.i = i
				return nil, false, s.errorf("unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					s.i = i
					return nil, false, s.errorf("bad \\u escape")
				}
				i += 6
			default:
				s.i = i
				return nil, false, s.errorf("bad escape \\%c", b[i+1])
			}
		default:
			s.i = i
			return nil, false, s.errorf("control character %#x in a string", c)
		}
	}
	s.i = len(b)
	return nil, false, s.errorf("unterminated string")
}

// specialIn8 reports whether any of the 8 bytes in w is a strByte (SWAR: a byte of
// (x - 0x01) & ^x & 0x80 is set where x is zero, and of (w - 0x20) & ^w & 0x80 where w
// is below 0x20; a false positive only sends the loop to its byte-wise path).
func specialIn8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs := w^(ones*'"'), w^(ones*'\\')
	return ((q-ones)&^q|(bs-ones)&^bs|(w-ones*0x20)&^w)&highs != 0
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// unquote decodes the escapes of a raw string body (rare: roles and the prefixes the
// check looks at are written without escapes).
func unquote(raw []byte) (string, error) {
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var v string
	err := json.Unmarshal(q, &v)
	return v, err
}

// internRole returns the constant for a known role, so the per-turn string is not kept.
func internRole(r string) string {
	for _, k := range [...]string{RoleUser, RoleAssistant, RoleSystem, "human", "gpt"} {
		if r == k {
			return k
		}
	}
	return r
}

// str reads a string value and decodes it.
func (s *jsonScanner) str() (string, error) {
	raw, esc, err := s.rawString()
	if err != nil {
		return "", err
	}
	if !esc {
		return string(raw), nil
	}
	v, err := unquote(raw)
	if err != nil {
		return "", s.errorf("%v", err)
	}
	return v, nil
}

func (s *jsonScanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return s.errorf("want %s", lit)
	}
	s.i += len(lit)
	return nil
}

// nullOr reads any value and reports whether it was null.
func (s *jsonScanner) nullOr() (bool, error) {
	if s.peek() == 'n' {
		return true, s.literal("null")
	}
	return false, s.skip()
}

// boolOrNull reads true, false or null (false), as encoding/json fills a *bool.
func (s *jsonScanner) boolOrNull() (bool, error) {
	switch s.peek() {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	case 'n':
		return false, s.literal("null")
	}
	return false, s.errorf("want a bool or null")
}

// skip reads and discards one value of any kind.
func (s *jsonScanner) skip() error {
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.rawString()
		return err
	case c == '{':
		return s.object(func([]byte) error { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return s.errorf("want a value")
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScanner) number() error {
	b, i := s.b, s.i
	digits := func() bool {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		s.i = i
		return s.errorf("bad number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			s.i = i
			return s.errorf("bad number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			s.i = i
			return s.errorf("bad number")
		}
	}
	s.i = i
	return nil
}
