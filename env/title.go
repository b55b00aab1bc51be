package env

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Match says which page Corpus.Page finds for a searched title. Every backend finds it
// among the pages whose titles share the title's NormalizeTitle key, with Match.Pick.
type Match uint8

const (
	// MatchPaper finds what wikienv.py's search found on Wikipedia, as far as a corpus
	// has Wikipedia's titles: the page whose title is the searched one (TitleKey: with
	// underscores read as spaces and white space collapsed, as every MediaWiki title is),
	// else the one whose title is it with its first letter upper-cased (MediaWiki's
	// titles begin with a capital), else the first, in corpus order, whose title differs
	// from it only in letter case; and when none, the same for the text inside a pair of
	// straight double quotes ("X"), which MediaWiki's near match strips. No other quote
	// is stripped, and no "(disambiguation)" page stands in for a missing title.
	MatchPaper Match = iota
	// MatchRules is reactgen's lenient search: the same steps for the title with any
	// surrounding quotes stripped (CleanTitle), and then the first page, in corpus
	// order, whose title folds alike under NormalizeTitle (quotes, case, underscores and
	// white space ignored). A rules Wiki also falls back to "<title> (disambiguation)".
	MatchRules
)

// Pick returns the index in titles of the page a Search for entity finds under m, or
// ok false. titles are the titles of the pages whose NormalizeTitle equals entity's, in
// corpus order.
func (m Match) Pick(entity string, titles []string) (i int, ok bool) {
	if len(titles) == 0 {
		return -1, false
	}
	var terms []string
	if m == MatchPaper {
		terms = append(terms, TitleKey(entity))
		if inner, ok := quotedTerm(terms[0]); ok {
			terms = append(terms, TitleKey(inner))
		}
	} else {
		terms = append(terms, CleanTitle(entity))
	}
	for _, term := range terms {
		if i := indexTitle(titles, term, TitleKey); i >= 0 {
			return i, true
		}
		if up := upperFirst(term); up != term {
			if i := indexTitle(titles, up, TitleKey); i >= 0 {
				return i, true
			}
		}
		if i := indexTitle(titles, foldCase(term), caseKey); i >= 0 {
			return i, true
		}
	}
	if m == MatchRules {
		return 0, true
	}
	return -1, false
}

// indexTitle is the index of the first title whose key is want.
func indexTitle(titles []string, want string, key func(string) string) int {
	for i, t := range titles {
		if key(t) == want {
			return i
		}
	}
	return -1
}

// quotedTerm returns the text inside a pair of straight double quotes that encloses
// the whole of s and holds no other double quote, as MediaWiki's near match reads a
// search ("^\"([^\"]+)\"$").
func quotedTerm(s string) (string, bool) {
	if len(s) < 3 || s[0] != '"' || s[len(s)-1] != '"' || strings.Contains(s[1:len(s)-1], `"`) {
		return "", false
	}
	return s[1 : len(s)-1], true
}

// upperFirst upper-cases the first letter of s.
func upperFirst(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 || unicode.IsUpper(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

// TitleKey is a title as MediaWiki reads it: underscores are spaces, runs of white space
// are one space, and the ends are trimmed. Case and quotes are kept, so "Sun" and "SUN"
// are two titles, as on Wikipedia; an index keeps one page per TitleKey.
func TitleKey(s string) string { return foldTitle(s, false, false) }

// caseKey is TitleKey lower-cased: titles that differ only in letter case share it.
func caseKey(s string) string { return foldTitle(s, true, false) }

// foldCase lower-cases a TitleKey as caseKey does.
func foldCase(s string) string { return strings.Map(unicode.ToLower, s) }

// NormalizeTitle folds a page title or a searched entity to the key that backends look
// pages up by: underscores become spaces, runs of white space collapse to one space,
// quotes (' " ` and the typographic and angle quotes) are trimmed from both ends,
// repeatedly, as is white space, and the result is lower-cased. "Ada_Lovelace",
// " ada  lovelace " and “Ada Lovelace” all fold to "ada lovelace". Which of the pages
// that share a key a Search finds is Match.Pick's choice.
func NormalizeTitle(s string) string { return foldTitle(s, true, true) }

// CleanTitle is NormalizeTitle without the lower-casing: the title to ask a backend for
// that folds case itself (MediaWiki folds only the first letter), in rules mode.
func CleanTitle(s string) string { return foldTitle(s, false, true) }

// foldTitle reads underscores as spaces, collapses and trims white space, and with
// lower lower-cases and with quotes strips surrounding quotes: in one pass, since an
// index build folds every title of the corpus.
func foldTitle(s string, lower, quotes bool) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if r == '_' || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if lower {
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	out := b.String()
	for quotes {
		t := strings.TrimSpace(strings.TrimFunc(out, isQuote))
		if t == out {
			break
		}
		out = t
	}
	return out
}

// isQuote reports whether r is a quotation mark that NormalizeTitle trims.
func isQuote(r rune) bool {
	switch r {
	case '"', '\'', '`', '\u2018', '\u2019', '\u201A', '\u201B', '\u201C', '\u201D', '\u201E', '\u201F', '\u00AB', '\u00BB', '\u2039', '\u203A':
		return true
	}
	return false
}
