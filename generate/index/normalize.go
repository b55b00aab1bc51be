package index

import (
	"strings"
	"unicode"
)

// NormalizeTitle folds a page title or a Search argument to the key that Page matches
// on: case-folded, underscores read as spaces, whitespace collapsed and trimmed, and
// surrounding quotes (' " and typographic quotes) removed. The agent writes
// Search[“Love the Way You Lie”] or Search[love_the_way_you_lie]; both find the page.
func NormalizeTitle(s string) string {
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
		b.WriteRune(unicode.ToLower(r))
	}
	out := b.String()
	for {
		t := strings.TrimFunc(out, isQuote)
		t = strings.TrimSpace(t)
		if t == out {
			return out
		}
		out = t
	}
}

func isQuote(r rune) bool {
	switch r {
	case '"', '\'', '`', '\u2018', '\u2019', '\u201A', '\u201B', '\u201C', '\u201D', '\u201E', '\u201F', '\u00AB', '\u00BB', '\u2039', '\u203A':
		return true
	}
	return false
}

// disambiguationSuffix is how Wikipedia titles its disambiguation pages.
const disambiguationSuffix = "(disambiguation)"

// isDisambiguation reports whether a page is a disambiguation page: its title says so
// or its first sentence ends with "may refer to:".
func isDisambiguation(title string, sentences []string) bool {
	if strings.HasSuffix(strings.ToLower(strings.TrimSpace(title)), disambiguationSuffix) {
		return true
	}
	if len(sentences) == 0 {
		return false
	}
	first := strings.ToLower(strings.TrimSpace(sentences[0]))
	return strings.HasSuffix(first, "may refer to:") || strings.HasSuffix(first, "may refer to")
}
