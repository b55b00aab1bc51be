package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// tricky are strings that need every escape: quotes, backslashes, every control
// character, HTML's characters, invalid UTF-8 (cut short, overlong, a surrogate),
// U+2028/2029, other characters of several bytes, and each at offsets across the
// eight-byte words the scan reads.
var tricky = func() []string {
	var ctl strings.Builder
	for c := range 0x20 {
		ctl.WriteByte(byte(c))
	}
	return []string{
		"", `quote " and \ backslash`, "tab\tnew\nline\rcr\b\f", ctl.String() + "\x7f", "<html>&amp;</html>",
		"émoji 🚀 ünïcode 日本語", "bad \xff utf8 \xc3", "\xe2\x82", "over\xc0\xaflong", "sur\xed\xa0\x80rogate",
		"line\u2028sep\u2029", "é\u2028\u2029\u2027\u202a", "\ufffd", "\"", "\\", "\n", "é", "\xff", "\xff\xfe",
		"1234567\n", "\n1234567", "12345678\"", "123456789\u2028", "1234567\xe2\x80\xa8", "1234567<", "1234567&8>",
		"Thought: I need to search <b>&</b>.\nAction: Search[\"x\"]\n", "\U0001F600 emoji \xc3",
		strings.Repeat("plain ascii words ", 5), strings.Repeat("日本\t", 9),
	}
}()

// encodingJSON is what encoding/json writes for s, with or without HTML escaping.
func encodingJSON(t testing.TB, s string, html bool) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// checkString holds both appenders, and the escapers between the quotes, to
// encoding/json for s.
func checkString(t testing.TB, s string) {
	t.Helper()
	for _, html := range []bool{false, true} {
		want := encodingJSON(t, s, html)
		appendString, appendEscaped := AppendString, AppendEscaped
		if html {
			appendString, appendEscaped = AppendStringHTML, AppendEscapedHTML
		}
		if got := appendString([]byte("prefix"), s); string(got) != "prefix"+want {
			t.Fatalf("%q (html %v): got %s, want %s", s, html, got[len("prefix"):], want)
		}
		if got := appendEscaped(nil, s); `"`+string(got)+`"` != want {
			t.Fatalf("%q (html %v): escaped %s, want %s", s, html, got, want)
		}
	}
}

// The appenders write encoding/json's bytes, with HTML escaping and without, for every
// byte, every pair of bytes, the tricky strings and random strings of tricky bytes at
// lengths around the eight-byte words they scan.
func TestAppendStringIsEncodingJSON(t *testing.T) {
	for c := range 256 {
		checkString(t, string([]byte{byte(c)}))
		for d := range 256 {
			checkString(t, string([]byte{byte(c), byte(d)}))
		}
	}
	for _, s := range tricky {
		checkString(t, s)
	}
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "<", ">", "&", "é", "日", "🚀",
		"\u2028", "\u2029", "\ufffd", "\xff", "\xe2", "\x80", "\xe2\x80", "\xf0\x9f", "\xed\xa0\x80", "\xc0\xaf"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for n := r.IntN(40); b.Len() < n; {
			if r.IntN(3) == 0 {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			} else {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
		}
		checkString(t, b.String())
	}
}

// A string escaped piece by piece, cut next to ASCII bytes, is the string escaped whole.
func TestEscapedCutAtASCII(t *testing.T) {
	for _, s := range tricky {
		for cut := 0; cut <= len(s); cut++ {
			if cut > 0 && cut < len(s) && s[cut-1] >= 0x80 && s[cut] >= 0x80 {
				continue // inside a character, or between two of several bytes
			}
			for _, html := range []bool{false, true} {
				whole := appendEscaped(nil, s, html)
				if parts := appendEscaped(appendEscaped(nil, s[:cut], html), s[cut:], html); !bytes.Equal(parts, whole) {
					t.Fatalf("%q cut at %d (html %v): %s, want %s", s, cut, html, parts, whole)
				}
			}
		}
	}
}

// FuzzAppendString: the appenders write what encoding/json writes, for any bytes.
func FuzzAppendString(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkString(t, s) })
}

// AppendFloat writes encoding/json's float64 on the boundaries of its two layouts,
// signed zeros, extremes and random bit patterns; Finite is what encoding/json accepts.
func TestAppendFloatIsEncodingJSON(t *testing.T) {
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.1 + 0.2, 1.0 / 3, 1e-6, 1e-7, 9.99e-7, 9.999999e-7, 1e20, 1e21,
		9.99e20, 1.5e300, -1.5e-7, 0.00125, 1e-9, 2e-9, math.MaxFloat64, math.SmallestNonzeroFloat64, -math.MaxFloat64,
		123456789.125, 1 << 53}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		fs = append(fs, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(50)-25)))
	}
	for _, f := range fs {
		want, err := json.Marshal(f)
		if Finite(f) != (err == nil) {
			t.Fatalf("%v: Finite %v, json.Marshal's error %v", f, Finite(f), err)
		}
		if err != nil {
			continue
		}
		if got := AppendFloat([]byte("x"), f); string(got) != "x"+string(want) {
			t.Fatalf("%v: got %s, want %s", f, got[1:], want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if Finite(f) {
			t.Errorf("%v: finite", f)
		}
	}
}

// Plain and PlainHTML are whether encoding/json writes a string as it is between
// quotes, without and with HTML escaping, and nothing but ASCII, for every byte and the
// tricky strings.
func TestPlain(t *testing.T) {
	strs := append([]string{"search", "web_search", "Finish[answer]", "a & b", "x\x7fy"}, tricky...)
	for c := range 256 {
		strs = append(strs, string([]byte{'f', byte(c)}))
	}
	for _, s := range strs {
		ascii := !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 })
		for _, html := range []bool{false, true} {
			plain := Plain
			if html {
				plain = PlainHTML
			}
			if got, want := plain(s), ascii && encodingJSON(t, s, html) == `"`+s+`"`; got != want {
				t.Errorf("%q (html %v): plain %v, want %v", s, html, got, want)
			}
		}
	}
}
