package llmtest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/reactgen/reactgen/internal/llm"
)

// slowDecode is decodeRequest's encoding/json path alone.
func slowDecode(raw []byte) (Req, error) {
	var wr wireRequest
	if err := json.Unmarshal(raw, &wr); err != nil {
		return Req{}, err
	}
	r := Req{
		Model: wr.Model, Messages: wr.Messages, Stop: stringOrList(wr.Stop),
		Temperature: wr.Temperature, TopP: wr.TopP, N: wr.N, Seed: wr.Seed, MaxTokens: wr.MaxTokens,
	}
	if p := stringOrList(wr.Prompt); len(p) > 0 {
		r.Prompt = p[0]
	}
	return r, nil
}

// The direct path must read every body it accepts exactly as encoding/json does.
func TestDecodeSimpleMatchesEncodingJSON(t *testing.T) {
	seed := 7
	marshalled, err := json.Marshal(map[string]any{
		"model": "m", "temperature": 0, "top_p": 0.9, "max_tokens": 77, "n": 3, "seed": seed, "stop": []string{"\nObservation", "]]"},
		"messages": []llm.Message{{Role: "system", Content: "Solve it.\n\nQuestion: \"a\" \\ b\tc/d\r\n"}, {Role: "user", Content: "Question: <x> & y"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	bodies := append([]string{string(marshalled)}, decodeBodies...)
	for _, body := range bodies {
		checkDecode(t, body)
	}
	// The bodies the OpenAI adapter sends take the direct path.
	for _, body := range bodies[:4] {
		if _, ok := decodeSimple([]byte(body)); !ok {
			t.Errorf("%s: took the encoding/json path", body)
		}
	}
}

// FuzzDecodeSimple compares the two paths on any body: go test -fuzz FuzzDecodeSimple.
func FuzzDecodeSimple(f *testing.F) {
	for _, b := range decodeBodies {
		f.Add(b)
	}
	f.Fuzz(checkDecode)
}

func checkDecode(t *testing.T, body string) {
	t.Helper()
	got, ok := decodeSimple([]byte(body))
	want, err := slowDecode([]byte(body))
	if err != nil {
		if ok {
			t.Errorf("%s: direct path accepted %+v, encoding/json failed: %v", body, got, err)
		}
		return
	}
	if ok && !reflect.DeepEqual(got, want) {
		t.Errorf("%s: direct path got %+v, want %+v", body, got, want)
	}
	all, err := decodeRequest([]byte(body))
	if err != nil || !reflect.DeepEqual(all, want) {
		t.Errorf("%s: decodeRequest got %+v, %v, want %+v", body, all, err, want)
	}
}

var decodeBodies = []string{
	`{"temperature":0,"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":256,"top_p":1,"stream":false,"stop":["\nObservation"],"seed":3}`,
	`{"model":"m","messages":[{"role":"user","content":"q"}]}`,
	`{"model":"m","messages":[]}`,
	`{"model":"m","messages":[{}]}`,
	`{}`,
	` { "model" : "m" , "prompt" : "Question: x" , "stop" : "]" } `,
	`{"model":"m","prompt":["a","b"],"stop":[]}`,
	`{"model":"m","prompt":[]}`,
	`{"model":"m","prompt":[1]}`,
	`{"model":"m","stop":null}`,
	`{"model":"m","temperature":0.7,"top_p":1e0,"seed":-3,"n":1}`,
	`{"model":"m","temperature":-0.0,"max_tokens":0}`,
	`{"model":"m","n":2.5}`,
	`{"model":"m","n":1e2}`,
	`{"model":"m","n":99999999999999999999}`,
	`{"model":"m","temperature":1e400}`,
	`{"model":"m","temperature":01}`,
	`{"model":"m","temperature":1.}`,
	`{"model":"m","temperature":+1}`,
	`{"model":"m","temperature":.5}`,
	`{"model":"m","temperature":"0"}`,
	`{"Model":"m"}`,
	`{"model":"m","stream":false}`,
	`{"model":"m","model":"n"}`,
	`{"model":"m","messages":[{"role":"user","content":"a"}],"messages":[{"role":"system","content":"b"}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":"q","name":"x"}]}`,
	`{"model":"m\u00e9"}`,
	`{"model":"\ud83d\ude00 \ud83d \ude00 \ud83dx \u12"}`,
	`{"model":"\ud83d\ude00 \ud83d \ude00 \ud83dx"}`,
	`{"model":"\ud83d\u0041"}`,
	`{"model":"\u004G"}`,
	`{"model":"\u00"}`,
	`{"model":"\ud83d\"}`,
	"{\"model\":\"a\xe2\x82b \xf0\x9f\x98\x80\"}",
	"{\"model\":\"\\n\xff\"}",
	`{"model":"mé"}`,
	"{\"model\":\"m\x01\"}",
	"{\"model\":\"m\xff\"}",
	`{"model":"a\qb"}`,
	`{"model":"m"`,
	`{"model":"m",}`,
	`{"model":"m"} x`,
	`{"model":"m"}{}`,
	`[]`,
	``,
	`null`,
	`{"messages":[{"role":"user","content":"q"},]}`,
	`{"messages":[{"role":"user" "content":"q"}]}`,
	`{"model":"m","seed":null}`,
}
