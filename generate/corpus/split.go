package corpus

import "strings"

// defaultSplit is a stand-in sentence splitter until generate/sentence lands: it breaks
// after ". ", "! " or "? " followed by an upper-case letter or digit.
func defaultSplit(text string) []string {
	var out []string
	start := 0
	for i := 0; i+2 < len(text); i++ {
		c := text[i]
		if (c == '.' || c == '!' || c == '?') && text[i+1] == ' ' {
			n := text[i+2]
			if (n >= 'A' && n <= 'Z') || (n >= '0' && n <= '9') || n == '"' {
				out = append(out, strings.TrimSpace(text[start:i+1]))
				start = i + 2
			}
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}
