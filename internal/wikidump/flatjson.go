package wikidump

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
)

// decodeFlatRecord decodes a JSONL record in one pass when the line is a JSON object
// whose values are strings, booleans, null or numbers, which is what almost every
// corpus line is. It reports ok false for anything else (an array or object value, an
// escaped or non-ASCII key, malformed JSON), and the caller then uses json.Unmarshal,
// which also writes the error message. When ok, rec is what json.Unmarshal gives: keys
// match the field names case-insensitively, a later duplicate key wins, and null
// leaves a pointer nil.
//
// encoding/json validates the whole line before it decodes, then scans each string
// again; on a 1 KB page that was most of the reader's time.
func decodeFlatRecord(line []byte) (rec jsonlRecord, ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return rec, false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return rec, skipSpace(line, i+1) == len(line)
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return rec, false
		}
		end, escaped := scanString(line, i)
		if end < 0 || escaped {
			return rec, false
		}
		key := line[i+1 : end-1]
		i = skipSpace(line, end)
		if i >= len(line) || line[i] != ':' {
			return rec, false
		}
		i = skipSpace(line, i+1)
		if i >= len(line) {
			return rec, false
		}
		start := i
		switch c := line[i]; {
		case c == '"':
			end, escaped = scanString(line, i)
		case c == 't':
			end = literal(line, i, "true")
		case c == 'f':
			end = literal(line, i, "false")
		case c == 'n':
			end = literal(line, i, "null")
		case c == '-' || c >= '0' && c <= '9':
			end = scanNumber(line, i)
		default:
			return rec, false // an array or object value
		}
		if end < 0 {
			return rec, false
		}
		if !setField(&rec, key, line[start:end], escaped) {
			return rec, false
		}
		i = skipSpace(line, end)
		if i >= len(line) {
			return rec, false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return rec, skipSpace(line, i+1) == len(line)
		default:
			return rec, false
		}
	}
}

// setField stores one value as json.Unmarshal would into jsonlRecord; false means the
// value's type does not fit the field (Unmarshal reports the error) or the key is not
// plain ASCII (Unmarshal's case folding covers a few non-ASCII letters).
func setField(rec *jsonlRecord, key, val []byte, escaped bool) bool {
	for _, c := range key {
		if c >= 0x80 {
			return false
		}
	}
	k := string(key)
	isNull := val[0] == 'n'
	switch {
	case strings.EqualFold(k, "title"), strings.EqualFold(k, "lines"):
		var s *string
		switch {
		case isNull:
		case val[0] != '"':
			return false
		case escaped:
			var v string
			if err := json.Unmarshal(val, &v); err != nil {
				return false
			}
			s = &v
		default:
			v := string(val[1 : len(val)-1])
			s = &v
		}
		if strings.EqualFold(k, "title") {
			rec.Title = s
		} else {
			rec.Lines = s
		}
	case strings.EqualFold(k, "text"):
		rec.Text = append(json.RawMessage(nil), val...)
	case strings.EqualFold(k, "id"):
		rec.ID = append(json.RawMessage(nil), val...)
	case strings.EqualFold(k, "disambiguation"):
		switch val[0] {
		case 't':
			rec.Disambiguation = true
		case 'f':
			rec.Disambiguation = false
		case 'n':
		default:
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index just past the JSON string that starts at b[i] (a
// quote), or -1 when it is malformed, and whether it holds an escape. The caller has
// checked that b is valid UTF-8.
func scanString(b []byte, i int) (end int, escaped bool) {
	// The common string has no escape: find its closing quote with a vector search and
	// check it for control characters eight bytes at a time.
	if q := bytes.IndexByte(b[i+1:], '"'); q >= 0 {
		s := b[i+1 : i+1+q]
		if bytes.IndexByte(s, '\\') < 0 && !hasControl(s) {
			return i + q + 2, false
		}
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped
		case c == '\\':
			escaped = true
			i++
			if i >= len(b) {
				return -1, escaped
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1, escaped
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1, escaped
					}
				}
				i += 4
			default:
				return -1, escaped
			}
		case c < 0x20:
			return -1, escaped
		}
	}
	return -1, escaped
}

// hasControl reports whether s holds a byte below 0x20, which a JSON string may not.
func hasControl(s []byte) bool {
	for len(s) >= 8 {
		x := binary.LittleEndian.Uint64(s)
		// A byte below 0x20 borrows in the subtraction and had its top bit clear.
		if (x-0x2020202020202020)&^x&0x8080808080808080 != 0 {
			return true
		}
		s = s[8:]
	}
	for _, c := range s {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// literal returns the index past word when b[i:] starts with it, else -1.
func literal(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// scanNumber returns the index past the JSON number at b[i], or -1 when it is
// malformed.
func scanNumber(b []byte, i int) int {
	digits := func(i int) int {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}
