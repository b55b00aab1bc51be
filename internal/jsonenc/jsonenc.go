// Package jsonenc appends JSON strings and numbers to a byte slice by hand, byte for
// byte as encoding/json writes them, for the hot paths that write JSON without
// reflection: the model cache's keys and lines (internal/llm, json.Marshal's bytes, with
// HTML escaping) and the export's JSONL rows (export, goccy's bytes without HTML
// escaping, which are encoding/json's with SetEscapeHTML(false)). It consumes Go strings
// and float64s and produces bytes; it imports nothing of the project. Encoding values by
// reflection is internal/fastjson's.
package jsonenc

import (
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as a JSON string, as encoding/json writes it with
// SetEscapeHTML(false): quoted; '"', '\\' and the control characters escaped (\b, \f, \n,
// \r, \t, the others as \u00XX); each byte of invalid UTF-8 as \ufffd; U+2028 and U+2029
// as \u2028 and \u2029.
func AppendString(dst []byte, s string) []byte {
	return append(appendEscaped(append(dst, '"'), s, false), '"')
}

// AppendStringHTML appends s as a JSON string, as json.Marshal writes it: as
// AppendString does, and '<', '>' and '&' as \u003c, \u003e and \u0026.
func AppendStringHTML(dst []byte, s string) []byte {
	return append(appendEscaped(append(dst, '"'), s, true), '"')
}

// AppendEscaped appends what AppendString writes between the quotes. The escape of a
// string cut next to an ASCII byte is the escape of its two parts one after the other
// (no character spans the cut), so a string may be escaped piece by piece.
func AppendEscaped(dst []byte, s string) []byte { return appendEscaped(dst, s, false) }

// AppendEscapedHTML appends what AppendStringHTML writes between the quotes; it may be
// cut as AppendEscaped's may.
func AppendEscapedHTML(dst []byte, s string) []byte { return appendEscaped(dst, s, true) }

// AppendFloat appends a finite f as encoding/json writes a float64: the shortest decimal
// that reads back as f, in exponent form below 1e-6 and from 1e21 on, with the exponent
// unpadded (1e-7, not 1e-07). encoding/json refuses NaN and ±Inf: the caller checks
// (Finite) and gives up on them.
func AppendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}

// Finite reports whether encoding/json writes f: not NaN, not ±Inf.
func Finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// Plain reports whether AppendString writes s as it is between the quotes: ASCII from
// the space on (DEL included), without '"' or '\\'.
func Plain(s string) bool { return plain(s, &plainJSON) }

// PlainHTML reports whether AppendStringHTML (json.Marshal) writes s as it is between
// the quotes: what Plain accepts without '<', '>' or '&'.
func PlainHTML(s string) bool { return plain(s, &plainHTML) }

func plain(s string, table *[256]bool) bool {
	for i := 0; i < len(s); i++ {
		if !table[s[i]] {
			return false
		}
	}
	return true
}

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
// '\\' or not ASCII, and htmlSpecialMask in each that is one of those or '<', '>' or
// '&'. A byte equal to c is a byte below 1 of w ^ c*lsb, and a byte below n sets its top
// bit in w - n*lsb; w's own top bits are the non-ASCII bytes. '"' and '&' (0x22, 0x26)
// differ only in bit 2 and '<' and '>' (0x3c, 0x3e) only in bit 1, so with that bit set
// one test finds both. The lowest set byte is exact; one above it may be set by the
// subtraction's borrow.
func specialMask(w uint64) uint64 {
	return (w | (w - lsb*0x20) | ((w ^ lsb*'"') - lsb) | ((w ^ lsb*'\\') - lsb)) & msb
}

func htmlSpecialMask(w uint64) uint64 {
	return (w | (w - lsb*0x20) | ((w ^ lsb*'\\') - lsb) | (((w | lsb*0x04) ^ lsb*'&') - lsb) |
		(((w | lsb*0x02) ^ lsb*'>') - lsb)) & msb
}

// plainJSON and plainHTML are whether a byte is written as it is with nothing to look
// at: ASCII other than a control character, '"' and '\\', and for plainHTML other than
// '<', '>' and '&' too.
var plainJSON, plainHTML = func() (t, h [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
		h[c] = t[c] && c != '<' && c != '>' && c != '&'
	}
	return t, h
}()

// asciiEscapes is the escape of each ASCII byte that has one.
var asciiEscapes = func() (t [utf8.RuneSelf]string) {
	const hex = "0123456789abcdef"
	for c := range 0x20 {
		t[c] = `\u00` + string(hex[c>>4]) + string(hex[c&0xf])
	}
	t['\b'], t['\f'], t['\n'], t['\r'], t['\t'] = `\b`, `\f`, `\n`, `\r`, `\t`
	t['"'], t['\\'] = `\"`, `\\`
	t['<'], t['>'], t['&'] = `\u003c`, `\u003e`, `\u0026`
	return t
}()

// appendEscaped appends s as the inside of a JSON string, with HTML's characters escaped
// or not. Runs of plain bytes are skipped eight at a time.
func appendEscaped(dst []byte, s string, html bool) []byte {
	plain := &plainJSON
	if html {
		plain = &plainHTML
	}
	i, j := 0, 0 // s[i:j] is written as it is
	for {
		// A word at a time to the first byte that may need escaping; the escape set is
		// chosen outside the loop (a test of html in it cost 5-10% of the scan).
		if html {
			for ; j+8 <= len(s); j += 8 {
				if m := htmlSpecialMask(wordAt(s, j)); m != 0 {
					j += bits.TrailingZeros64(m) >> 3
					break
				}
			}
		} else {
			for ; j+8 <= len(s); j += 8 {
				if m := specialMask(wordAt(s, j)); m != 0 {
					j += bits.TrailingZeros64(m) >> 3
					break
				}
			}
		}
		for j < len(s) && plain[s[j]] {
			j++
		}
		if j >= len(s) {
			return append(dst, s[i:]...)
		}
		if c := s[j]; c < utf8.RuneSelf { // not plain: escaped
			dst = append(append(dst, s[i:j]...), asciiEscapes[c]...)
			j++
			i = j
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
