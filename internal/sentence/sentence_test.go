package sentence

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/reactgen/reactgen/internal/shareddata"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"spaces only", "   \n\t ", nil},
		{"one without stop", "A lone fragment", []string{"A lone fragment"}},
		{"two plain", "Ravens nest in cliffs. They eat carrion.", []string{"Ravens nest in cliffs.", "They eat carrion."}},
		{"surrounding space", "  First one.   Second one.  ", []string{"First one.", "Second one."}},
		{"US mid sentence", "She joined the U.S. Navy in 1941. She retired.", []string{"She joined the U.S. Navy in 1941.", "She retired."}},
		{"US end of sentence", "He moved to the U.S. The move was hard.", []string{"He moved to the U.S.", "The move was hard."}},
		{"UK", "A band from the U.K. formed in Leeds.", []string{"A band from the U.K. formed in Leeds."}},
		{"titles", "Mr. Quill met Mrs. Vane and Dr. Ostrow at St. Peter's near Mt. Ordo.", []string{"Mr. Quill met Mrs. Vane and Dr. Ostrow at St. Peter's near Mt. Ordo."}},
		{"Jr mid", "Amos Pell Jr. Studios opened. It closed.", []string{"Amos Pell Jr. Studios opened.", "It closed."}},
		{"Jr end", "His son was Amos Pell Jr. He was a painter.", []string{"His son was Amos Pell Jr.", "He was a painter."}},
		{"Inc end", "It was bought by Quorvex Inc. The price was secret.", []string{"It was bought by Quorvex Inc.", "The price was secret."}},
		{"Ltd and Co mid", "Harl Ltd. Group and Bram Co. Holdings merged.", []string{"Harl Ltd. Group and Bram Co. Holdings merged."}},
		{"vs", "The case Hale vs. Morrow was heard. It failed.", []string{"The case Hale vs. Morrow was heard.", "It failed."}},
		{"eg ie", "Some birds, e.g. Ravens, i.e. Corvids, are clever.", []string{"Some birds, e.g. Ravens, i.e. Corvids, are clever."}},
		{"etc mid", "Tools, pots, etc. were found. Bones too.", []string{"Tools, pots, etc. were found.", "Bones too."}},
		{"etc end", "Tools, pots, etc. Bones were rarer.", []string{"Tools, pots, etc.", "Bones were rarer."}},
		{"No", "It reached No. 3 on the chart. It stayed.", []string{"It reached No. 3 on the chart.", "It stayed."}},
		{"military", "Gen. Arlo and Col. Brede and Lt. Cass met.", []string{"Gen. Arlo and Col. Brede and Lt. Cass met."}},
		{"am pm", "The shop opens at 9 a.m. and closes at 5 p.m. The owner lives upstairs.", []string{"The shop opens at 9 a.m. and closes at 5 p.m.", "The owner lives upstairs."}},
		{"month", "It opened on Jan. 4, 1990. Crowds came.", []string{"It opened on Jan. 4, 1990.", "Crowds came."}},
		{"initials", "J. R. R. Tolkien and H. G. Wells wrote. Both were English.", []string{"J. R. R. Tolkien and H. G. Wells wrote.", "Both were English."}},
		{"initial end", "It was won by World War I. The war ended.", []string{"It was won by World War I.", "The war ended."}},
		{"decimals", "The town has 3.5 million people. Its area is 12.75 km2.", []string{"The town has 3.5 million people.", "Its area is 12.75 km2."}},
		{"version", "Release v1.2 fixed it. Version 2.0.1 followed.", []string{"Release v1.2 fixed it.", "Version 2.0.1 followed."}},
		{"no space after stop", "It ended.Then more", []string{"It ended.Then more"}},
		{"ellipsis mid", "He paused... and went on. Then he left.", []string{"He paused... and went on.", "Then he left."}},
		{"ellipsis end", "He paused... Then he left.", []string{"He paused...", "Then he left."}},
		{"unicode ellipsis", "Wait… Nothing happened.", []string{"Wait…", "Nothing happened."}},
		{"closing quote", `She said "it is over." Next came silence.`, []string{`She said "it is over."`, "Next came silence."}},
		{"typographic quote", "She said “it is over.” Next came silence.", []string{"She said “it is over.”", "Next came silence."}},
		{"closing paren", "Orla Vint (born 1950.) Vint is a poet.", []string{"Orla Vint (born 1950.)", "Vint is a poet."}},
		{"question exclaim", "Why did it fall? Nobody knows! It just did.", []string{"Why did it fall?", "Nobody knows!", "It just did."}},
		{"question in title then year", "It starred in Where Is It? (2001), a hit. It won.", []string{"It starred in Where Is It? (2001), a hit.", "It won."}},
		{"exclaim in name", "Zappo! is a game show. It aired weekly.", []string{"Zappo! is a game show.", "It aired weekly."}},
		{"starts with digit", "It was built in 1820. 1821 saw it burn.", []string{"It was built in 1820.", "1821 saw it burn."}},
		{"starts with quote", `It is a song. "Grey Tide" was its single.`, []string{"It is a song.", `"Grey Tide" was its single.`}},
		{"starts with paren", "It is a song. (It was never released.)", []string{"It is a song.", "(It was never released.)"}},
		{"lowercase next", "The stop cm. long is odd.", []string{"The stop cm. long is odd."}},
		{"doubled stop", "The town lies on a river.. Its bridge is old.", []string{"The town lies on a river..", "Its bridge is old."}},
		{"doubled after abbrev", "It was sold to Harl Co.. Kestrel bought it later.", []string{"It was sold to Harl Co..", "Kestrel bought it later."}},
		{"scraping noise", "The year 1987 was long.. Create account. Log in. Pages for logged out editors learn more. Contents move to sidebar.",
			[]string{"The year 1987 was long..", "Create account.", "Log in.", "Pages for logged out editors learn more.", "Contents move to sidebar."}},
		{"citation", "It lies in Tibet.[6] It was founded in 1400.[a][7] Few live there.", []string{"It lies in Tibet.[6]", "It was founded in 1400.[a][7]", "Few live there."}},
		{"citation note", "It is old.[nb 1] It is grey.", []string{"It is old.[nb 1]", "It is grey."}},
		{"newline hard break", "First line without stop\nSecond line. Third one.\r\nFourth", []string{"First line without stop", "Second line.", "Third one.", "Fourth"}},
		{"blank lines", "One.\n\n\nTwo.", []string{"One.", "Two."}},
		{"caseless script", "He wrote in Chinese. 北京 is the capital.", []string{"He wrote in Chinese.", "北京 is the capital."}},
		{"dotted url", "See example.com. It is a site.", []string{"See example.com.", "It is a site."}},
		{"only stops", "...", []string{"..."}},
		{"ends with citation and quote", `It was called "Grey".[3] He left.`, []string{`It was called "Grey".[3]`, "He left."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.in)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Split(%q):\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// nonSpace returns s without white space.
func nonSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

var (
	endsWithTitle   = regexp.MustCompile(`(?:^|\s)(?:Mr|Mrs|Ms|Dr|St|Mt|Gen|Col|Lt|No|vs|e\.g|i\.e)\.$`)
	endsWithInitial = regexp.MustCompile(`(?:^|\s)[A-Z]\.$`)
	splitDecimal    = regexp.MustCompile(`\d\.$`)
)

func TestSplitRealProse(t *testing.T) {
	path := shareddata.Path(t, "react-transcripts/wiki_intros_from_fever_transcripts.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	pages, sentences := 0, 0
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			break
		}
		var rec struct{ Title, Text string }
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		pages++
		got := Split(rec.Text)
		sentences += len(got)
		if want := nonSpace(rec.Text); nonSpace(strings.Join(got, "")) != want {
			t.Errorf("line %d (%s): concatenation lost characters", line, rec.Title)
		}
		for i, s := range got {
			if s == "" || s != strings.TrimSpace(s) {
				t.Errorf("line %d sentence %d: not trimmed or empty: %q", line, i, s)
			}
			// The texts were cut after a few sentences, so only a sentence that has a
			// successor shows where Split chose to break.
			if i+1 < len(got) {
				next := got[i+1]
				if endsWithTitle.MatchString(s) {
					t.Errorf("line %d sentence %d ends with an abbreviation: %q", line, i, s)
				}
				if endsWithInitial.MatchString(s) && !openers[firstWord(next)] {
					t.Errorf("line %d sentence %d ends with an initial: %q | %q", line, i, s, next)
				}
				if splitDecimal.MatchString(s) && next[0] >= '0' && next[0] <= '9' && !strings.Contains(rec.Text, s+" "+next[:1]) {
					t.Errorf("line %d sentence %d split inside a number: %q | %q", line, i, s, next)
				}
			}
		}
	}
	if pages < 300 || sentences < 2*pages {
		t.Errorf("read %d pages into %d sentences: want at least 300 pages, two sentences each", pages, sentences)
	}
	t.Logf("%d pages, %d sentences", pages, sentences)
}

func BenchmarkSplit(b *testing.B) {
	text := strings.Repeat("Orla Vint (born 3 Jan. 1950) is a U.S. poet. She met Dr. H. G. Kell in 1971, e.g. at St. Ives! Her 2.5 million copies sold... Why? \"Nobody knows.\" ", 200)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Split(text)
	}
}
