package envserver

import (
	"testing"

	"github.com/reactgen/reactgen/internal/fastjson"
)

// generalStep is what handleMessage's general path reads from a message: the step's
// action, or an error (not a step, an extra field, a bad action).
func generalStep(msg []byte) (string, bool) {
	var m wsMessage
	if err := fastjson.Unmarshal(msg, &m); err != nil || m == nil {
		return "", false
	}
	var kind string
	if raw, ok := m["type"]; !ok || fastjson.Unmarshal(raw, &kind) != nil || kind != "step" {
		return "", false
	}
	if len(extraFields(m, withData)) > 0 {
		return "", false
	}
	raw, ok := m["data"]
	if !ok {
		return "", false
	}
	action, err := parseAction(raw)
	return action, err == nil
}

// TestPlainStepAgreesWithTheGeneralPath: every message the one-pass reader accepts, the
// general path reads to the same action; the usual spellings of a step are accepted, and
// whatever else is left to the general path (which answers its errors).
func TestPlainStepAgreesWithTheGeneralPath(t *testing.T) {
	for _, c := range []struct {
		msg    string
		accept bool
	}{
		{`{"type":"step","data":{"action":"Search[Marrow Lake]"}}`, true},
		{`{"type": "step", "data": {"action": "Search[Marrow Lake]"}}`, true}, // Python's json.dumps
		{` { "data" : { "action" : "Lookup[lake]" } ,` + "\n\t" + `"type":"step" } ` + "\r\n", true},
		{`{"type":"step","data":{"action":"Finish[caf\u00e9 \"quoted\" \\ back\/slash]"}}`, true},
		{`{"type":"step","data":{"action":"Search[Zürich – Genève]"}}`, true},
		{`{"type":"step","data":{"action":""}}`, true},
		{`{"type":"step","data":{"action":"Search[x]","metadata":{}}}`, false},
		{`{"type":"step","data":{"metadata":{},"action":"Search[x]"}}`, false},
		{`{"type":"step","data":{"action":"Search[x]"},"extra":1}`, false},
		{`{"type":"step","type":"step","data":{"action":"Search[x]"}}`, false},
		{`{"type":"step","data":{"action":"a"},"data":{"action":"b"}}`, false},
		{`{"type":"state"}`, false},
		{`{"type":"reset","data":{"action":"Search[x]"}}`, false},
		{`{"type":"step"}`, false},
		{`{"type":"step","data":{"action":3}}`, false},
		{`{"type":"step","data":{"action":null}}`, false},
		{`{"type":"step","data":{}}`, false},
		{`{"type":"step","data":{"action":"x"}} trailing`, false},
		{`{"type":"step","data":{"action":"x"}`, false},
		{`{"type":"step","data":{"action":"x` + "\x01" + `"}}`, false},
		{`{"type":"step","data":{"action":"` + "\xff" + `"}}`, false},
		{`{"t\u0079pe":"step","data":{"action":"x"}}`, false},
		{`{"type":"st\u0065p","data":{"action":"x"}}`, false},
		{`{"type":"step","data":{"action":"x\"}}`, false},
		{`[]`, false},
		{``, false},
	} {
		got, ok := plainStep([]byte(c.msg))
		if ok != c.accept {
			t.Errorf("%q: accepted %v, want %v", c.msg, ok, c.accept)
		}
		if !ok {
			continue
		}
		want, wok := generalStep([]byte(c.msg))
		if !wok || got != want {
			t.Errorf("%q: one pass reads %q, the general path %q (ok %v)", c.msg, got, want, wok)
		}
	}
}

// FuzzPlainStep: whatever the one-pass reader accepts, the general path reads alike.
func FuzzPlainStep(f *testing.F) {
	f.Add([]byte(`{"type":"step","data":{"action":"Search[Marrow Lake]"}}`))
	f.Add([]byte(`{"data": {"action": "a\\u00e9\"b"}, "type": "step"}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		got, ok := plainStep(msg)
		if !ok {
			return
		}
		if want, wok := generalStep(msg); !wok || got != want {
			t.Errorf("%q: one pass reads %q, the general path %q (ok %v)", msg, got, want, wok)
		}
	})
}
