package levenshtein

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"finished", "finishd", 1},
		{"kitten", "sitting", 3},
		{"flaw", "lawn", 2},
		{"café", "cafe", 1}, // one rune, two bytes
		{"parquet", "parquet", 0},
	}
	for _, tt := range tests {
		t.Run(tt.a+"|"+tt.b, func(t *testing.T) {
			if got := Distance(tt.a, tt.b); got != tt.want {
				t.Errorf("Distance(%q, %q): got %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := Distance(tt.b, tt.a); got != tt.want {
				t.Errorf("Distance(%q, %q): got %d, want %d (not symmetric)", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

func TestNearest(t *testing.T) {
	tests := []struct {
		name       string
		s          string
		candidates []string
		want       string
		wantD      int
	}{
		{"typo", "finishd", []string{"correct", "finished", "max_steps"}, "finished", 1},
		{"tie keeps the first", "ab", []string{"ax", "ay"}, "ax", 1},
		{"exact", "jsonl", []string{"parquet", "jsonl"}, "jsonl", 0},
		{"no candidates", "x", nil, "", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, d := Nearest(tt.s, tt.candidates)
			if got != tt.want || d != tt.wantD {
				t.Errorf("Nearest(%q, %q): got (%q, %d), want (%q, %d)", tt.s, tt.candidates, got, d, tt.want, tt.wantD)
			}
		})
	}
}
