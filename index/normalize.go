package index

import (
	"strings"

	"github.com/reactgen/reactgen/env"
)

// NormalizeTitle folds a page title or a Search argument to the key that Page matches
// on: case-folded, underscores read as spaces, whitespace collapsed and trimmed, and
// surrounding quotes (' " and typographic quotes) removed. The agent writes
// Search[“Love the Way You Lie”] or Search[love_the_way_you_lie]; both find the page.
// It is env.NormalizeTitle, so that every backend agrees on which page a Search finds.
func NormalizeTitle(s string) string { return env.NormalizeTitle(s) }

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
