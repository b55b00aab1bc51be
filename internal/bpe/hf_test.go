package bpe

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// cl100kPattern is the split of cl100k_base (as OpenAI's tiktoken publishes it, without
// possessive quantifiers), which a converted tokenizer.json carries as a Split.
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// hfFromTiktoken writes cl100k_base as a Hugging Face tokenizer.json: the byte-level
// vocabulary, and as merges every split of each token into two tokens that exist, ordered
// by the rank of the merged token (the conversion transformers uses for tiktoken models).
// Counting with it exercises LoadHF's merge-based BPE against the rank-based one.
func hfFromTiktoken(t *testing.T) []byte {
	t.Helper()
	c, err := Open("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	tk := c.(*tiktoken)
	rank := map[string]int{}
	var byRank []string
	for id := 0; id < 100256; id++ {
		s, err := tk.codec.Decode([]uint{uint(id)})
		if err != nil {
			t.Fatalf("decode %d: %v", id, err)
		}
		rank[s] = id
		byRank = append(byRank, s)
	}
	toChars := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			b.WriteRune(byteChars[s[i]])
		}
		return b.String()
	}
	vocab := make(map[string]int, len(rank))
	for s, r := range rank {
		vocab[toChars(s)] = r
	}
	type merge struct {
		l, r       string
		at, l_, r_ int
	}
	var merges []merge
	for r, s := range byRank {
		if len(s) < 2 {
			continue
		}
		for i := 1; i < len(s); i++ {
			lr, lok := rank[s[:i]]
			rr, rok := rank[s[i:]]
			if lok && rok {
				merges = append(merges, merge{toChars(s[:i]), toChars(s[i:]), r, lr, rr})
			}
		}
	}
	sort.SliceStable(merges, func(i, j int) bool {
		a, b := merges[i], merges[j]
		if a.at != b.at {
			return a.at < b.at
		}
		if a.l_ != b.l_ {
			return a.l_ < b.l_
		}
		return a.r_ < b.r_
	})
	pairs := make([][2]string, len(merges))
	for i, m := range merges {
		pairs[i] = [2]string{m.l, m.r}
	}
	doc := map[string]any{
		"added_tokens": []map[string]any{{"id": 100257, "content": "<|endoftext|>", "special": true}},
		"normalizer":   nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": cl100kPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": pairs, "ignore_merges": false, "byte_fallback": false},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestHFByteLevelMatchesTiktoken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100k-token tokenizer.json")
	}
	hf, err := LoadHF(bytes.NewReader(hfFromTiktoken(t)))
	if err != nil {
		t.Fatal(err)
	}
	want := referenceCounts(t)
	for file, text := range referenceTexts(t) {
		if got := hf.Count(text); got != want[file]["cl100k_base"] {
			t.Errorf("%s: tokenizer.json counts %d, cl100k_base %d", file, got, want[file]["cl100k_base"])
		}
	}
	if got := hf.Count("a<|endoftext|>b"); got != 3 {
		t.Errorf("added token: got %d tokens, want 3 (a, <|endoftext|>, b)", got)
	}
}

// A SentencePiece-style tokenizer.json (Llama 2's layout: Prepend and Replace normalizers,
// no pre-tokenizer, byte fallback), small enough to count by hand.
const spTokenizer = `{
  "added_tokens": [{"id": 0, "content": "<s>", "special": true}],
  "normalizer": {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "▁"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,
  "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
    "vocab": {"<unk>": 1, "▁": 2, "t": 3, "h": 4, "e": 5, "a": 6, "▁t": 7, "he": 8, "▁the": 9, "c": 10, "▁c": 11, "at": 12, "▁cat": 13, "<0xC3>": 14, "<0xA9>": 15},
    "merges": ["h e", "▁ t", "▁t he", "a t", "▁ c", "▁c at"]}
}`

func TestHFSentencePiece(t *testing.T) {
	hf, err := LoadHF(strings.NewReader(spTokenizer))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		want int
	}{
		{"the cat", 2}, // ▁the ▁cat
		{"the hat", 4}, // ▁the ▁ h at
		{"cat é", 4},   // ▁cat ▁ <0xC3> <0xA9>
		{"<s>the", 2},  // <s> ▁the
		{"", 0},
	}
	for _, tt := range tests {
		if got := hf.Count(tt.in); got != tt.want {
			t.Errorf("Count(%q): got %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestLoadHFRejects(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`{"model": {"type": "WordPiece", "vocab": {"a": 0}}}`, "only BPE"},
		{`{"model": {"type": "BPE", "vocab": {"a": 0}, "dropout": 0.1}}`, "dropout"},
		{`{"model": {"type": "BPE", "vocab": {"a": 0}}, "pre_tokenizer": {"type": "Whitespace"}}`, `pre_tokenizer: "Whitespace"`},
		{`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}}`, "model.merges[0]"},
		{`{"model": `, "decode tokenizer.json"},
	}
	for _, tt := range tests {
		_, err := LoadHF(strings.NewReader(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadHF(%s): got %v, want an error containing %q", tt.doc, err, tt.want)
		}
	}
}
