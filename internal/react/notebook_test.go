package react

import "testing"

func TestNotebook(t *testing.T) {
	tests := []struct {
		name, in        string
		step            int
		thought, action string
		ok              bool
	}{
		{"continuation of Thought 2:", " I need Onhava.\nAction 2: Search[Onhava]", 2, "I need Onhava.", "Search[Onhava]", true},
		{"action kept as written", " x \nAction 1: search[Vell] at once ", 1, "x ", "search[Vell] at once", true},
		{"a thought over two lines", " a\nb\nAction 1: Finish[c]\n", 1, "a\nb", "Finish[c]", true},
		{"another step's label is no action", " a\nAction 2: Search[b]", 1, "a", "", false},
		{"no space after the colon", " a\nAction 1:Search[b]", 1, "a", "", false},
		{"two actions", " a\nAction 1: Search[b]\nAction 1: Search[c]", 1, "a", "", false},
		{"no action: first line", " I am not sure.\nMaybe later.", 3, "I am not sure.", "", false},
		{"trailing space of the first line kept", "\x1c I think \nmore", 1, "I think ", "", false},
		{"empty", "  ", 1, "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			th, a, ok := Notebook(tc.in, tc.step)
			if th != tc.thought || a != tc.action || ok != tc.ok {
				t.Errorf("got %q %q %v, want %q %q %v", th, a, ok, tc.thought, tc.action, tc.ok)
			}
		})
	}
	if got := NotebookAction(" Search[x]\n"); got != "Search[x]" {
		t.Errorf("NotebookAction: got %q", got)
	}
}
