// Package bpe counts tokens the way a model's tokenizer does: OpenAI's o200k_base and
// cl100k_base byte-pair encodings, embedded in the binary (github.com/tiktoken-go/tokenizer
// compiles the vocabularies in; nothing is downloaded at run time), or a model's own
// Hugging Face tokenizer.json. It consumes text and produces token counts; the filter's
// max_tokens rule, the export's max_tokens limit and the dataset card all count with it.
package bpe

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/tiktoken-go/tokenizer"
)

// Counter counts the tokens of a text. Count is safe for concurrent use and never returns a
// negative number.
type Counter interface {
	Count(s string) int
	// Name says which tokenizer counts: o200k_base, cl100k_base or the tokenizer.json path.
	Name() string
}

// Default is the tokenizer used when none is configured: o200k_base, the encoding of
// OpenAI's current models.
const Default = "o200k_base"

// Names are the embedded encodings Open accepts by name.
var Names = []string{"o200k_base", "cl100k_base"}

// tiktoken is an embedded OpenAI encoding.
type tiktoken struct {
	name  string
	codec tokenizer.Codec
	fast  bool // o200k_base: ASCII text is split by splitASCII and pieces are cached
	cache pieceCache
}

func (t *tiktoken) Name() string { return t.name }

// Count implements Counter. The codec's Count fails only on invalid UTF-8 in its strict
// mode, which is not the mode used here, so an error cannot happen.
func (t *tiktoken) Count(s string) int {
	if t.fast && isASCII(s) {
		return t.cache.count(s, t.codec)
	}
	n, _ := t.codec.Count(s)
	return n
}

var (
	mu     sync.Mutex
	opened = map[string]Counter{}
)

// Open returns the counter a config names: "o200k_base" or "cl100k_base" (also "o200k",
// "cl100k"), or the path of a Hugging Face tokenizer.json. "" means Default. Counters are
// built once per process and shared: building one costs a vocabulary's worth of memory.
func Open(name string) (Counter, error) {
	if name == "" {
		name = Default
	}
	mu.Lock()
	defer mu.Unlock()
	if c, ok := opened[name]; ok {
		return c, nil
	}
	var c Counter
	switch name {
	case "o200k_base", "o200k":
		codec, err := tokenizer.Get(tokenizer.O200kBase)
		if err != nil {
			return nil, fmt.Errorf("tokenizer o200k_base: %w", err)
		}
		c = &tiktoken{name: "o200k_base", codec: codec, fast: true}
	case "cl100k_base", "cl100k":
		codec, err := tokenizer.Get(tokenizer.Cl100kBase)
		if err != nil {
			return nil, fmt.Errorf("tokenizer cl100k_base: %w", err)
		}
		c = &tiktoken{name: "cl100k_base", codec: codec}
	default:
		if !LooksLikePath(name) {
			return nil, fmt.Errorf("tokenizer %q: not one of %s, nor the path of a tokenizer.json", name, strings.Join(Names, ", "))
		}
		f, err := safefile.Open(name)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		defer f.Close()
		// The largest tokenizer.json files (Gemma's) are about 35 MB.
		const maxTokenizerBytes = 512 << 20
		if st, err := f.Stat(); err == nil && st.Size() > maxTokenizerBytes {
			return nil, &safefile.TooLargeError{What: "tokenizer " + name, Limit: maxTokenizerBytes}
		}
		hf, err := LoadHF(io.LimitReader(f, maxTokenizerBytes))
		if err != nil {
			return nil, fmt.Errorf("tokenizer %s: %w", name, err)
		}
		hf.name = name
		c = hf
	}
	opened[name] = c
	return c, nil
}

// LooksLikePath reports whether a tokenizer name is a file path rather than an encoding
// name: it ends in .json or holds a path separator. Config loading resolves such values
// relative to the config file.
func LooksLikePath(name string) bool {
	return strings.HasSuffix(name, ".json") || strings.ContainsAny(name, `/\`)
}
