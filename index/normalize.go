package index

import (
	"strings"

	"github.com/reactgen/reactgen/env"
)

// NormalizeTitle folds a page title or a Search argument to the key that Page looks pages
// up by: case-folded, underscores read as spaces, whitespace collapsed and trimmed, and
// surrounding quotes (' " and typographic quotes) removed. Which of the pages that share
// a key a Search finds is env.Match.Pick's choice. It is env.NormalizeTitle, so that
// every backend agrees.
func NormalizeTitle(s string) string { return env.NormalizeTitle(s) }

// isDisambiguation reports whether a page is a disambiguation page: its title says so
// or its first sentence ends with "may refer to:".
func isDisambiguation(title string, sentences []string) bool {
	if strings.HasSuffix(strings.ToLower(strings.TrimSpace(title)), env.DisambiguationSuffix) {
		return true
	}
	if len(sentences) == 0 {
		return false
	}
	first := strings.ToLower(strings.TrimSpace(sentences[0]))
	return strings.HasSuffix(first, "may refer to:") || strings.HasSuffix(first, "may refer to")
}
