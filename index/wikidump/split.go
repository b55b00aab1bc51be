package wikidump

import "github.com/reactgen/reactgen/internal/sentence"

// defaultSplit is the project's sentence splitter, used for sources that give plain text.
func defaultSplit(text string) []string { return sentence.Split(text) }
