package chattemplate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoad reads a template file and a tokenizer_config.json (string or named list, with
// its special tokens, AddedToken form included), and names the file and the key when
// one cannot be read.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	src := `{{ bos_token }}{% for m in messages %}{{ m.role }}:{% generation %}{{ m.content }}{% endgeneration %}|{% endfor %}{% if tools %}T{% endif %}`
	msgs := []map[string]any{{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}}
	tests := []struct {
		name, path string
		tools      bool
		want       string
	}{
		{"jinja file", write("t.jinja", src), false, "user:hi|assistant:yo|"},
		{"string", write("a.json", `{"chat_template": "`+strings.ReplaceAll(src, `"`, `\"`)+`", "bos_token": {"content": "<s>", "lstrip": false}}`), false, "<s>user:hi|assistant:yo|"},
		{"named, default", write("b.json", `{"chat_template": [{"name": "default", "template": "D{{ messages|length }}"}, {"name": "tool_use", "template": "U"}]}`), false, "D2"},
		{"named, tool_use", write("b2.json", `{"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "U"}]}`), true, "U"},
	}
	for _, tt := range tests {
		tpl, err := Load(tt.path, tt.tools)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		text, spans, err := tpl.Render(msgs, nil)
		if err != nil || text != tt.want {
			t.Errorf("%s: got %q %v, want %q", tt.name, text, err, tt.want)
		}
		if tt.name == "jinja file" && (len(spans) != 2 || text[spans[1][0]:spans[1][1]] != "yo") {
			t.Errorf("spans %v of %q", spans, text)
		}
	}
	for _, bad := range []struct{ path, want string }{
		{write("c.json", `{"bos_token": "<s>"}`), "no chat_template key"},
		{write("d.json", `{"chat_template": 3}`), "neither a string"},
		{write("e.json", `not json`), "is not JSON"},
		{write("f.jinja", `{% for %}`), "f.jinja"},
		{filepath.Join(dir, "missing.jinja"), "missing.jinja"},
	} {
		_, err := Load(bad.path, false)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "export.chat_template") {
			t.Errorf("%s: got %v, want an error with %q", bad.path, err, bad.want)
		}
	}
}

// TestRenderJSONKeepsKeyOrder: objects given as JSON keep their keys' order, as
// json.loads keeps it, where a Go map would sort them; numbers keep int or float.
func TestRenderJSONKeepsKeyOrder(t *testing.T) {
	tpl, err := Parse("t", `{% for m in messages %}{{ m | tojson }}{% endfor %}|{{ tools | tojson }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := tpl.RenderJSON([]byte(`[{"role": "user", "content": "hi", "b": 1, "a": 2.5}]`), []byte(`[{"type": "function", "function": {"name": "f"}}]`))
	want := `{"role": "user", "content": "hi", "b": 1, "a": 2.5}|[{"type": "function", "function": {"name": "f"}}]`
	if err != nil || text != want {
		t.Errorf("got %q %v, want %q", text, err, want)
	}
	text, _, err = tpl.RenderJSON([]byte(`[]`), nil)
	if err != nil || text != "|null" {
		t.Errorf("no tools: got %q %v, want %q", text, err, "|null")
	}
	if _, _, err := tpl.RenderJSON([]byte(`[{"role": "user"}] x`), nil); err == nil {
		t.Error("trailing data: no error")
	}
}
