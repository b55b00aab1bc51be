package llm

import (
	"encoding/json"
	"testing"
)

func TestWithTemperature(t *testing.T) {
	tests := []struct {
		name, in string
		want     any // the temperature in the result; nil means the body is unchanged
	}{
		{"absent", `{"model":"m","messages":[{"role":"user","content":"q"}]}`, 0.0},
		{"empty object", `{}`, 0.0},
		{"leading space", " \n{ \"model\":\"m\"}", 0.0},
		{"present", `{"model":"m","temperature":0.7}`, nil},
		{"quoted in content", `{"model":"m","messages":[{"role":"user","content":"\"temperature\": 5"}]}`, 0.0},
		{"as a value", `{"model":"m","stop":["temperature"]}`, 0.0},
		{"nested key", `{"model":"m","response_format":{"temperature":1}}`, 0.0},
		{"not an object", `["temperature"]`, nil},
		{"not json", `<html>`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := withTemperature([]byte(tt.in))
			// Read with room in front, as the transport does, it gives the same bytes.
			buf := make([]byte, temperatureRoom+len(tt.in))
			copy(buf[temperatureRoom:], tt.in)
			if in := withTemperatureIn(buf, temperatureRoom); string(in) != string(out) {
				t.Errorf("with room in front: got %s, want %s", in, out)
			}
			if tt.want == nil {
				if string(out) != tt.in {
					t.Errorf("got %s, want it unchanged", out)
				}
				return
			}
			var in, got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("result %s is not a JSON object: %v", out, err)
			}
			if err := json.Unmarshal([]byte(tt.in), &in); err != nil {
				t.Fatal(err)
			}
			if got["temperature"] != tt.want {
				t.Errorf("temperature: got %v in %s, want %v", got["temperature"], out, tt.want)
			}
			delete(got, "temperature")
			if a, b := mustJSON(t, in), mustJSON(t, got); a != b {
				t.Errorf("other keys: got %s, want %s", b, a)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
