package export

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendString(t *testing.T) {
	tests := []string{
		"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\x00\x01\x1f ctl",
		"émoji 🚀 ünïcode", "bad \xff utf8 \xc3", "line\u2028sep\u2029", "<html>&amp;",
	}
	for _, s := range tests {
		b := appendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("appendString(%q) = %s: not valid JSON: %v", s, b, err)
			continue
		}
		want, _ := json.Marshal(s)
		var wantS string
		json.Unmarshal(want, &wantS)
		if got != wantS {
			t.Errorf("appendString(%q) decodes to %q, want %q", s, got, wantS)
		}
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestLineSchemas checks the keys and roles of every JSONL format.
func TestLineSchemas(t *testing.T) {
	ex, err := Render(smallEpisode(), ViewReAct, RenderOptions{System: "Be brief."})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		format   string
		o        lineOptions
		top      []string
		turns    string // the key of the turn list; empty for flat formats
		turnKeys func(turn map[string]any) []string
		roles    []string
	}{
		{
			format: "openai-chat", o: lineOptions{Weights: true}, top: []string{"messages"}, turns: "messages",
			turnKeys: func(m map[string]any) []string {
				if m["role"] == "assistant" {
					return []string{"content", "role", "weight"}
				}
				return []string{"content", "role"}
			},
			roles: []string{"system", "user", "assistant", "user", "assistant"},
		},
		{
			format: "openai-chat", top: []string{"messages"}, turns: "messages",
			turnKeys: func(map[string]any) []string { return []string{"content", "role"} },
			roles:    []string{"system", "user", "assistant", "user", "assistant"},
		},
		{
			format: "axolotl-chat", top: []string{"messages"}, turns: "messages",
			turnKeys: func(map[string]any) []string { return []string{"content", "role", "train"} },
			roles:    []string{"system", "user", "assistant", "user", "assistant"},
		},
		{format: "completion", o: lineOptions{System: "Be brief."}, top: []string{"completion", "prompt"}},
		{format: "alpaca", o: lineOptions{System: "Be brief."}, top: []string{"input", "instruction", "output", "system"}},
		{
			format: "sharegpt", top: []string{"conversations"}, turns: "conversations",
			turnKeys: func(map[string]any) []string { return []string{"from", "value"} },
			roles:    []string{"system", "human", "gpt", "human", "gpt"},
		},
		{
			format: "sharegpt", o: lineOptions{ObservationRole: true}, top: []string{"conversations"}, turns: "conversations",
			turnKeys: func(map[string]any) []string { return []string{"from", "value"} },
			roles:    []string{"system", "human", "gpt", "observation", "gpt"},
		},
		{
			format: "agentgym", top: []string{"conversations", "item_id"}, turns: "conversations",
			turnKeys: func(map[string]any) []string { return []string{"from", "loss", "value"} },
			roles:    []string{"human", "gpt", "human", "gpt"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			line := jsonlFormats[tt.format](nil, &ex, tt.o)
			if tt.format == "completion" || tt.format == "alpaca" { // a row per step: the first
				line, _, _ = bytes.Cut(line, []byte("\n"))
			}
			var row map[string]any
			if err := json.Unmarshal(line, &row); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if got := keys(row); !slices.Equal(got, tt.top) {
				t.Errorf("keys: got %v, want %v", got, tt.top)
			}
			if tt.turns == "" {
				return
			}
			turns, _ := row[tt.turns].([]any)
			var roles []string
			for i, x := range turns {
				turn := x.(map[string]any)
				if got, want := keys(turn), tt.turnKeys(turn); !slices.Equal(got, want) {
					t.Errorf("turn %d keys: got %v, want %v", i, got, want)
				}
				role, _ := turn["role"].(string)
				if role == "" {
					role, _ = turn["from"].(string)
				}
				roles = append(roles, role)
				if w, ok := turn["weight"]; ok && w != 1.0 {
					t.Errorf("turn %d weight: got %v, want 1", i, w)
				}
				if tr, ok := turn["train"]; ok && tr != (role == "assistant") {
					t.Errorf("turn %d (%s) train: got %v", i, role, tr)
				}
				if l, ok := turn["loss"]; ok {
					if role == "gpt" && l != true {
						t.Errorf("turn %d gpt loss: got %v, want true", i, l)
					}
					if role == "human" && l != nil {
						t.Errorf("turn %d human loss: got %v, want null", i, l)
					}
				}
			}
			if !slices.Equal(roles, tt.roles) {
				t.Errorf("roles: got %v, want %v", roles, tt.roles)
			}
		})
	}
}

func TestAgentGymFoldsSystem(t *testing.T) {
	ex, err := Render(smallEpisode(), ViewReAct, RenderOptions{System: "Be brief."})
	if err != nil {
		t.Fatal(err)
	}
	var row struct {
		Conversations []struct{ Value string } `json:"conversations"`
		ItemID        string                   `json:"item_id"`
	}
	if err := json.Unmarshal(agentGymLine(nil, &ex, lineOptions{}), &row); err != nil {
		t.Fatal(err)
	}
	if got, want := row.Conversations[0].Value, "Be brief.\n\nQuestion: Where was the lantern museum built?"; got != want {
		t.Errorf("first turn: got %q, want %q", got, want)
	}
	if got, want := row.ItemID, "hotpotqa_ep1"; got != want {
		t.Errorf("item_id: got %q, want %q", got, want)
	}
}

// appendStringByBytes is appendString without the table skip, as it was.
func appendStringByBytes(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// TestAppendStringSkipsPlainText: the table skip writes what the byte loop writes, for
// every byte value at several offsets.
func TestAppendStringSkipsPlainText(t *testing.T) {
	specials := []string{"\x00", "\x1f", " ", "!", "\"", "#", "[", "\\", "]", "~", "\x7f", "\x80", "\xff", "é", "\u2028", "🚀", "\xc3"}
	for _, sp := range specials {
		for pre := range 17 {
			for post := range 10 {
				s := strings.Repeat("abcdefgh"[:1], pre) + sp + strings.Repeat("xyz", post)
				if got, want := appendString(nil, s), appendStringByBytes(nil, s); string(got) != string(want) {
					t.Fatalf("%q: %s, want %s", s, got, want)
				}
			}
		}
	}
	for c := range 256 {
		s := strings.Repeat(string(rune('a'+c%26)), 7) + string([]byte{byte(c)}) + "tail of text"
		if got, want := appendString(nil, s), appendStringByBytes(nil, s); string(got) != string(want) {
			t.Fatalf("byte %#x: %s, want %s", c, got, want)
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat("Thought: I need to search the river and find where it flows. ", 20) + "\"Quoted\"\n"
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = appendString(buf[:0], s)
	}
}
