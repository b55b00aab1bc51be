package export

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
)

// encodeLine is what jsonlEncoder writes for ex in format, without the last newline (the
// rows are newline-separated when a format makes several).
func encodeLine(t testing.TB, format string, ex *Example, o lineOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	e, err := newJSONLEncoder(&buf, "none", jsonlFormats[format], rowAppenders[format], o)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.write(ex); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// TestLinesMatchEncodingJSON: every format's line is the bytes encoding/json writes for
// the same row without HTML escaping, strings that need escaping (invalid UTF-8, control
// characters, U+2028, HTML) included.
func TestLinesMatchEncodingJSON(t *testing.T) {
	tricky := []string{`quote " and \ backslash`, "tab\tnew\nline\rcr", "\x00\x01\x1f\x7f ctl",
		"émoji 🚀 ünïcode", "bad \xff utf8 \xc3", "line\u2028sep\u2029", "<html>&amp;"}
	for i, s := range tricky {
		ex, err := Render(episodetest.Small(), ViewReAct, RenderOptions{System: "Be <brief>. " + s})
		if err != nil {
			t.Fatal(err)
		}
		for j := range ex.Messages {
			ex.Messages[j].Content += tricky[(i+j)%len(tricky)]
			ex.Messages[j].Trainable = (i+j)%2 == 0
		}
		for _, o := range []lineOptions{{}, {System: s, Weights: true, ObservationRole: true}} {
			for format, line := range jsonlFormats {
				var want bytes.Buffer
				enc := json.NewEncoder(&want)
				enc.SetEscapeHTML(false)
				for _, row := range line(&ex, o) {
					if err := enc.Encode(row); err != nil {
						t.Fatal(err)
					}
				}
				if got := encodeLine(t, format, &ex, o); string(got) != strings.TrimSuffix(want.String(), "\n") {
					t.Errorf("%s, %q:\n got %s\nwant %s", format, s, got, want.String())
				}
			}
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
	ex, err := Render(episodetest.Small(), ViewReAct, RenderOptions{System: "Be brief."})
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
			line := encodeLine(t, tt.format, &ex, tt.o)
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
	ex, err := Render(episodetest.Small(), ViewReAct, RenderOptions{System: "Be brief."})
	if err != nil {
		t.Fatal(err)
	}
	var row struct {
		Conversations []struct{ Value string } `json:"conversations"`
		ItemID        string                   `json:"item_id"`
	}
	if err := json.Unmarshal(encodeLine(t, "agentgym", &ex, lineOptions{}), &row); err != nil {
		t.Fatal(err)
	}
	if got, want := row.Conversations[0].Value, "Be brief.\n\nQuestion: Where was the lantern museum built?"; got != want {
		t.Errorf("first turn: got %q, want %q", got, want)
	}
	if got, want := row.ItemID, "hotpotqa_ep1"; got != want {
		t.Errorf("item_id: got %q, want %q", got, want)
	}
}
