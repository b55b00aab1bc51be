package fastjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

type rec struct {
	Name  string   `json:"name"`
	Steps []string `json:"steps,omitempty"`
	N     int      `json:"n"`
}

// TestEscapedStringsAgree decodes strings full of escapes, the input that made
// v0.10.x of the library trip checkptr under -race, and checks the result against
// encoding/json's. Run under `make race` it is the check that the pinned version is safe.
func TestEscapedStringsAgree(t *testing.T) {
	lines := []string{
		`{"name":"caf\u00e9 \"quoted\" \\ back\nslash","steps":["a\tb","\ud83d\ude00","x\/y"],"n":3}`,
		`{"name":"` + string(bytes.Repeat([]byte(`\u0041\n`), 500)) + `","n":-1}`,
		`{"name":"","steps":[],"n":0}`,
	}
	for _, line := range lines {
		var got, want rec
		if err := Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("Unmarshal(%.40q): %v", line, err)
		}
		if err := json.Unmarshal([]byte(line), &want); err != nil {
			t.Fatalf("encoding/json(%.40q): %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Unmarshal(%.40q) = %+v, encoding/json gives %+v", line, got, want)
		}
	}
}

func TestEncoderWritesWhatEncodingJSONWrites(t *testing.T) {
	v := rec{Name: "<a&b> \u2028", Steps: []string{"x"}, N: 7}
	var buf bytes.Buffer
	if err := NewEncoder(&buf).Encode(v); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(v)
	if got := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(got, want) {
		t.Errorf("Encode = %s, encoding/json gives %s", got, want)
	}
}
