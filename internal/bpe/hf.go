package bpe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// HF counts tokens with a Hugging Face tokenizer.json whose model is BPE: the byte-level
// kind of GPT-2, Llama 3, Qwen 2 and 3, Mistral Nemo and DeepSeek (a ByteLevel
// pre-tokenizer, optionally after Split regexes), and the SentencePiece kind of Llama 2
// and Mistral 7B (a Metaspace pre-tokenizer or Prepend/Replace normalizers, with byte
// fallback). It counts what the model sees of a text: added tokens that appear in the
// text count one each, and no BOS or EOS is added (a chat template adds those).
type HF struct {
	name       string
	added      []string // added tokens' contents, longest first
	normalize  []func(string) string
	pre        []preStep
	byteLevel  bool // pieces are mapped byte by byte to GPT-2's printable alphabet
	vocab      map[string]int
	merges     map[string]int // "left\x00right" -> rank
	ignore     bool           // ignore_merges: a piece that is in the vocabulary is one token
	fallback   bool           // byte_fallback: an unknown symbol is one <0xXX> token per byte
	unk        bool           // an unknown symbol becomes one unk token (else it is dropped)
	cacheMu    sync.Mutex
	cache      map[string]int
	cacheLimit int
}

// preStep splits each piece into smaller pieces.
type preStep func(piece string) ([]string, error)

// Name implements Counter.
func (h *HF) Name() string { return h.name }

type hfFile struct {
	AddedTokens []struct {
		Content string `json:"content"`
	} `json:"added_tokens"`
	Normalizer   *hfComponent `json:"normalizer"`
	PreTokenizer *hfComponent `json:"pre_tokenizer"`
	Model        struct {
		Type           string          `json:"type"`
		Vocab          map[string]int  `json:"vocab"`
		Merges         json.RawMessage `json:"merges"`
		ByteFallback   bool            `json:"byte_fallback"`
		IgnoreMerges   bool            `json:"ignore_merges"`
		UnkToken       *string         `json:"unk_token"`
		ContinuingPref *string         `json:"continuing_subword_prefix"`
		EndOfWord      *string         `json:"end_of_word_suffix"`
		Dropout        *float64        `json:"dropout"`
	} `json:"model"`
}

// hfComponent is a normalizer or pre-tokenizer; which fields mean something depends on Type.
type hfComponent struct {
	Type          string        `json:"type"`
	Normalizers   []hfComponent `json:"normalizers"`
	Pretokenizers []hfComponent `json:"pretokenizers"`
	Pattern       *struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	Content        string `json:"content"`
	Prepend        string `json:"prepend"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
	Replacement    string `json:"replacement"`
	PrependScheme  string `json:"prepend_scheme"`
	Split          *bool  `json:"split"`
}

// gpt2Pattern is the split of GPT-2's ByteLevel pre-tokenizer when use_regex is on.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// LoadHF reads a tokenizer.json. It fails, naming the part, on anything it cannot count
// exactly: a model other than BPE, dropout, subword prefixes, or a normalizer or
// pre-tokenizer it does not implement.
func LoadHF(r io.Reader) (*HF, error) {
	var f hfFile
	if err := json.NewDecoder(r).Decode(&f); err != nil {
		return nil, fmt.Errorf("decode tokenizer.json: %w", err)
	}
	m := f.Model
	if m.Type != "BPE" {
		return nil, fmt.Errorf("model type %q: only BPE tokenizers are supported", m.Type)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, errors.New("model.dropout is set: counts would be random")
	}
	if m.ContinuingPref != nil && *m.ContinuingPref != "" || m.EndOfWord != nil && *m.EndOfWord != "" {
		return nil, errors.New("model.continuing_subword_prefix / end_of_word_suffix are not supported")
	}
	if len(m.Vocab) == 0 {
		return nil, errors.New("model.vocab is empty")
	}
	h := &HF{vocab: m.Vocab, ignore: m.IgnoreMerges, fallback: m.ByteFallback, unk: m.UnkToken != nil,
		cache: map[string]int{}, cacheLimit: 1 << 17}
	merges, err := decodeMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	h.merges = make(map[string]int, len(merges))
	for i, p := range merges {
		k := p[0] + "\x00" + p[1]
		if _, dup := h.merges[k]; !dup {
			h.merges[k] = i
		}
	}
	for _, a := range f.AddedTokens {
		if a.Content != "" {
			h.added = append(h.added, a.Content)
		}
	}
	// Longest first, so that an added token never matches inside a longer one.
	for i := 1; i < len(h.added); i++ {
		for j := i; j > 0 && len(h.added[j]) > len(h.added[j-1]); j-- {
			h.added[j], h.added[j-1] = h.added[j-1], h.added[j]
		}
	}
	if f.Normalizer != nil {
		if err := h.addNormalizer(*f.Normalizer); err != nil {
			return nil, fmt.Errorf("normalizer: %w", err)
		}
	}
	if f.PreTokenizer != nil {
		if err := h.addPre(*f.PreTokenizer); err != nil {
			return nil, fmt.Errorf("pre_tokenizer: %w", err)
		}
	}
	return h, nil
}

// decodeMerges reads model.merges in either of its forms: ["a b", ...] (older files) or
// [["a", "b"], ...] (newer ones, which allow spaces inside tokens).
func decodeMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, len(strs))
		for i, s := range strs {
			l, r, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("model.merges[%d] %q: want two tokens separated by a space", i, s)
			}
			out[i] = [2]string{l, r}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("model.merges: want a list of \"a b\" strings or of [a, b] pairs: %w", err)
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("model.merges[%d]: want two tokens, got %d", i, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

func (h *HF) addNormalizer(c hfComponent) error {
	switch c.Type {
	case "Sequence":
		for _, n := range c.Normalizers {
			if err := h.addNormalizer(n); err != nil {
				return err
			}
		}
	case "NFC":
		h.normalize = append(h.normalize, norm.NFC.String)
	case "NFKC":
		h.normalize = append(h.normalize, norm.NFKC.String)
	case "NFD":
		h.normalize = append(h.normalize, norm.NFD.String)
	case "NFKD":
		h.normalize = append(h.normalize, norm.NFKD.String)
	case "Lowercase":
		h.normalize = append(h.normalize, strings.ToLower)
	case "Prepend":
		p := c.Prepend
		h.normalize = append(h.normalize, func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		})
	case "Replace":
		if c.Pattern == nil || c.Pattern.String == nil {
			return fmt.Errorf("%s with a regex pattern is not supported", c.Type)
		}
		from, to := *c.Pattern.String, c.Content
		h.normalize = append(h.normalize, func(s string) string { return strings.ReplaceAll(s, from, to) })
	default:
		return fmt.Errorf("%q is not supported", c.Type)
	}
	return nil
}

func (h *HF) addPre(c hfComponent) error {
	switch c.Type {
	case "Sequence":
		for _, p := range c.Pretokenizers {
			if err := h.addPre(p); err != nil {
				return err
			}
		}
	case "Split":
		step, err := splitPre(c)
		if err != nil {
			return err
		}
		h.pre = append(h.pre, step)
	case "ByteLevel":
		if c.AddPrefixSpace {
			h.pre = append(h.pre, func(p string) ([]string, error) {
				if !strings.HasPrefix(p, " ") {
					p = " " + p
				}
				return []string{p}, nil
			})
		}
		if c.UseRegex == nil || *c.UseRegex {
			h.pre = append(h.pre, regexSplit(regexp2.MustCompile(gpt2Pattern, regexp2.None), false))
		}
		h.byteLevel = true
	case "Metaspace":
		h.pre = append(h.pre, metaspacePre(c))
	default:
		return fmt.Errorf("%q is not supported", c.Type)
	}
	return nil
}

// splitPre is the Split pre-tokenizer: a regex or a literal pattern whose matches are
// isolated or removed.
func splitPre(c hfComponent) (preStep, error) {
	if c.Invert {
		return nil, fmt.Errorf("%s with invert is not supported", c.Type)
	}
	if c.Pattern == nil || (c.Pattern.Regex == nil && c.Pattern.String == nil) {
		return nil, fmt.Errorf("%s has no pattern", c.Type)
	}
	pat := ""
	if c.Pattern.Regex != nil {
		pat = *c.Pattern.Regex
	} else {
		pat = regexp2.Escape(*c.Pattern.String)
	}
	re, err := regexp2.Compile(pat, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("%s pattern %q: %w", c.Type, pat, err)
	}
	switch c.Behavior {
	case "Isolated", "Removed":
	default:
		return nil, fmt.Errorf("%s behavior %q is not supported (Isolated, Removed)", c.Type, c.Behavior)
	}
	return regexSplit(re, c.Behavior == "Removed"), nil
}

// metaspacePre is the Metaspace pre-tokenizer: spaces become the replacement character,
// which starts each piece.
func metaspacePre(c hfComponent) preStep {
	rep := c.Replacement
	if rep == "" {
		rep = "▁"
	}
	// "first" prepends only at the start of the whole input; a count sees text
	// between added tokens, so it is treated as "always", the difference being at most
	// one token after each added token.
	prepend := c.PrependScheme != "never"
	split := c.Split == nil || *c.Split
	return func(p string) ([]string, error) {
		p = strings.ReplaceAll(p, " ", rep)
		if prepend && !strings.HasPrefix(p, rep) {
			p = rep + p
		}
		if !split {
			return []string{p}, nil
		}
		// Split before each replacement character, which stays with the word after it.
		var out []string
		start := 0
		for i := len(rep); i <= len(p)-len(rep); {
			if strings.HasPrefix(p[i:], rep) {
				if i > start {
					out = append(out, p[start:i])
				}
				start = i
				i += len(rep)
				continue
			}
			_, sz := utf8.DecodeRuneInString(p[i:])
			i += sz
		}
		return append(out, p[start:]), nil
	}
}

// regexSplit isolates every match of re as a piece of its own, keeping the text between
// matches as pieces too (or dropping the matches, with removed).
func regexSplit(re *regexp2.Regexp, removed bool) preStep {
	return func(p string) ([]string, error) {
		var out []string
		last := 0
		m, err := re.FindStringMatch(p)
		for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
			i, n := m.ByteRange()
			if i > last {
				out = append(out, p[last:i])
			}
			if !removed && n > 0 {
				out = append(out, p[i:i+n])
			}
			last = i + n
		}
		if err != nil {
			return nil, err
		}
		if last < len(p) {
			out = append(out, p[last:])
		}
		return out, nil
	}
}

// byteChars is GPT-2's map from bytes to printable runes: the printable Latin-1 bytes map
// to themselves, the others to U+0100 upwards in byte order.
var byteChars = func() [256]rune {
	var t [256]rune
	n := 0
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			t[b] = rune(b)
		} else {
			t[b] = rune(256 + n)
			n++
		}
	}
	return t
}()

// Count implements Counter.
func (h *HF) Count(s string) int {
	n := 0
	for len(s) > 0 {
		i, tok := h.nextAdded(s)
		if i < 0 {
			n += h.countText(s)
			break
		}
		n += h.countText(s[:i]) + 1
		s = s[i+len(tok):]
	}
	return n
}

// nextAdded finds the first added token in s.
func (h *HF) nextAdded(s string) (int, string) {
	best, tok := -1, ""
	for _, a := range h.added {
		if i := strings.Index(s, a); i >= 0 && (best < 0 || i < best) {
			best, tok = i, a
		}
	}
	return best, tok
}

func (h *HF) countText(s string) int {
	if s == "" {
		return 0
	}
	for _, f := range h.normalize {
		s = f(s)
	}
	pieces := []string{s}
	for _, step := range h.pre {
		var next []string
		for _, p := range pieces {
			out, err := step(p)
			if err != nil {
				// A regex that times out or fails cannot be counted exactly; count the
				// piece's bytes, the upper bound of any byte-level BPE.
				next = append(next, p)
				continue
			}
			next = append(next, out...)
		}
		pieces = next
	}
	n := 0
	for _, p := range pieces {
		n += h.countPiece(p)
	}
	return n
}

func (h *HF) countPiece(p string) int {
	if p == "" {
		return 0
	}
	h.cacheMu.Lock()
	n, ok := h.cache[p]
	h.cacheMu.Unlock()
	if ok {
		return n
	}
	n = h.bpe(p)
	h.cacheMu.Lock()
	if len(h.cache) >= h.cacheLimit {
		clear(h.cache)
	}
	h.cache[p] = n
	h.cacheMu.Unlock()
	return n
}

// bpe merges the symbols of one piece by merge rank and returns how many tokens remain.
func (h *HF) bpe(p string) int {
	if h.byteLevel {
		var b strings.Builder
		for i := 0; i < len(p); i++ {
			b.WriteRune(byteChars[p[i]])
		}
		p = b.String()
	}
	if h.ignore {
		if _, ok := h.vocab[p]; ok {
			return 1
		}
	}
	syms := make([]string, 0, len(p))
	for _, r := range p {
		syms = append(syms, string(r))
	}
	for len(syms) > 1 {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := h.merges[syms[i]+"\x00"+syms[i+1]]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		// Merge every occurrence of the best pair, left to right, as the reference does.
		l, r := syms[at], syms[at+1]
		out := syms[:0]
		for i := 0; i < len(syms); i++ {
			if i+1 < len(syms) && syms[i] == l && syms[i+1] == r {
				out = append(out, l+r)
				i++
				continue
			}
			out = append(out, syms[i])
		}
		syms = out
	}
	n := 0
	for _, s := range syms {
		switch _, ok := h.vocab[s]; {
		case ok:
			n++
		case h.fallback:
			n += len(s) // one <0xXX> token per byte
		case h.unk:
			n++
		}
	}
	return n
}
