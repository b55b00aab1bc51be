package export

import (
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// The JSONL rows are appended by hand (rowAppenders), byte for byte what
// github.com/goccy/go-json's encoder writes for the row structs without HTML escaping,
// which is what encoding/json writes (TestRowAppendersMatchEncoders): strings escape '"',
// '\\' and the control characters (\b, \f, \n, \r, \t, the others as \u00XX), replace each
// byte of invalid UTF-8 by \ufffd and escape U+2028 and U+2029; floats are written as
// encoding/json writes float64. What these functions do not write exactly (a float that
// is not finite, which the encoders refuse; raw JSON that is not compact ASCII) makes the
// appender give up, and the row is encoded from its struct instead.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// wordAt is s[j:j+8] as a little-endian word.
func wordAt(s string, j int) uint64 {
	_ = s[j+7]
	return uint64(s[j]) | uint64(s[j+1])<<8 | uint64(s[j+2])<<16 | uint64(s[j+3])<<24 |
		uint64(s[j+4])<<32 | uint64(s[j+5])<<40 | uint64(s[j+6])<<48 | uint64(s[j+7])<<56
}

// specialMask has the top bit set in each byte of w that is a control character, '"',
// '\\' or not ASCII. The lowest such byte is exact; a byte above it may be set by the
// subtraction's borrow.
func specialMask(w uint64) uint64 {
	return (w | (w - lsb*0x20) | ((w ^ lsb*'"') - lsb) | ((w ^ lsb*'\\') - lsb)) & msb
}

// plainByte is whether a byte is written as it is with nothing to look at: ASCII other
// than a control character, '"' and '\\'.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// asciiEscapes is the escape of each ASCII byte that has one.
var asciiEscapes = func() (t [0x80]string) {
	const hex = "0123456789abcdef"
	for c := range 0x20 {
		t[c] = `\u00` + string(hex[c>>4]) + string(hex[c&0xf])
	}
	t['\b'], t['\f'], t['\n'], t['\r'], t['\t'] = `\b`, `\f`, `\n`, `\r`, `\t`
	t['"'], t['\\'] = `\"`, `\\`
	return t
}()

// appendEscaped appends s as the inside of a JSON string (no quotes).
func appendEscaped(dst []byte, s string) []byte {
	i, j := 0, 0 // s[i:j] is written as it is
	for {
		for j+8 <= len(s) {
			if m := specialMask(wordAt(s, j)); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		for j < len(s) && plainByte[s[j]] {
			j++
		}
		if j >= len(s) {
			return append(dst, s[i:]...)
		}
		c := s[j]
		if c < utf8.RuneSelf {
			if !plainByte[c] {
				dst = append(append(dst, s[i:j]...), asciiEscapes[c]...)
				i = j + 1
			}
			j++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[i:j]...), `\ufffd`...)
			i = j + 1
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[i:j]...), `\u202`...)
			dst = append(dst, "89"[r-'\u2028'])
			i = j + size
		}
		j += size
	}
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	return append(appendEscaped(append(dst, '"'), s), '"')
}

// appendFloat appends f as encoding/json writes a float64, and false for a float it
// refuses (NaN, ±Inf).
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 -> 1e-7, as encoding/json writes it.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// appendBool appends true or false.
func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// rawAsIs reports whether raw JSON text is written by the encoders as it is: no
// space, tab or line break outside its strings (the encoders compact raw JSON) and no
// control character inside them (they refuse that). Other bytes, invalid UTF-8 included,
// the encoders copy. It does not check that s is JSON: the arguments of a call are
// (Validate).
func rawAsIs(s string) bool {
	if s == "" {
		return false // the encoders refuse an empty raw message
	}
	in := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < ' ':
			return false
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && c == ' ':
			return false
		}
	}
	return true
}
