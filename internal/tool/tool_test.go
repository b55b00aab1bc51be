package tool

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

func TestDefs(t *testing.T) {
	for _, task := range []string{pipeline.TaskHotpotQA, pipeline.TaskFEVER} {
		defs := Defs(task)
		if len(defs) != 3 {
			t.Fatalf("%s: %d tools, want 3", task, len(defs))
		}
		for i, d := range defs {
			p := d.Function.Parameters
			arg := argument[d.Function.Name]
			if d.Type != "function" || d.Function.Name != Names[i] || d.Function.Description == "" ||
				p.Type != "object" || len(p.Required) != 1 || p.Required[0] != arg || p.Properties[arg].Type != "string" {
				t.Errorf("%s tool %d: %+v", task, i, d)
			}
		}
		enum := defs[2].Function.Parameters.Properties["answer"].Enum
		if task == pipeline.TaskFEVER && strings.Join(enum, "|") != "SUPPORTS|REFUTES|NOT ENOUGH INFO" {
			t.Errorf("FEVER finish enum: got %v", enum)
		}
		if task == pipeline.TaskHotpotQA && enum != nil {
			t.Errorf("HotpotQA finish has an enum: %v", enum)
		}
		var back []Def
		if err := json.Unmarshal([]byte(JSON(task)), &back); err != nil || len(back) != 3 {
			t.Errorf("%s JSON does not read back: %v", task, err)
		}
	}
}

func TestActionRoundTrip(t *testing.T) {
	tests := []struct{ typ, arg, text string }{
		{pipeline.ActionSearch, "Ada Lovelace", "Search[Ada Lovelace]"},
		{pipeline.ActionLookup, "born", "Lookup[born]"},
		{pipeline.ActionFinish, "NOT ENOUGH INFO", "Finish[NOT ENOUGH INFO]"},
		{pipeline.ActionSearch, `Tom & "Jerry" <1940>`, `Search[Tom & "Jerry" <1940>]`},
	}
	for _, tt := range tests {
		name, args, ok := FromAction(tt.typ, tt.arg)
		if !ok {
			t.Fatalf("FromAction(%s, %s) failed", tt.typ, tt.arg)
		}
		a, err := ToAction(name, args)
		if err != nil || a.Text != tt.text || a.Type != tt.typ || a.Argument != tt.arg {
			t.Errorf("%s %q: round trip gave %+v, %v (arguments %s)", tt.typ, tt.arg, a, err, args)
		}
	}
	if _, _, ok := FromAction(pipeline.ActionInvalid, "x"); ok {
		t.Error("FromAction(invalid) has a tool form")
	}
}

func TestToActionRejects(t *testing.T) {
	tests := []struct{ name, args, want string }{
		{"browse", `{"url":"x"}`, "unknown function"},
		{"search", `not json`, "not a JSON object"},
		{"search", `["x"]`, "not a JSON object"},
		{"search", `{}`, `missing argument "entity"`},
		{"lookup", `{"keyword": 3}`, "not a string"},
		{"finish", `{"answer": "x", "confidence": 1}`, `unexpected argument "confidence"`},
	}
	for _, tt := range tests {
		_, err := ToAction(tt.name, tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ToAction(%s, %s): got %v, want %q", tt.name, tt.args, err, tt.want)
		}
	}
}

// TestFromActionIsTheMapsEncoding holds FromAction's arguments to what encoding/json
// writes for the one-key map without HTML escapes, on arguments written as they are
// (printable ASCII, HTML's characters included) and arguments that need escaping.
func TestFromActionIsTheMapsEncoding(t *testing.T) {
	args := []string{"", "Ada Lovelace", `Tom & Jerry <1940> {a:[1,2]} ~/'?`, `Tom & "Jerry" <1940>`, "back\\slash", "tab\tnew\nline\r", "\x00\x01\x1f\x7f",
		"café ☕ \U0001F600", "\u2028\u2029", "bad \xff\xfe utf-8", "\ufffd"}
	for _, typ := range []string{pipeline.ActionSearch, pipeline.ActionLookup, pipeline.ActionFinish} {
		for _, arg := range args {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(map[string]string{argument[typ]: arg}); err != nil {
				t.Fatal(err)
			}
			if _, got, ok := FromAction(typ, arg); !ok || got != strings.TrimSuffix(b.String(), "\n") {
				t.Errorf("%s %q: got %s (%v), want %s", typ, arg, got, ok, b.String())
			}
		}
	}
}
