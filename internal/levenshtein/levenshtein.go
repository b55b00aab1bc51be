// Package levenshtein measures how far apart two names are, so that a mistyped config
// key, rule, format or counter name can be answered with the nearest valid one. It
// consumes strings and produces edit distances; it keeps no state.
package levenshtein

// Distance is the Levenshtein edit distance between a and b: the fewest single-rune
// insertions, deletions and substitutions that turn one into the other. It counts runes,
// not bytes, so "é" against "e" is one edit.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Nearest returns the candidate with the smallest Distance to s, the first of them on a
// tie, and that distance. With no candidates it returns "" and -1.
func Nearest(s string, candidates []string) (string, int) {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := Distance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best, bestD
}
