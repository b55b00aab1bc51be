package wikidump

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// flatRecordCases are lines for decodeFlatRecord: each must either decode exactly as
// json.Unmarshal does or be left to it.
var flatRecordCases = []string{
	`{"title": "Alpha", "text": "Alpha is first. Beta is second."}`,
	`{"title":"Alpha","text":"x","disambiguation":true}`,
	` { "Title" : "A" , "TEXT" : "b" , "Disambiguation" : false } `,
	`{"title": "A \"quoted\" \u00e9 \\ \/ \n", "text": "t\tu\u2028"}`,
	`{"title": "A", "title": "B", "text": "x"}`,
	`{"title": "A", "title": null, "text": "x"}`,
	`{"title": null, "text": null, "disambiguation": null}`,
	`{"id": "Page_One", "text": "", "lines": "0\tOne.\n1\tTwo."}`,
	`{"id": 12, "text": "", "lines": "0\tOne."}`,
	`{"title": "A", "text": "x", "views": -12.5e+3, "ok": true, "n": 0, "f": 0.25E2}`,
	`{"title": "A", "text": ["p1", "p2"]}`,
	`{"title": "A", "text": "x", "meta": {"k": "v"}}`,
	`{}`,
	`{"title": "Ünïcode", "text": "日本語"}`,
	// malformed or of the wrong types: Unmarshal must report them
	`{"title": "A", "text": "x"`,
	`{"title": "A", "text": "x"} trailing`,
	`{"title": "A", "text": "x",}`,
	`{"title": "A" "text": "x"}`,
	`{"title": 12, "text": "x"}`,
	`{"title": "A", "text": "x", "disambiguation": "yes"}`,
	`{"title": "A", "text": "bad \x escape"}`,
	`{"title": "A", "text": "bad \u12 escape"}`,
	"{\"title\": \"A\", \"text\": \"raw\tcontrol\"}",
	`{"title": "A", "text": "x", "n": 01}`,
	`{"title": "A", "text": "x", "n": -}`,
	`{"title": "A", "text": "x", "n": 1.}`,
	`{"title": "A", "text": "x", "n": 1e}`,
	`{"title": "A", "text": tru}`,
	`{"ti\u0074le": "A", "text": "x"}`,
	`["title", "A"]`,
	``,
	`{"title": "A", "text": "unterminated}`,
}

func TestDecodeFlatRecordMatchesUnmarshal(t *testing.T) {
	for _, line := range flatRecordCases {
		t.Run(line, func(t *testing.T) { checkFlatRecord(t, []byte(line)) })
	}
}

func FuzzDecodeFlatRecord(f *testing.F) {
	for _, line := range flatRecordCases {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !utf8.Valid(line) {
			return // parse repairs or refuses such lines before decoding
		}
		checkFlatRecord(t, line)
	})
}

func checkFlatRecord(t *testing.T, line []byte) {
	t.Helper()
	got, ok := decodeFlatRecord(line)
	var want jsonlRecord
	err := json.Unmarshal(line, &want)
	if !ok {
		return // json.Unmarshal decides
	}
	if err != nil {
		t.Fatalf("decodeFlatRecord accepted %q, json.Unmarshal: %v", line, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeFlatRecord(%q) = %+v, json.Unmarshal gives %+v", line, got, want)
	}
}

func TestDecodeFlatRecordTakesCommonLines(t *testing.T) {
	for _, line := range flatRecordCases[:10] {
		if _, ok := decodeFlatRecord([]byte(line)); !ok {
			t.Errorf("decodeFlatRecord(%q) fell back to json.Unmarshal", line)
		}
	}
}

func TestHasControl(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"", false},
		{"plain text of more than eight bytes", false},
		{"ünïcödé ÿ\u00a0 and more than eight bytes", false},
		{"\x1f", true},
		{"12345678\x00", true},
		{"1234567\n89abcdef", true},
		{"abcdefgh ijklmno\tp", true},
		{"\x7f\x20\x80\xff\x20\x21\x7e\x40", false},
	} {
		if got := hasControl([]byte(tc.s)); got != tc.want {
			t.Errorf("hasControl(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
