package python

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The tables in testdata/ were written once by Python 3.11.7 (Unicode 14.0.0) from its
// own str methods; each file's header names the expression. The tests compare on every
// code point that Unicode 14.0.0 assigns (testdata/assigned.txt): Go's tables are
// Unicode 15.0.0, which assigns characters that Python 3.11 still reads as unassigned.

// rangeSet is a table of inclusive code point ranges.
type rangeSet [][2]rune

func (s rangeSet) has(r rune) bool {
	i, found := slices.BinarySearchFunc(s, r, func(x [2]rune, r rune) int {
		switch {
		case x[1] < r:
			return -1
		case x[0] > r:
			return 1
		}
		return 0
	})
	return found && i >= 0
}

// readTable reads a testdata file: lines of hex code points after '#' comments.
func readTable(t *testing.T, name string) [][]rune {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]rune
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var row []rune
		for _, field := range strings.Fields(line) {
			v, err := strconv.ParseUint(field, 16, 32)
			if err != nil {
				t.Fatalf("testdata/%s line %d: %v", name, n, err)
			}
			row = append(row, rune(v))
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("testdata/%s holds no rows", name)
	}
	return rows
}

func readRanges(t *testing.T, name string) rangeSet {
	t.Helper()
	var s rangeSet
	for _, row := range readTable(t, name) {
		if len(row) != 2 || row[0] > row[1] {
			t.Fatalf("testdata/%s: want first and last code point, got %x", name, row)
		}
		s = append(s, [2]rune{row[0], row[1]})
	}
	return s
}

// python3Assigned calls fn with every code point that Unicode 14.0.0 assigns.
func python3Assigned(t *testing.T, fn func(r rune)) {
	t.Helper()
	n := 0
	for _, rg := range readRanges(t, "assigned.txt") {
		for r := rg[0]; r <= rg[1]; r++ {
			if r >= 0xD800 && r <= 0xDFFF {
				continue // surrogates: a Python str holds them, Go's UTF-8 strings cannot
			}
			fn(r)
			n++
		}
	}
	if n < 280_000 {
		t.Fatalf("assigned.txt names %d code points, want Unicode 14's", n)
	}
}

// pySpace is every code point for which Python 3's str.isspace is true: bidirectional
// class WS, B or S, or category Zs (checked against Python 3.11.7 over all code points).
var pySpace = []rune{
	0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680,
	0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
	0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
}

func TestIsSpace(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got, want := IsSpace(r), slices.Contains(pySpace, r); got != want {
			t.Errorf("IsSpace(%U) = %v, Python's str.isspace %v", r, got, want)
		}
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string // str.split() as Python 3.11 gives it
	}{
		{"Paris\u001f", []string{"Paris"}},
		{"a\u001cb\u001dc\u001ed\u001ff", []string{"a", "b", "c", "d", "f"}},
		{"a\u0085b", []string{"a", "b"}},
		{"a\u180eb", []string{"a\u180eb"}},
		{"a\u200bb", []string{"a\u200bb"}},
		{"\u3000x\u3000", []string{"x"}},
		{"a\u2028b\u2029c", []string{"a", "b", "c"}},
		{"x\u000b\u000cy", []string{"x", "y"}},
		{" \t\n ", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := Split(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Split(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestLowerEveryCodePoint compares Lower of each code point alone with str.lower().
func TestLowerEveryCodePoint(t *testing.T) {
	want := map[rune]string{}
	for _, row := range readTable(t, "lower.txt") {
		want[row[0]] = string(row[1:])
	}
	python3Assigned(t, func(r rune) {
		w, ok := want[r]
		if !ok {
			w = string(r)
		}
		if got := Lower(string(r)); got != w {
			t.Errorf("Lower(%U) = %q, str.lower() %q", r, got, w)
		}
	})
}

// TestLowerFinalSigma checks the final-sigma rule on every code point as a neighbour of
// the capital sigma, against the two properties Python's rule reads, which the tables
// hold as Python showed them: X then Σ lower-cases to ς exactly when X is cased and not
// case-ignorable (sigma_cased.txt); and X is skipped when case-ignorable
// (sigma_ignorable.txt), so "AΣX" ends in ς when X is case-ignorable or not cased, and
// "AΣXB" only when X is neither.
func TestLowerFinalSigma(t *testing.T) {
	cs, ig := readRanges(t, "sigma_cased.txt"), readRanges(t, "sigma_ignorable.txt")
	python3Assigned(t, func(r rune) {
		if r == 'Σ' {
			return
		}
		x := string(r)
		sigmaAt := func(s string, i int) rune { return []rune(Lower(s))[i] }
		final := map[bool]rune{true: 'ς', false: 'σ'}
		if got, want := []rune(Lower(x+"Σ")), final[cs.has(r)]; got[len(got)-1] != want {
			t.Errorf("Lower(%U Σ) ends %c, Python %c", r, got[len(got)-1], want)
		}
		if got, want := sigmaAt("AΣ"+x, 1), final[ig.has(r) || !cs.has(r) && !ig.has(r)]; got != want {
			t.Errorf("Lower(A Σ %U) has %c, Python %c", r, got, want)
		}
		if got, want := sigmaAt("AΣ"+x+"B", 1), final[!ig.has(r) && !cs.has(r)]; got != want {
			t.Errorf("Lower(A Σ %U B) has %c, Python %c", r, got, want)
		}
	})
}

// stripCases are str.strip() of each string as Python 3.11 gives it.
var stripCases = []struct{ in, want string }{
	{" \u001fParis\u3000 ", "Paris"},
	{"\u001c a b \u0085", "a b"},
	{"\u200bx\u200b", "\u200bx\u200b"},
	{"\u180ex\u180e", "\u180ex\u180e"},
	{"\t\n", ""},
	{"", ""},
}

// lowerCases are str.lower() of each string as Python 3.11 gives it.
var lowerCases = []struct{ in, want string }{
	{"ΟΔΟΣ", "οδος"},
	{"οδος", "οδος"},
	{"Σ", "σ"},
	{"ΣΑ", "σα"},
	{"ΑΣ", "ας"},
	{"ΑΣ.", "ας."},
	{"ΑΣ Β", "ας β"},
	{"Α'Σ", "α'ς"},
	{"ΑΣ'", "ας'"},
	{"ΑΣ'Β", "ασ'β"},
	{"ΑΣ\u0301", "ας\u0301"},
	{"Α\u0301Σ", "α\u0301ς"},
	{"1Σ", "1σ"},
	{"ΑΣΣ", "ασς"},
	{"ΟΔΟΣ ΑΛΦΑ", "οδος αλφα"},
	{"İstanbul", "i\u0307stanbul"},
	{"Iİ", "ii\u0307"},
	{"ǅ", "ǆ"},
	{"ΑΣ\u00ad", "ας\u00ad"},
	{"a.Σ", "a.ς"},
	{"PARIS", "paris"},
	{"bad \xff UTF-8 Σ", "bad \xff utf-8 σ"},
}

// TestStringsAsPython: Strip, Lower and Repr give what Python 3.11's str.strip(),
// str.lower() and repr() give.
func TestStringsAsPython(t *testing.T) {
	for _, fn := range []struct {
		name  string
		f     func(string) string
		cases []struct{ in, want string }
	}{{"Strip", Strip, stripCases}, {"Lower", Lower, lowerCases}, {"Repr", Repr, reprCases}} {
		for _, tt := range fn.cases {
			if got := fn.f(tt.in); got != tt.want {
				t.Errorf("%s(%q) = %q, Python %q", fn.name, tt.in, got, tt.want)
			}
		}
	}
}

func TestIsWord(t *testing.T) {
	w := readRanges(t, "word.txt")
	python3Assigned(t, func(r rune) {
		if got, want := IsWord(r), w.has(r); got != want {
			t.Errorf("IsWord(%U) = %v, re's \\w %v", r, got, want)
		}
	})
}

func TestIsPrintable(t *testing.T) {
	np := readRanges(t, "nonprintable.txt")
	python3Assigned(t, func(r rune) {
		if got, want := IsPrintable(r), !np.has(r); got != want {
			t.Errorf("IsPrintable(%U) = %v, str.isprintable %v", r, got, want)
		}
	})
}

// reprCases are repr() of each string as Python 3.11 prints it.
var reprCases = []struct{ in, want string }{
	{"Paris", "'Paris'"},
	{"Brannock's Ferry", "\"Brannock's Ferry\""},
	{"Both ' and \"", "'Both \\' and \"'"},
	{"say \"hi\"", "'say \"hi\"'"},
	{"back\\slash", "'back\\\\slash'"},
	{"a\\'b", "\"a\\\\'b\""},
	{"Zero\u200bWidth Hall", "'Zero\\u200bWidth Hall'"},
	{"tab\u0009here", "'tab\\there'"},
	{"new\u000aline", "'new\\nline'"},
	{"cr\u000dx", "'cr\\rx'"},
	{"unit\u001fsep", "'unit\\x1fsep'"},
	{"nul\u0000", "'nul\\x00'"},
	{"del\u007f", "'del\\x7f'"},
	{"\u0080", "'\\x80'"},
	{"next\u0085line", "'next\\x85line'"},
	{"no\u00a0break", "'no\\xa0break'"},
	{"soft\u00adhyphen", "'soft\\xadhyphen'"},
	{"Zélie Marché", "'Zélie Marché'"},
	{"line\u2028sep", "'line\\u2028sep'"},
	{"ideographic\u3000space", "'ideographic\\u3000space'"},
	{"日本", "'日本'"},
	{"😀", "'😀'"},
	{"tag\U000e0001", "'tag\\U000e0001'"},
	{"\uffff", "'\\uffff'"},
	{"\U0010ffff", "'\\U0010ffff'"},
	{"unassigned\u0378", "'unassigned\\u0378'"},
	{"'", "\"'\""},
	{"\"", "'\"'"},
	{"'\"", "'\\'\"'"},
	{"", "''"},
	{" ", "' '"},
	{"\u001b[0m", "'\\x1b[0m'"},
	{"ÿ", "'ÿ'"},
	{"Ā̀", "'Ā̀'"},
}

func TestReprInvalidUTF8(t *testing.T) {
	// Repr of what Python can hold is in TestStringsAsPython. Not a str Python can hold:
	// the byte is shown, not lost.
	if got, want := Repr("a\xffb"), `'a\xffb'`; got != want {
		t.Errorf("Repr of invalid UTF-8 = %s, want %s", got, want)
	}
}

// TestReprEveryCodePoint checks the escape of each code point alone against the rules
// and str.isprintable's table: the escape's kind follows from the code point's size.
func TestReprEveryCodePoint(t *testing.T) {
	np := readRanges(t, "nonprintable.txt")
	special := map[rune]string{'\t': `'\t'`, '\n': `'\n'`, '\r': `'\r'`, '\\': `'\\'`, '\'': `"'"`}
	python3Assigned(t, func(r rune) {
		want := special[r]
		switch {
		case want != "":
		case !np.has(r) && r != 0x7f:
			want = "'" + string(r) + "'"
		case r <= 0xff:
			want = fmt.Sprintf(`'\x%02x'`, r)
		case r <= 0xffff:
			want = fmt.Sprintf(`'\u%04x'`, r)
		default:
			want = fmt.Sprintf(`'\U%08x'`, r)
		}
		if got := Repr(string(r)); got != want {
			t.Errorf("Repr(%U) = %s, want %s", r, got, want)
		}
	})
	if !utf8.ValidString(Repr("\U0010ffff")) {
		t.Error("Repr wrote invalid UTF-8")
	}
}

func TestListRepr(t *testing.T) {
	tests := []struct {
		in   []string
		want string // str() of the list, as Python 3.11 prints it
	}{
		{nil, "[]"},
		{[]string{"Kestrel Bay", "Brannock's Ferry", "Zero\u200bWidth Hall", "tab\there"}, "['Kestrel Bay', \"Brannock's Ferry\", 'Zero\\u200bWidth Hall', 'tab\\there']"},
	}
	for _, tt := range tests {
		if got := ListRepr(tt.in); got != tt.want {
			t.Errorf("ListRepr(%q) = %s, Python %s", tt.in, got, tt.want)
		}
	}
}
