package pipeline_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestDecodeEpisodeMatchesEncodingJSON holds pipeline.DecodeEpisode to json.Unmarshal (see
// checkDecode) on lines written by json.Marshal and on lines no writer produces.
func TestDecodeEpisodeMatchesEncodingJSON(t *testing.T) {
	full, err := json.Marshal(episodetest.Full())
	if err != nil {
		t.Fatal(err)
	}
	minimal, _ := json.Marshal(pipeline.Episode{ID: "x"})
	noSteps, _ := json.Marshal(pipeline.Episode{ID: "x", Steps: []pipeline.Step{}})
	f := string(full)
	cases := map[string]string{
		"full":                f,
		"minimal":             string(minimal),
		"empty steps":         string(noSteps),
		"white space":         " { \"id\" : \"x\" , \"steps\" : [ { \"thought\" : \"a\" } , { } ] , \"em\" : 1.5e-3 }\n",
		"empty object":        `{}`,
		"null steps":          `{"id":"x","steps":null}`,
		"null string":         `{"id":null}`,
		"null call":           `{"samples":[{"call":null}]}`,
		"unknown key":         `{"id":"x","extra":{"a":[1,2]}}`,
		"other case key":      `{"ID":"x","Steps":[{"Thought":"t"}]}`,
		"escaped key":         `{"\u0069d":"x"}`,
		"repeated key":        `{"id":"x","id":"y"}`,
		"repeated steps":      `{"steps":[{"thought":"a","action":"b"}],"steps":[{"thought":"c"}]}`,
		"int as float":        `{"attempt":1.0}`,
		"int exponent":        `{"attempt":1e2}`,
		"int overflow":        `{"seed":9223372036854775808}`,
		"negative zero":       `{"attempt":-0,"em":-0}`,
		"float overflow":      `{"f1":1e400}`,
		"leading zero":        `{"attempt":01}`,
		"bad fraction":        `{"em":1.}`,
		"plus sign":           `{"em":+1}`,
		"string as int":       `{"attempt":"1"}`,
		"int as string":       `{"id":1}`,
		"bool as string":      `{"finished":"true"}`,
		"bad literal":         `{"finished":tru}`,
		"surrogate pair":      `{"question":"\ud83d\ude00"}`,
		"lone surrogate":      `{"question":"\ud83d x"}`,
		"escapes":             `{"question":"\"\\\/\b\f\n\r\t\u00e9\u0000"}`,
		"bad escape":          `{"question":"\x"}`,
		"bad unicode escape":  `{"question":"\u12g4"}`,
		"short unicode":       `{"question":"\u12"}`,
		"invalid utf-8":       "{\"question\":\"a\xffb\"}",
		"invalid utf-8 esc":   "{\"question\":\"a\xff\\nb\"}",
		"control character":   "{\"question\":\"a\x01b\"}",
		"trailing data":       `{"id":"x"} {}`,
		"trailing comma":      `{"id":"x",}`,
		"truncated":           f[:len(f)/2],
		"not an object":       `["id"]`,
		"empty":               ``,
		"array trailing":      `{"steps":[{},]}`,
		"missing colon":       `{"id" "x"}`,
		"number key":          `{1:"x"}`,
		"usage object":        `{"usage":{"prompt_tokens":3,"cost_usd":0.5}}`,
		"usage wrong":         `{"usage":[]}`,
		"calls in step":       `{"steps":[{"calls":[{"usage":{"total_tokens":7}},{"cached":false}]}]}`,
		"huge int in float":   `{"em":123456789012345678901234567890}`,
		"deep unknown nested": `{"steps":[{"calls":[{"other":1}]}]}`,
		"null tool call":      `{"steps":[{"tool_call":null}]}`,
		"tool call unknown":   `{"steps":[{"tool_call":{"id":"c","type":"function"}}]}`,
		"tool calls in call":  `{"steps":[{"calls":[{"tool_calls":[{"name":"search","arguments":"{}"},{}]}]}]}`,
		"tool calls null":     `{"steps":[{"calls":[{"tool_calls":null}]}]}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			checkDecode(t, in)
		})
	}
}

// checkDecode holds pipeline.DecodeEpisode to json.Unmarshal on in: a line pipeline.DecodeEpisode rejects
// gets encoding/json's error; the record encoding/json reads from in, written again by
// json.Marshal (the form every writer of episode files produces), decodes to the same
// record; and so does in itself when it is in that form.
func checkDecode(t *testing.T, in string) {
	t.Helper()
	var want, got pipeline.Episode
	werr := json.Unmarshal([]byte(in), &want)
	gerr := pipeline.DecodeEpisode([]byte(in), &got)
	if gerr != nil && fmt.Sprint(werr) != fmt.Sprint(gerr) {
		t.Fatalf("%q: error %v, encoding/json says %v", in, gerr, werr)
	}
	if werr != nil {
		return
	}
	canon, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(canon) == in && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", in, got, want)
	}
	var again, wantAgain pipeline.Episode
	json.Unmarshal(canon, &wantAgain)
	if err := pipeline.DecodeEpisode(canon, &again); err != nil || !reflect.DeepEqual(again, wantAgain) {
		t.Fatalf("%s as json.Marshal writes it:\n got %+v, %v\nwant %+v", canon, again, err, wantAgain)
	}
}

// FuzzDecodeEpisode is the differential test of pipeline.DecodeEpisode against encoding/json:
// go test -fuzz FuzzDecodeEpisode ./pipeline.
func FuzzDecodeEpisode(f *testing.F) {
	full, _ := json.Marshal(episodetest.Full())
	f.Add(string(full))
	f.Add(`{"id":"x","steps":[{"thought":"a\u00e9\n"}],"em":1e-3}`)
	f.Add(strings.Replace(string(full), `"id"`, `"Id"`, 1))
	f.Add(`{"seed":9223372036854775807,"attempt":-9223372036854775808,"question":"\ud83d\ude00 \ud800"}`)
	f.Fuzz(func(t *testing.T, in string) {
		checkDecode(t, in)
	})
}

func BenchmarkDecodeEpisode(b *testing.B) {
	line, _ := json.Marshal(episodetest.Full())
	for _, bc := range []struct {
		name   string
		decode func([]byte, *pipeline.Episode) error
	}{
		{"pipeline.DecodeEpisode", pipeline.DecodeEpisode},
		{"encoding-json", func(b []byte, ep *pipeline.Episode) error { return json.Unmarshal(b, ep) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				var ep pipeline.Episode
				if err := bc.decode(line, &ep); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
