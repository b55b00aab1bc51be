package export

import "github.com/reactgen/reactgen/internal/jsonenc"

// The JSONL rows are appended by hand (rowAppenders), byte for byte what
// github.com/goccy/go-json's encoder writes for the row structs without HTML escaping,
// which is what encoding/json writes (TestRowAppendersMatchEncoders): strings escape '"',
// '\\' and the control characters (\b, \f, \n, \r, \t, the others as \u00XX), replace each
// byte of invalid UTF-8 by \ufffd and escape U+2028 and U+2029; floats are written as
// encoding/json writes float64 (jsonenc's AppendString, AppendEscaped and AppendFloat).
// What these functions do not write exactly (a float that is not finite, which the
// encoders refuse; raw JSON that is not compact ASCII) makes the appender give up, and
// the row is encoded from its struct instead.

// appendFloat appends f as encoding/json writes a float64, and false for a float it
// refuses (NaN, ±Inf).
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if !jsonenc.Finite(f) {
		return dst, false
	}
	return jsonenc.AppendFloat(dst, f), true
}

// appendBool appends true or false.
func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// rawAsIs reports whether raw JSON text is written by the encoders as it is: no
// space, tab or line break outside its strings (the encoders compact raw JSON) and no
// control character inside them (they refuse that). Other bytes, invalid UTF-8 included,
// the encoders copy. It does not check that s is JSON: the arguments of a call are
// (Validate).
func rawAsIs(s string) bool {
	if s == "" {
		return false // the encoders refuse an empty raw message
	}
	in := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < ' ':
			return false
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && c == ' ':
			return false
		}
	}
	return true
}
