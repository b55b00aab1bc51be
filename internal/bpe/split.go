package bpe

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// o200k_base splits text with a regular expression before merging bytes; the
// library runs it with a backtracking engine, which is most of the cost of a count.
// For ASCII text, which is most of what reactgen counts, splitASCII finds the same
// pieces by hand, and each distinct piece is counted once and remembered. The
// expression, alternative by alternative (Lu/Ll: upper/lower case letters; in ASCII no
// letter is both, and there are no other letter classes or marks):
//
//	1. [^\r\n\p{L}\p{N}]? [\p{Lu}...]* [\p{Ll}...]+ (?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	2. [^\r\n\p{L}\p{N}]? [\p{Lu}...]+ [\p{Ll}...]* (?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	3. \p{N}{1,3}
//	4. ' '? [^\s\p{L}\p{N}]+ [\r\n/]*
//	5. \s* [\r\n]+
//	6. \s+ (?!\S)
//	7. \s+
//
// TestSplitASCIIMatchesTheLibrary holds it to the library on the reference texts, the
// demo corpus and random strings.

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
func isCRLF(c byte) bool { return c == '\r' || c == '\n' }

// isOther is [^\s\p{L}\p{N}] in ASCII.
func isOther(c byte) bool { return !isSpace(c) && !isUpper(c) && !isLower(c) && !isDigit(c) }

// isASCII reports whether s has no byte of 0x80 or above, eight bytes at a time.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// contraction returns the length of a contraction ('s, 't, 're, 've, 'm, 'll, 'd, any
// case) at s[i:], or 0.
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' || i+1 >= len(s) {
		return 0
	}
	lower := func(c byte) byte { return c | 0x20 }
	switch lower(s[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	}
	if i+2 < len(s) {
		switch a, b := lower(s[i+1]), lower(s[i+2]); {
		case a == 'r' && b == 'e', a == 'v' && b == 'e', a == 'l' && b == 'l':
			return 3
		}
	}
	return 0
}

// letters matches alternatives 1 and 2 from j (after the optional prefix): the end of the
// match, or -1.
func letters(s string, j int) int {
	u := j
	for u < len(s) && isUpper(s[u]) {
		u++
	}
	l := u
	for l < len(s) && isLower(s[l]) {
		l++
	}
	if l > u || u > j { // 1: upper* lower+, or 2: upper+ lower*
		return l + contraction(s, l)
	}
	return -1
}

// splitASCII calls piece with each piece of o200k_base's split of an ASCII string.
func splitASCII(s string, piece func(string)) {
	for i := 0; i < len(s); {
		c := s[i]
		end := -1
		// Alternatives 1 and 2, with the optional prefix and then without it.
		if !isCRLF(c) && !isUpper(c) && !isLower(c) && !isDigit(c) {
			end = letters(s, i+1)
		}
		if end < 0 && (isUpper(c) || isLower(c)) {
			end = letters(s, i)
		}
		if end < 0 && isDigit(c) { // 3
			end = i + 1
			for end < len(s) && end < i+3 && isDigit(s[end]) {
				end++
			}
		}
		if end < 0 { // 4
			j := i
			if c == ' ' && j+1 < len(s) && isOther(s[j+1]) {
				j++
			}
			if isOther(s[j]) {
				for j < len(s) && isOther(s[j]) {
					j++
				}
				for j < len(s) && (isCRLF(s[j]) || s[j] == '/') {
					j++
				}
				end = j
			}
		}
		if end < 0 && isSpace(c) {
			w := i
			for w < len(s) && isSpace(s[w]) {
				w++
			}
			last := -1 // 5: up to the last CR or LF of the run
			for k := w - 1; k >= i; k-- {
				if isCRLF(s[k]) {
					last = k
					break
				}
			}
			switch {
			case last >= 0:
				end = last + 1
			case w == len(s) || w-i == 1: // 6 at the end, else 7 for a single space
				end = w
			default: // 6: all but the last, which stays with what follows
				end = w - 1
			}
		}
		if end <= i {
			end = i + 1 // not reached for ASCII; never loop
		}
		piece(s[i:end])
		i = end
	}
}

// pieceCache remembers the token count of each piece, up to a bound.
type pieceCache struct {
	mu     sync.Mutex
	counts map[string]int
}

const pieceCacheLimit = 1 << 18

// count counts the tokens of an ASCII string by its pieces (splitASCII), looking each
// up in the cache and counting the ones it misses with codec. The lock is taken once
// for the string, not once per piece (twice per piece cost the export a fifth of its
// token counting), and let go while codec counts a piece the cache misses.
func (c *pieceCache) count(s string, codec tokenizer.Codec) int {
	n := 0
	c.mu.Lock()
	splitASCII(s, func(p string) {
		k, ok := c.counts[p]
		if !ok {
			c.mu.Unlock()
			k, _ = codec.Count(p)
			c.mu.Lock()
			c.put(p, k)
		}
		n += k
	})
	c.mu.Unlock()
	return n
}

// put remembers p's count; c.mu is held.
func (c *pieceCache) put(p string, n int) {
	if c.counts == nil || len(c.counts) >= pieceCacheLimit {
		c.counts = make(map[string]int, 1024)
	}
	c.counts[p] = n
}
