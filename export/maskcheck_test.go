package export

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestScanMaskLine holds the mask reader to encoding/json: it accepts the lines
// encoding/json reads as an object, reads the same mask fields, and rejects malformed
// lines, with export.train_observations (which decodes the turns' texts) and without
// (which skips them, by the grammar of JSON all the same). (goccy also reads two kinds
// of line that encoding/json refuses and no JSON encoder writes: a raw control character
// inside a string, and a number such as 01.)
func TestScanMaskLine(t *testing.T) {
	tests := []struct {
		name string
		line string
	}{
		{"chat", `{"messages":[{"role":"user","content":"Question: q"},{"role":"assistant","content":"a\n\"b\"","weight":1}]}`},
		{"spaces", ` { "messages" : [ { "role" : "user" , "content" : "x" , "train" : false } ] } `},
		{"escaped role", `{"messages":[{"role":"\u0075ser","content":"Observation: o","train":true}]}`},
		{"escaped key", `{"mess\u0061ges":[{"role":"system","content":"s","weight":null}]}`},
		{"numbers", `{"n":-1.5e+3,"m":0,"messages":[{"role":"assistant","weight":0.25,"x":[1,2,{"y":null}]}]}`},
		{"repeated list", `{"messages":[{"role":"user"}],"messages":[{"role":"assistant"},{"role":"user"}]}`},
		{"repeated field", `{"messages":[{"role":"user","train":true,"train":false}]}`},
		{"null list", `{"messages":null}`},
		{"empty", `{}`},
		{"agentgym", `{"conversations":[{"from":"human","loss":null,"value":"Question: q"},{"from":"gpt","loss":true,"value":"a"}],"item_id":"x"}`},
		{"unicode", `{"messages":[{"role":"user","content":"caf\u00e9 ☕ \ud83d\ude00"}]}`},
		{"trailing data", `{"messages":[]} x`},
		{"two objects", `{}{}`},
		{"unterminated string", `{"messages":[{"role":"user}]}`},
		{"bad escape", `{"messages":[{"role":"\x"}]}`},
		{"bad escape in a text", `{"messages":[{"role":"user","content":"a\x"}]}`},
		{"bad escape in an unknown field", `{"messages":[{"role":"user","name":"\x"}]}`},
		{"unterminated text", `{"messages":[{"role":"user","content":"abc}]}`},
		{"short unicode escape", `{"messages":[{"role":"\u12"}]}`},
		{"missing colon", `{"messages" [{"role":"user"}]}`},
		{"trailing comma", `{"messages":[{"role":"user"},]}`},
		{"bad literal", `{"messages":[{"role":"user","train":tru}]}`},
		{"not an object", `[1,2]`},
		{"empty line", ``},
	}
	type turn struct {
		Role    string           `json:"role"`
		From    string           `json:"from"`
		Content string           `json:"content"`
		Value   string           `json:"value"`
		Weight  *json.RawMessage `json:"weight"`
		Train   *bool            `json:"train"`
		Loss    *bool            `json:"loss"`
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				list     string
				trainObs bool
			}{{"messages", true}, {"conversations", true}, {"messages", false}, {"conversations", false}} {
				list := c.list
				got, err := scanMaskLine([]byte(tt.line), list, c.trainObs, nil)
				// A row is valid when encoding/json reads it as an object.
				var obj map[string]json.RawMessage
				valid := json.Unmarshal([]byte(tt.line), &obj) == nil && obj != nil
				if (err == nil) != valid {
					t.Fatalf("%s: scan error %v, encoding/json reads an object: %v", list, err, valid)
				}
				if err != nil {
					continue
				}
				var ref map[string][]turn
				if err := json.Unmarshal([]byte(tt.line), &ref); err != nil {
					continue // valid JSON of another shape: the mask check rejects it elsewhere
				}
				want := ref[list]
				if len(got) != len(want) {
					t.Fatalf("%s: %d turns, want %d", list, len(got), len(want))
				}
				for i, w := range want {
					role, text := w.Role+w.From, w.Content+w.Value
					train := (w.Train != nil && *w.Train) || (w.Loss != nil && *w.Loss)
					obs := c.trainObs && len(text) >= 13 && text[:13] == "Observation: "
					wt := maskTurn{role: role, weight: w.Weight != nil, train: train, obs: obs}
					if got[i] != wt {
						t.Errorf("%s turn %d: got %+v, want %+v", list, i, got[i], wt)
					}
				}
			}
		})
	}
}

// TestMaskScannerReusesNothing scans rows one after another with one maskScanner, which
// decodes into the same arrays, and checks each row's turns against a fresh scan: a
// field of an earlier row (a weight, train: true, a longer list) never shows in a later.
func TestMaskScannerReusesNothing(t *testing.T) {
	rows := []string{
		`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"Observation: o","train":true},{"role":"assistant","content":"a","weight":1},{"role":"user","content":"x","weight":0}]}`,
		`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`,
		`{"messages":[{"role":"user"},{"role":"assistant","loss":true},{"role":"user"},{"role":"assistant"},{"role":"user","train":false}]}`,
		`{"conversations":[{"from":"human","loss":true,"value":"Observation: o"},{"from":"gpt","loss":true}]}`,
		`{"messages":[{"role":"user"}]}`,
		`{"conversations":[{"from":"human","value":"Observation: p"}]}`,
	}
	for _, list := range []string{"messages", "conversations"} {
		for _, trainObs := range []bool{false, true} {
			s := maskScanner{list: list, trainObs: trainObs}
			for i, row := range rows {
				got, err := s.scan([]byte(row), nil)
				want, werr := scanMaskLine([]byte(row), list, trainObs, nil)
				if err != nil || werr != nil {
					t.Fatalf("row %d: %v, %v", i, err, werr)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s, trainObs %v, row %d: scanned after the rows before it %+v, alone %+v", list, trainObs, i, got, want)
				}
			}
		}
	}
}

// BenchmarkCheckMasks measures the loss-mask re-read of an openai-chat file.
func BenchmarkCheckMasks(b *testing.B) {
	dir := b.TempDir()
	e, err := NewJSONL(dir, "openai-chat", ViewReAct, benchConfig())
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for ep := range benchStream(2000)() {
		ex, err := Render(ep, ViewReAct, RenderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ex.Split = SplitTrain
		if err := e.Write(b.Context(), ex); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	f := e.Files()[0]
	path := dir + "/" + f.Path
	b.SetBytes(f.Bytes)
	for b.Loop() {
		rows, err := checkMasks(path, "openai-chat", false)
		if err != nil || rows != n {
			b.Fatalf("checkMasks: %d rows, %v; want %d", rows, err, n)
		}
	}
}
