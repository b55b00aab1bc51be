package export

import (
	"bytes"
	"encoding/json"
	"iter"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/jsonenc"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// trickyStrings need every escape the row appenders write: quotes, backslashes, every
// control character, DEL, HTML, invalid UTF-8 (a lone byte, a sequence cut short, an
// overlong form, a surrogate), U+2028 and U+2029, U+FFFD itself, two-, three- and
// four-byte characters, at lengths around the appender's eight-byte words.
var trickyStrings = func() []string {
	var ctl strings.Builder
	for c := range 0x20 {
		ctl.WriteByte(byte(c))
	}
	return []string{
		`quote " and \ backslash`, "tab\tnew\nline\rcr\b\f", ctl.String() + "\x7f", "<html>&amp;</html>",
		"émoji 🚀 ünïcode 日本語", "bad \xff utf8 \xc3", "\xe2\x82", "over\xc0\xaflong", "sur\xed\xa0\x80rogate",
		"line\u2028sep\u2029", "\ufffd", "\"", "\\", "\n", "é", "\xff", "1234567\n", "12345678\"", "123456789\u2028",
		strings.Repeat("plain ascii words ", 5), strings.Repeat("日本\t", 9),
	}
}()

// rowEpisodes are episodes of every shape the JSONL formats meet: the synthetic stream,
// the full record, games with rewards, metered calls (usage, cost, log-probabilities,
// token ids), tools-format episodes with invalid calls, reasoning, masked steps, an
// invalid action, CoT answers, and episodes whose every text holds a tricky string.
func rowEpisodes() []pipeline.Episode {
	eps := []pipeline.Episode{episodetest.Small(), episodetest.Full(), metered()}
	for i := range 24 {
		eps = append(eps, episodetest.Synth(i), episodetest.Distinct(i, 18))
	}
	eps = append(eps, interchangeKept()...)
	eps = append(eps, gameEpisodes()...)
	for ep, err := range toolsFormatEpisodes(8)() {
		if err == nil {
			eps = append(eps, ep)
		}
	}
	for ep, err := range reasoningEpisodes(6)() {
		if err == nil {
			eps = append(eps, ep)
		}
	}
	for i, s := range trickyStrings {
		ep := episodetest.Synth(100 + i)
		ep.Steps = slices.Clone(ep.Steps)
		ep.ID += s
		ep.RunID, ep.Policy, ep.Question = s, s, "Q "+s
		ep.Answer, ep.Prediction = s, s
		for j := range ep.Steps {
			st := &ep.Steps[j]
			st.Thought += tricky(i + j)
			st.Observation = tricky(i+j+1) + st.Observation
			st.Reasoning = tricky(i + j + 2)
			if st.ActionType != pipeline.ActionFinish {
				st.Argument += tricky(i + j + 3)
				st.Action = "Search[" + st.Argument + "]"
				st.ActionType = pipeline.ActionSearch
			}
		}
		last := &ep.Steps[len(ep.Steps)-1]
		last.Argument, last.Action = s, "Finish["+s+"]"
		if i%2 == 0 {
			ep.MaskedSteps = []pipeline.MaskedStep{{Step: 1, Code: "repeated_search"}}
		}
		if i%3 == 0 {
			r := float64(i) / 7
			ep.Reward = &r
		}
		eps = append(eps, ep)
	}
	return eps
}

func tricky(i int) string { return trickyStrings[i%len(trickyStrings)] }

// rowExamples renders rowEpisodes in every view that holds each, under render options
// that change the rows (system message, trained observations, each reasoning mode), with
// the interchange steps laid out ahead (as the export does for adp with atif) or not.
func rowExamples(t *testing.T) []Example {
	t.Helper()
	opts := []RenderOptions{{}, {System: "Be <brief> & \"exact\".\n\t" + tricky(3), TrainObservations: true},
		{Reasoning: ReasoningInline}, {Reasoning: ReasoningDrop, System: "s"}, {Reasoning: ReasoningKeep, TrainObservations: true}}
	var exs []Example
	for i, ep := range rowEpisodes() {
		for _, view := range Views {
			if !InView(&ep, view) {
				continue
			}
			ro := opts[(i+len(exs))%len(opts)]
			ex, err := Render(ep, view, ro)
			if err != nil {
				t.Fatalf("render %s in %s: %v", ep.ID, view, err)
			}
			ex.Split = []string{"train", "validation", tricky(i)}[i%3]
			if i%2 == 0 {
				ex.interchange = interchangeSteps(&ex)
			}
			exs = append(exs, ex)
		}
	}
	return exs
}

// rowOptions are line options that change the rows, consistent with the rendering or not.
var rowOptions = []lineOptions{
	{},
	{Weights: true, ObservationRole: true},
	{System: "Be <brief>.\n" + tricky(5), Weights: true, TrainObservations: true, Reasoning: ReasoningInline},
	{ObservationRole: true, Reasoning: ReasoningKeep, System: "s"},
}

// encodedRows is what the encoders write for format's structs: goccy's (the export's
// before the row appenders) and encoding/json's, without HTML escaping.
func encodedRows(t *testing.T, format string, ex *Example, o lineOptions) (goccy, std []byte) {
	t.Helper()
	var g bytes.Buffer
	e, err := newJSONLEncoder(&g, "none", jsonlFormats[format], nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.write(ex); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	var s bytes.Buffer
	enc := json.NewEncoder(&s)
	enc.SetEscapeHTML(false)
	for _, row := range jsonlFormats[format](ex, o) {
		if err := enc.Encode(row); err != nil {
			t.Fatal(err)
		}
	}
	return g.Bytes(), s.Bytes()
}

// TestRowAppendersMatchEncoders: every row appender writes, for examples of every shape
// and strings that need every escape, the bytes that github.com/goccy/go-json's encoder
// (what the export wrote before) and encoding/json write for the format's structs, and
// counts the same rows; it never falls back to the structs on these examples. One
// writer writes every example, as an encoder does.
func TestRowAppendersMatchEncoders(t *testing.T) {
	exs := rowExamples(t)
	if len(exs) < 150 {
		t.Fatalf("only %d examples", len(exs))
	}
	for format, rows := range rowAppenders {
		t.Run(format, func(t *testing.T) {
			for _, o := range rowOptions {
				w := newRowWriter(o) // one writer for every example, as an encoder has
				for i := range exs {
					ex := &exs[i]
					w.start(ex)
					got, n, ok := rows(w, []byte("kept"))
					if !ok {
						t.Fatalf("%s (%s view): the appender gave up", ex.ID, ex.View)
					}
					goccy, std := encodedRows(t, format, ex, o)
					if !bytes.Equal(goccy, std) {
						t.Fatalf("%s (%s view): goccy and encoding/json differ:\n%s\n%s", ex.ID, ex.View, goccy, std)
					}
					if !bytes.HasPrefix(got, []byte("kept")) {
						t.Fatalf("%s (%s view): the appender overwrote what was before", ex.ID, ex.View)
					}
					if got = got[len("kept"):]; !bytes.Equal(got, goccy) {
						t.Fatalf("%s (%s view), %+v:\n got %q\nwant %q", ex.ID, ex.View, o, got, goccy)
					}
					if want := bytes.Count(goccy, []byte("\n")); n != want {
						t.Fatalf("%s (%s view): %d rows, want %d", ex.ID, ex.View, n, want)
					}
				}
			}
		})
	}
	for format := range jsonlFormats {
		if _, ok := rowAppenders[format]; !ok && format != ChatTextFormat {
			t.Errorf("format %s has no row appender", format)
		}
	}
}

// TestRowAppendersFallBack: what an appender does not write as the encoders do (a reward
// or a log-probability they refuse, raw arguments they would compact, tools of the
// example's own, a function name json.Marshal escapes) makes it give up, and jsonlEncoder
// then writes what the encoder writes, or fails as it does.
func TestRowAppendersFallBack(t *testing.T) {
	base, err := Render(metered(), ViewReAct, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nan, inf := math.NaN(), math.Inf(-1)
	cases := []struct {
		name    string
		formats []string
		change  func(ex *Example)
		fails   bool // the encoders refuse the row
	}{
		{"NaN reward", []string{"adp", "atif"}, func(ex *Example) { ex.Reward = &nan }, true},
		{"-Inf EM", []string{"atif"}, func(ex *Example) { ex.EM = inf }, true},
		{"NaN log-probability", []string{"atif"}, func(ex *Example) {
			ex.src = slices.Clone(ex.src)
			ex.src[0].Calls = slices.Clone(ex.src[0].Calls)
			ex.src[0].Calls[0].Logprobs = []float64{-1, nan}
		}, true},
		{"arguments with spaces", []string{"adp", "atif"}, func(ex *Example) {
			ex.interchange = interchangeSteps(ex)
			c := *ex.interchange[0].Call
			c.Arguments = `{"entity": "Oslo museum"}`
			ex.interchange[0].Call = &c
		}, false},
		{"arguments that are no JSON", []string{"adp", "atif"}, func(ex *Example) {
			ex.interchange = interchangeSteps(ex)
			c := *ex.interchange[0].Call
			c.Arguments = "{\"entity\":\"Oslo\tmuseum\"}"
			ex.interchange[0].Call = &c
		}, true},
		{"tools of its own", []string{"atif"}, func(ex *Example) { ex.Tools = slices.Clone(ex.Tools) }, false},
		{"a name to escape", []string{"sharegpt-tools"}, func(ex *Example) {
			ex.ToolMessages = slices.Clone(ex.ToolMessages)
			m := &ex.ToolMessages[1]
			m.ToolCalls = []ToolCall{{ID: "x", Name: "a<b>", Arguments: `{}`}}
		}, false},
	}
	for _, tc := range cases {
		for _, format := range tc.formats {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				ex := base
				ex.Split = "train"
				tc.change(&ex)
				w := newRowWriter(lineOptions{})
				w.start(&ex)
				if _, _, ok := rowAppenders[format](w, nil); ok {
					t.Fatal("the appender wrote the row")
				}
				var got bytes.Buffer
				e, err := newJSONLEncoder(&got, "none", jsonlFormats[format], rowAppenders[format], lineOptions{})
				if err != nil {
					t.Fatal(err)
				}
				_, _, gerr := e.write(&ex)
				if tc.fails {
					if gerr == nil {
						t.Fatalf("wrote %s, want the encoder's error", got.Bytes())
					}
					return
				}
				if gerr != nil {
					t.Fatal(gerr)
				}
				if want, _ := encodedRows(t, format, &ex, lineOptions{}); !bytes.Equal(got.Bytes(), want) {
					t.Fatalf("got  %s\nwant %s", got.Bytes(), want)
				}
			})
		}
	}
}

// TestEscapedTextSpans: a part of a text between two cuts, taken from the text escaped
// once, is the part escaped on its own, for cuts anywhere in texts of tricky bytes (a cut
// inside a character of several bytes, or between two of them, is not kept).
func TestEscapedTextSpans(t *testing.T) {
	alphabet := []string{"a", "\n", "\"", "\x00", "é", "日", "🚀", "\u2028", "\xff", "\xe2", "\x80", "\xe2\x80", "\xf0\x9f"}
	r := rand.New(rand.NewPCG(5, 6))
	var et escapedText
	spans := 0
	for range 5000 {
		var b strings.Builder
		for n := r.IntN(30); b.Len() < n; {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		text := b.String()
		var cuts []int
		for c := 0; c <= len(text); c++ {
			if r.IntN(3) == 0 {
				cuts = append(cuts, c)
			}
		}
		et.fill(text, cuts)
		if want := jsonenc.AppendEscaped(nil, text); !bytes.Equal(et.esc, want) {
			t.Fatalf("%q with cuts %v: escaped %q, want %q", text, cuts, et.esc, want)
		}
		for _, a := range append(cuts, 0) {
			for _, b := range append(cuts, len(text)) {
				if a > b {
					continue
				}
				got, ok := et.span(a, b)
				if !ok {
					continue
				}
				spans++
				if want := jsonenc.AppendEscaped(nil, text[a:b]); !bytes.Equal(got, want) {
					t.Fatalf("%q cut at %v: [%d:%d] is %q, want %q", text, cuts, a, b, got, want)
				}
			}
		}
	}
	if spans < 10000 {
		t.Fatalf("only %d spans kept", spans)
	}
}

// TestToolSetEncodings: the tools the appenders copy into every row are what the
// encoders write for the definitions (openai-tools, atif) and for their JSON text
// (hf-tools, sharegpt-tools), for every task and view.
func TestToolSetEncodings(t *testing.T) {
	for _, task := range []string{pipeline.TaskHotpotQA, pipeline.TaskFEVER, pipeline.TaskWebShop, pipeline.TaskALFWorld} {
		for _, view := range Views {
			ts := toolsOf(task, view)
			var defs, text bytes.Buffer
			for _, c := range []struct {
				v   any
				out *bytes.Buffer
			}{{ts.defs, &defs}, {ts.json, &text}} {
				enc := json.NewEncoder(c.out)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(c.v); err != nil {
					t.Fatal(err)
				}
			}
			if ts.encoded+"\n" != defs.String() || ts.quoted+"\n" != text.String() {
				t.Errorf("%s, %s: encoded %s quoted %s, want %s and %s", task, view, ts.encoded, ts.quoted, defs.String(), text.String())
			}
			if len(ts.defs) == 0 || !tool.ValidFor(task, ts.defs[0].Function.Name) {
				t.Errorf("%s, %s: no tools", task, view)
			}
		}
	}
}

// TestRunWritesWhatTheEncodersWrote exports episodes of every shape to every JSONL
// format in every view, under options that change the rows and with shards, once
// through the row appenders and once through goccy's encoder of the row structs (as the
// export wrote before them), and finds the same files: names, rows, bytes and sha256.
func TestRunWritesWhatTheEncodersWrote(t *testing.T) {
	var eps []pipeline.Episode
	for ep, err := range episodetest.Stream(200, nil)() {
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	for _, stream := range []func() iter.Seq2[pipeline.Episode, error]{toolsFormatEpisodes(12), reasoningEpisodes(12)} {
		for ep, err := range stream() {
			if err != nil {
				t.Fatal(err)
			}
			eps = append(eps, ep)
		}
	}
	eps = append(append(eps, gameEpisodes()...), interchangeKept()...)
	var formats []string
	for f := range rowAppenders {
		formats = append(formats, f)
	}
	slices.Sort(formats)
	configs := []pipeline.ExportConfig{
		{Formats: formats, Views: Views, System: "Answer <briefly> & \"well\".\n" + tricky(7), Weights: true,
			Reasoning: ReasoningInline, ValidationFraction: 0.2, SplitSeed: 3},
		{Formats: formats, Views: Views, ObservationRole: true, Weights: true, Reasoning: ReasoningKeep, ShardRows: 7,
			ValidationFraction: 0.1, SplitSeed: 4},
	}
	export := func(cfg pipeline.ExportConfig) []File {
		t.Helper()
		res, err := Run(t.Context(), RunOptions{Config: cfg, Dir: filepath.Join(t.TempDir(), "export"),
			Kept: func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(eps) }})
		if err != nil {
			t.Fatal(err)
		}
		return res.Files
	}
	for i, cfg := range configs {
		got := export(cfg)
		appenders := rowAppenders
		rowAppenders = map[string]rowAppender{}
		want := export(cfg)
		rowAppenders = appenders
		if len(got) < 2*len(formats) || !slices.Equal(got, want) {
			t.Errorf("config %d: the files differ:\n got %v\nwant %v", i, got, want)
		}
	}
}
