// Package python holds the few rules of Python 3's str type that the official ReAct code
// (wikienv.py, wrappers.py and the notebooks) leans on, so that reactgen's paper
// environment and answer scoring meet it at the edges of white space, letter case and
// Unicode: str.isspace, str.strip(), str.split(), str.lower() (full case mapping and the
// final-sigma rule), re's \w and repr() of a str. It consumes and produces strings and
// keeps no state.
//
// Character properties come from Go's unicode tables (Unicode 15.0.0, the edition of
// Python 3.12); the tests compare them with tables Python 3.11 (Unicode 14.0.0) wrote, on
// every code point that edition assigns. Invalid UTF-8 is carried through unchanged
// where a function copies text, and counts as neither space nor letter.
package python

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsSpace is str.isspace for one code point: true for the characters whose
// bidirectional class is WS, B or S or whose category is Zs. That is Unicode's
// White_Space property (Go's unicode.IsSpace) plus the information separators U+001C to
// U+001F, which are B and S but not White_Space.
func IsSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// Strip is str.strip() with no argument: s without leading and trailing IsSpace
// characters.
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// Split is str.split() with no argument: the runs of s between IsSpace characters,
// without empty strings.
func Split(s string) []string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c >= 0x1c && c <= 0x1f {
			return strings.FieldsFunc(s, IsSpace)
		}
	}
	return strings.Fields(s) // ASCII: Go's white space is Python's but for U+001C-U+001F
}

// IsWord is re's \w in a str pattern, the class \b separates: str.isalnum (letters and
// the characters with a numeric value, which are Unicode's categories L and N) and the
// underscore.
func IsWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// Lower is str.lower(): Unicode's full lower-case mapping, which differs from the simple
// one (Go's unicode.ToLower) in one letter, U+0130 İ, lower-cased to "i̇" (i and
// U+0307), and Python's final-sigma rule: Σ becomes ς where a cased letter precedes it
// and none follows (case-ignorable characters such as apostrophes and accents skipped
// on both sides), and σ elsewhere, so "ΟΔΟΣ" is "οδος". Language-specific rules
// (Turkish, Lithuanian) are not applied, as in Python.
func Lower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s) + 4)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteByte(s[i]) // not UTF-8: kept as it is
		case r == 'İ':
			b.WriteString("i\u0307")
		case r == 'Σ':
			if finalSigma(s, i, size) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
		i += size
	}
	return b.String()
}

// finalSigma is Python's rule for the capital sigma at s[i:i+size]: the first character
// before it that is not case-ignorable is cased, and the first after it that is not
// case-ignorable, if any, is not.
func finalSigma(s string, i, size int) bool {
	before := false
	for j := i; j > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		j -= n
		if !caseIgnorable(r) {
			before = cased(r)
			break
		}
	}
	if !before {
		return false
	}
	for j := i + size; j < len(s); {
		r, n := utf8.DecodeRuneInString(s[j:])
		j += n
		if !caseIgnorable(r) {
			return !cased(r)
		}
	}
	return true
}

// cased is Unicode's Cased property: upper-case, lower-case and title-case letters and
// the other characters with the Lowercase or Uppercase property.
func cased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// caseIgnorable is Unicode's Case_Ignorable property: nonspacing and enclosing marks,
// format characters, modifier letters and symbols, and the characters whose word-break
// class is MidLetter, MidNumLet or Single_Quote (UAX #29), listed in wordBreakMid.
func caseIgnorable(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) || wordBreakMid[r]
}

// wordBreakMid holds the characters of word-break classes MidLetter, MidNumLet and
// Single_Quote (Unicode's WordBreakProperty.txt), which Go's unicode package does not
// table.
var wordBreakMid = map[rune]bool{
	'\'': true, // Single_Quote
	// MidNumLet
	'.': true, '\u2018': true, '\u2019': true, '\u2024': true, '\uFE52': true, '\uFF07': true, '\uFF0E': true,
	// MidLetter
	':': true, '\u00B7': true, '\u0387': true, '\u055F': true, '\u05F4': true, '\u2027': true, '\uFE13': true,
	'\uFE55': true, '\uFF1A': true,
}

// IsPrintable is str.isprintable for one code point: false for Unicode's categories
// Other (C*) and Separator (Z*) except the ASCII space, which is Go's unicode.IsPrint.
func IsPrintable(r rune) bool { return unicode.IsPrint(r) }

// Repr is repr() of a str, as str() of a list prints each element: in single quotes,
// or in double quotes when s holds a single quote and no double quote; the quote in use
// and the backslash escaped with a backslash; \t, \n and \r as such; other characters
// below U+0020, U+007F and the non-printable (IsPrintable) as \xhh, \uhhhh or
// \Uhhhhhhhh, the shortest that holds them. Invalid UTF-8 bytes, which a Python str
// cannot hold, are written as \xhh.
func Repr(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			hexEscape(&b, 'x', rune(s[i]), 2)
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			hexEscape(&b, 'x', r, 2)
		case r < utf8.RuneSelf || IsPrintable(r):
			b.WriteRune(r)
		case r <= 0xff:
			hexEscape(&b, 'x', r, 2)
		case r <= 0xffff:
			hexEscape(&b, 'u', r, 4)
		default:
			hexEscape(&b, 'U', r, 8)
		}
		i += size
	}
	b.WriteByte(q)
	return b.String()
}

// ListRepr is str() of a list of str: the elements' Repr joined by ", " in brackets,
// as f"{titles}" prints a list in wikienv.py.
func ListRepr(items []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Repr(s))
	}
	b.WriteByte(']')
	return b.String()
}

// hexEscape writes \<kind> and r as digits lower-case hex digits.
func hexEscape(b *strings.Builder, kind byte, r rune, digits int) {
	const hex = "0123456789abcdef"
	b.WriteByte('\\')
	b.WriteByte(kind)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hex[(r>>shift)&0xf])
	}
}
