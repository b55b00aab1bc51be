package env

import "testing"

func TestMatchPick(t *testing.T) {
	tests := []struct {
		entity       string
		titles       []string // pages sharing the entity's NormalizeTitle, in corpus order
		paper, rules int      // the index each Match picks; -1 for none
	}{
		{"Sun", []string{"SUN", "Sun"}, 1, 1},
		{"SUN", []string{"Sun", "SUN"}, 1, 1},
		{"sun", []string{"SUN", "Sun"}, 1, 1}, // the first letter upper-cased, as MediaWiki's titles
		{"sUN", []string{"SUN", "Sun"}, 0, 0}, // else the first that differs only in case
		{"Sun_Hall", []string{"SUN HALL", "Sun Hall"}, 1, 1},
		{`"Sun"`, []string{"Sun"}, 0, 0},
		{`"Sun"`, []string{"Sun", `"Sun"`}, 1, 0}, // rules strips every quote first
		{"'Sun'", []string{"Sun"}, -1, 0},
		{"“Sun”", []string{"SUN", "Sun"}, -1, 1},
		{"Sun", []string{`"Sun"`}, -1, 0},
		{`"Sun`, []string{"Sun"}, -1, 0},
		{"Sun", nil, -1, -1},
	}
	for _, tt := range tests {
		for m, want := range map[Match]int{MatchPaper: tt.paper, MatchRules: tt.rules} {
			got, ok := m.Pick(tt.entity, tt.titles)
			if ok != (want >= 0) || ok && got != want {
				t.Errorf("Match %d Pick(%q, %q) = %d %v, want %d", m, tt.entity, tt.titles, got, ok, want)
			}
		}
	}
}

func TestTitleKey(t *testing.T) {
	for in, want := range map[string]string{
		"Sun":            "Sun",
		" SUN_ hall\t":   "SUN hall",
		`"Sun"`:          `"Sun"`,
		"'Salem's Lot":   "'Salem's Lot",
		"Zélie__Marché ": "Zélie Marché",
	} {
		if got := TitleKey(in); got != want {
			t.Errorf("TitleKey(%q) = %q, want %q", in, got, want)
		}
	}
}
