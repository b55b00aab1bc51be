package env

import (
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

func TestParseAction(t *testing.T) {
	tests := []struct {
		raw, typ, arg, str string
	}{
		{"Search[Ada Lovelace]", pipeline.ActionSearch, "Ada Lovelace", "Search[Ada Lovelace]"},
		{"search[ada]", pipeline.ActionSearch, "ada", "Search[ada]"},
		{"SEARCH[x]", pipeline.ActionSearch, "x", "Search[x]"},
		{"Search [Ada]", pipeline.ActionSearch, "Ada", "Search[Ada]"},
		{"  Lookup[ born ]  ", pipeline.ActionLookup, "born", "Lookup[born]"},
		{"Finish[yes] Observation 3: nothing", pipeline.ActionFinish, "yes", "Finish[yes]"},
		{"Finish[1,200 km", pipeline.ActionFinish, "1,200 km", "Finish[1,200 km]"},
		{"Search[Foo [bar]] tail", pipeline.ActionSearch, "Foo [bar]", "Search[Foo [bar]]"},
		{"Search[a]]", pipeline.ActionSearch, "a", "Search[a]"},
		{"Search[]", pipeline.ActionInvalid, "", "Search[]"},
		{"Lookup[   ]", pipeline.ActionInvalid, "", "Lookup[   ]"},
		{"Jump[x]", pipeline.ActionInvalid, "", "Jump[x]"},
		{"Search Ada", pipeline.ActionInvalid, "", "Search Ada"},
		{"Action 1: Search[x]", pipeline.ActionInvalid, "", "Action 1: Search[x]"},
		{"", pipeline.ActionInvalid, "", ""},
		{"  [x]", pipeline.ActionInvalid, "", "[x]"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			a := ParseAction(tt.raw)
			if a.Type != tt.typ || a.Argument != tt.arg || a.Raw != tt.raw {
				t.Errorf("ParseAction(%q): got %+v, want type %s argument %q", tt.raw, a, tt.typ, tt.arg)
			}
			if got := a.String(); got != tt.str {
				t.Errorf("ParseAction(%q).String(): got %q, want %q", tt.raw, got, tt.str)
			}
		})
	}
}

func TestNormalizeTitle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Ada Lovelace", "ada lovelace"},
		{"Ada_Lovelace", "ada lovelace"},
		{"  ada   LOVELACE\t", "ada lovelace"},
		{"ada__lovelace", "ada lovelace"},
		{`"Love the Way You Lie"`, "love the way you lie"},
		{"'Kestrel Bay'", "kestrel bay"},
		{"“Kestrel Bay”", "kestrel bay"},
		{"‘Kestrel Bay’", "kestrel bay"},
		{`" 'Nested' "`, "nested"},
		{"'Salem's Lot", "salem's lot"},
		{"«Kestrel Bay»", "kestrel bay"},
		{"`Kestrel Bay`", "kestrel bay"},
		{"\"Unpaired", "unpaired"},
		{"Rock 'n' Roll", "rock 'n' roll"},
		{`"`, ""},
		{"Zélie Marché", "zélie marché"},
		{"", ""},
		// The index's fixture titles, which it keys through this function.
		{"Marlow Ferry", "marlow ferry"},
		{"  marlow   FERRY ", "marlow ferry"},
		{"Marlow_Ferry", "marlow ferry"},
		{"\"Marlow Ferry\"", "marlow ferry"},
		{"'Marlow Ferry'", "marlow ferry"},
		{"\u201cMarlow Ferry\u201d", "marlow ferry"},
		{"\u2018 Marlow\tFerry \u2019", "marlow ferry"},
		{"\"'Marlow Ferry'\"", "marlow ferry"},
		{"Ash's Lantern", "ash's lantern"},
		{"ÉLAN", "élan"},
		{"\"\"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := NormalizeTitle(tt.in); got != tt.want {
				t.Errorf("NormalizeTitle(%q): got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzNormalizeTitle checks that folding is idempotent, so a title folded by a backend at
// build time and an entity folded at search time meet.
func FuzzNormalizeTitle(f *testing.F) {
	for _, s := range []string{"Ada_Lovelace", "“Kestrel Bay”", "'Salem's Lot", " _ ", "«'x'»"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := NormalizeTitle(s)
		if twice := NormalizeTitle(once); twice != once {
			t.Errorf("NormalizeTitle(%q) = %q, then %q", s, once, twice)
		}
	})
}
