package index

import (
	"strings"
	"unicode"
)

// maxQueryTerms bounds the OR of one Similar query; an agent pasting a paragraph into
// Search should not cost a scan of every posting list.
const maxQueryTerms = 12

// queryTerms splits user text into the tokens FTS5's unicode61 tokenizer would make
// (runs of letters, digits and private-use characters, lower-cased), so that quoting each
// one can never produce a syntax error or a phrase: quotes, AND/OR/NOT, *, -, :, ( and
// emoji become separators or plain words. Stop words are dropped unless nothing else
// is left, because their posting lists are long and they rank nothing.
func queryTerms(q string) []string {
	var all []string
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(q, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Co, r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.No, r))
	}) {
		f = strings.ToLower(f)
		if seen[f] {
			continue
		}
		seen[f] = true
		all = append(all, f)
	}
	var content []string
	for _, t := range all {
		if !stopWords[t] {
			content = append(content, t)
		}
	}
	if len(content) == 0 {
		content = all
	}
	if len(content) > maxQueryTerms {
		content = content[:maxQueryTerms]
	}
	return content
}

// matchExpr ORs the terms, each a quoted string.
func matchExpr(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String()
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be by for from has he her his in is it its
		of on or she that the their they this to was were which who with`) {
		m[w] = true
	}
	return m
}()
