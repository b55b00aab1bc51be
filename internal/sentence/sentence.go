// Package sentence splits encyclopedia prose into sentences. It consumes plain text (a
// Wikipedia intro, a page's extract, a transcript observation) and produces the ordered
// list of its sentences, each trimmed and non-empty, whose concatenation holds every
// non-space character of the input in order.
//
// The rules, in the order they are applied:
//
//   - A newline (\n or \r) is a hard break: text on either side never shares a sentence.
//   - A sentence can only end at a run of terminators: '.', '?', '!' or '…', in any
//     mix and number ("..", "...", "?!").
//   - After the run, closing quotes and brackets (" ' ” ’ » ) ]) and citation marks
//     such as [6], [a] or [nb 1] stay with the sentence that ends there.
//   - The break needs white space after all of that (or the end of the line), so
//     decimals, version numbers, URLs and "end.Next" never split.
//   - The next sentence must start like one: an upper-case letter, a digit, a letter of
//     a script without case, or an opening quote or bracket followed by one of those.
//     A lower-case word after the stop means the stop was an abbreviation ("etc. and");
//     a bracketed number continues the sentence ("Where Is It? (2001) is a film").
//   - A single '.' after a word from a fixed list of abbreviations that precede a name
//     or a number (Mr, Mrs, Ms, Dr, St, Mt, Gen, Col, Lt, Sgt, Capt, Prof, Rev, Gov, Sen,
//     Rep, Pres, Fr, No, Nos, Vol, Fig, vs, e.g, i.e, c, ca, approx, the month
//     abbreviations Jan to Dec) never ends a sentence.
//   - A single '.' after an initial (one upper-case letter: J. R. R. Tolkien), after a
//     dotted abbreviation (U.S., U.K., a.m., Ph.D.) or after an abbreviation that may also
//     close a sentence (Inc, Ltd, Co, Corp, Bros, Jr, Sr, Esq) ends one only when the
//     next word is a common sentence opener (The, He, It, In, ...): "the U.S. The war"
//     splits, "the U.S. Army" does not.
//   - Doubled or longer runs ("word.. Next", scraping noise) and '?', '!' end a sentence
//     whenever the next one starts like one, whatever word precedes them.
package sentence

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// neverBreak are abbreviations that precede a name or a number, so a single full stop
// after them is never the end of a sentence. Matched case-sensitively.
var neverBreak = setOf(
	"Mr", "Mrs", "Ms", "Messrs", "Dr", "St", "Mt", "Ft", "Gen", "Col", "Lt", "Sgt", "Capt",
	"Cmdr", "Adm", "Maj", "Prof", "Rev", "Hon", "Gov", "Sen", "Rep", "Pres", "Fr",
	"No", "Nos", "Vol", "vol", "Fig", "fig", "pp", "p", "vs", "v", "e.g", "i.e", "cf",
	"c", "ca", "approx", "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept",
	"Oct", "Nov", "Dec",
)

// maybeBreak are abbreviations that often close a sentence too ("founded Apple Inc.").
var maybeBreak = setOf("Inc", "Ltd", "Co", "Corp", "Bros", "Jr", "Sr", "Esq", "Pty", "Plc", "LLC")

// openers are words that commonly start an encyclopedia sentence; after an ambiguous
// abbreviation they decide that the full stop was also the end of the sentence.
var openers = setOf(
	"The", "A", "An", "He", "She", "It", "They", "We", "I", "His", "Her", "Its", "Their",
	"This", "That", "These", "Those", "There", "In", "On", "At", "After", "Before", "During",
	"As", "However", "Although", "While", "When", "Since", "From", "By", "For", "With",
	"Following", "According", "Today", "Later", "Also", "Other", "Many", "Some", "Most",
	"Both", "Each", "One", "Two", "If", "Unlike", "Despite", "Between", "Over", "Under",
	"Born", "Founded", "Its", "Several", "Such", "Additionally", "Furthermore", "Currently",
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// Split returns the sentences of text, trimmed and non-empty, in order. See the package
// comment for the rules.
func Split(text string) []string {
	var out []string
	for len(text) > 0 {
		// The first '\n', or a '\r' before it: two byte searches cost less than
		// IndexAny's byte loop, and the second one stops at the line's end.
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			i = len(text)
		}
		if j := strings.IndexByte(text[:i], '\r'); j >= 0 {
			i = j
		}
		line := text[:i]
		if i < len(text) {
			text = text[i+1:]
		} else {
			text = ""
		}
		out = splitLine(line, out)
	}
	return out
}

func isTerminator(r rune) bool { return r == '.' || r == '?' || r == '!' || r == '…' }

func isCloser(r rune) bool {
	switch r {
	case '"', '\'', '”', '’', '»', ')', ']', '}':
		return true
	}
	return false
}

func isOpener(r rune) bool {
	switch r {
	case '"', '\'', '“', '‘', '«', '(', '[', '¿', '¡':
		return true
	}
	return false
}

func splitLine(line string, out []string) []string {
	start := 0
	i := 0
	for i < len(line) {
		// Terminators are '.', '?', '!' or '…' (which starts with 0xE2, a byte no other
		// rune's continuation can hold), so the scan decodes only at those bytes.
		if c := line[i]; c != '.' && c != '?' && c != '!' && c != 0xE2 {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(line[i:])
		if !isTerminator(r) {
			i += size
			continue
		}
		// The run of terminators [i, j).
		j := i
		for j < len(line) {
			r2, s2 := utf8.DecodeRuneInString(line[j:])
			if !isTerminator(r2) {
				break
			}
			j += s2
		}
		k := skipClosers(line, j)
		m := k
		for m < len(line) {
			r2, s2 := utf8.DecodeRuneInString(line[m:])
			if !unicode.IsSpace(r2) {
				break
			}
			m += s2
		}
		switch {
		case k == len(line) || m == len(line):
			// The line ends here; the tail is added below.
		case m > k && isBoundary(line[start:i], line[i:j], line[m:]):
			if s := strings.TrimSpace(line[start:k]); s != "" {
				out = append(out, s)
			}
			start = m
		}
		if m > j {
			i = m
		} else {
			i = j
		}
	}
	if s := strings.TrimSpace(line[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// skipClosers returns the offset after the closing quotes, brackets and citation marks
// that follow a terminator run ending at j.
func skipClosers(line string, j int) int {
	for j < len(line) {
		r, size := utf8.DecodeRuneInString(line[j:])
		switch {
		case r == '[':
			end := strings.IndexByte(line[j:], ']')
			if end < 0 || end > 24 || strings.ContainsAny(line[j+1:j+end], "[\t") {
				return j
			}
			j += end + 1
		case isCloser(r):
			j += size
		default:
			return j
		}
	}
	return j
}

// isBoundary decides whether the terminator run ends the sentence before, given the
// text of the sentence so far and the rest of the line (starting at a non-space).
func isBoundary(before, run, rest string) bool {
	if !startsSentence(rest) {
		return false
	}
	if run != "." {
		return true
	}
	word := lastWord(before)
	switch {
	case word == "":
		return true
	case neverBreak[word]:
		return false
	case maybeBreak[word], isInitial(word), isDotted(word):
		return openers[firstWord(rest)]
	}
	return true
}

// startsSentence reports whether s begins like a sentence.
func startsSentence(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	if isOpener(r) {
		open := r
		r, _ = utf8.DecodeRuneInString(s[size:])
		if open == '(' && unicode.IsDigit(r) {
			return false // "Where's My Car? (2000)": a year in brackets continues the sentence
		}
	}
	switch {
	case unicode.IsUpper(r), unicode.IsDigit(r), unicode.IsTitle(r):
		return true
	case unicode.IsLetter(r) && !unicode.IsLower(r):
		return true // a script without case
	}
	return false
}

// lastWord returns the word just before a full stop, without leading quotes or brackets.
func lastWord(s string) string {
	i := strings.LastIndexFunc(s, unicode.IsSpace)
	w := s[i+1:]
	return strings.TrimLeftFunc(w, func(r rune) bool { return isOpener(r) || r == '-' || r == '–' || r == '—' })
}

// firstWord returns the leading letters of s after any opening quote.
func firstWord(s string) string {
	s = strings.TrimLeftFunc(s, isOpener)
	end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
	if end < 0 {
		return s
	}
	return s[:end]
}

// isInitial reports whether w is a single upper-case letter.
func isInitial(w string) bool {
	r, size := utf8.DecodeRuneInString(w)
	return size == len(w) && unicode.IsUpper(r)
}

// isDotted reports whether w is a dotted abbreviation such as U.S, a.m or Ph.D: segments
// of one or two letters separated by full stops.
func isDotted(w string) bool {
	if !strings.Contains(w, ".") {
		return false
	}
	for seg := range strings.SplitSeq(w, ".") {
		n := utf8.RuneCountInString(seg)
		if n < 1 || n > 2 {
			return false
		}
		for _, r := range seg {
			if !unicode.IsLetter(r) {
				return false
			}
		}
	}
	return true
}
