package export

import (
	"encoding/json"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
)

// TestChatTemplateTextAndLoss exports with export.chat_template set to TRL's Qwen3
// training template, as a template file and inside a tokenizer_config.json: every
// chat-text row is the hf-tools row rendered by @huggingface/jinja (apply_chat_template's
// way), byte for byte, its loss spans are that rendering's generation spans but the
// masked steps', each span one assistant turn, and n_tokens counts the text.
func TestChatTemplateTextAndLoss(t *testing.T) {
	path := shareddata.Path(t, "chat-templates/trl-qwen3_training.jinja")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := json.Marshal(map[string]any{"chat_template": string(src), "eos_token": "<|im_end|>",
		"bos_token": nil, "pad_token": map[string]any{"content": "<|endoftext|>", "lstrip": false}})
	if err != nil {
		t.Fatal(err)
	}
	tcPath := filepath.Join(t.TempDir(), "tokenizer_config.json")
	if err := os.WriteFile(tcPath, tc, 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 12
	eps, _ := templateEpisodes(n)()
	masked := 0
	for i := range eps {
		if i%3 == 1 && len(eps[i].Steps) > 2 {
			eps[i].MaskedSteps = []pipeline.MaskedStep{{Step: 2, Code: "repeated_search"}}
			masked++
		}
	}
	for _, tpl := range []string{path, tcPath} {
		cfg := pipeline.ExportConfig{Formats: []string{"openai-tools", "arrow-file"}, System: "Use the tools.", ChatTemplate: tpl,
			Views: []string{ViewReAct, ViewAct}, CorrectOnly: true}
		res, dir := runExport(t, cfg, func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(eps) })
		type viewRow struct {
			view string
			row  map[string]any
		}
		var rows []viewRow
		for _, f := range res.Files {
			if f.Format == ChatTextFormat {
				for _, r := range readJSONLRows(t, filepath.Join(dir, f.Path)) {
					rows = append(rows, viewRow{f.View, r})
				}
			}
		}
		if len(rows) != 2*n {
			t.Fatalf("%s: %d chat-text rows, want %d", tpl, len(rows), 2*n)
		}
		// The same examples as hf-tools rows, rendered by @huggingface/jinja.
		var chats []templateRow
		var exs []Example
		for _, ep := range eps {
			for _, v := range []string{ViewReAct, ViewAct} {
				ex, err := Render(ep, v, RenderOptions{System: cfg.System})
				if err != nil {
					t.Fatal(err)
				}
				line, err := json.Marshal(hfToolsLine(&ex, lineOptions{})[0])
				if err != nil {
					t.Fatal(err)
				}
				var row map[string]any
				if err := json.Unmarshal(line, &row); err != nil {
					t.Fatal(err)
				}
				chats = append(chats, toChat(t, "hf-tools", row))
				exs = append(exs, ex)
			}
		}
		js := renderJS(t, map[string]string{"qwen3-training": path}, chats)["qwen3-training"]
		tokens := map[string]int64{}
		spansSeen, maskedSeen := 0, 0
		for i, vr := range rows {
			text, id := vr.row["text"].(string), vr.row["id"].(string)
			k := slices.IndexFunc(exs, func(e Example) bool { return e.ID == id && e.View == vr.view })
			if k < 0 {
				t.Fatalf("row %d: %s (%s) is no example", i+1, id, vr.view)
			}
			r := js[k]
			if r.Error != "" || text != r.Text {
				t.Fatalf("%s row %d: the text is not @huggingface/jinja's rendering of the example's hf-tools row (%s):\n%q\n%q", tpl, i+1, r.Error, text, r.Text)
			}
			if len(r.Spans) != assistantTurns(chats[k]) {
				t.Errorf("row %d: %d generation spans for %d assistant turns", i+1, len(r.Spans), assistantTurns(chats[k]))
			}
			var want [][2]int
			for s, sp := range r.Spans {
				if exs[k].isMasked(s) {
					maskedSeen++
					continue
				}
				want = append(want, [2]int{utf8.RuneCountInString(text[:sp[0]]), utf8.RuneCountInString(text[:sp[1]])})
			}
			var got [][2]int
			for _, x := range vr.row["loss_spans"].([]any) {
				p := x.([]any)
				got = append(got, [2]int{int(p[0].(float64)), int(p[1].(float64))})
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s row %d: loss spans %v, want %v", tpl, i+1, got, want)
			}
			spansSeen += len(got)
			tokens[id+"/"+vr.view] = int64(o200k(t).Count(text))
		}
		if spansSeen == 0 || maskedSeen != 2*masked {
			t.Errorf("%d loss spans, %d masked turns left out; want some, and %d", spansSeen, maskedSeen, 2*masked)
		}
		// n_tokens is the count of the rendered text.
		for _, ex := range readExamples(t, "arrow-file", filepath.Join(dir, "dataset.arrow")) {
			if want := tokens[ex.ID+"/"+ex.View]; ex.Tokens != want {
				t.Errorf("%s: example %s (%s) has %d tokens, its chat text %d", tpl, ex.ID, ex.View, ex.Tokens, want)
			}
		}
	}
}

// TestChatTemplateRefused: a template that cannot train a ReAct trajectory whole is
// refused before anything is written, naming the key, what it lacks and what works:
// Llama 3.1's and Hermes' (no thought beside a call), Qwen2.5's training template
// (string arguments quoted), Qwen3's own (no generation spans); and chat-text without a
// template.
func TestChatTemplateRefused(t *testing.T) {
	for file, want := range map[string]string{
		"trl-llama3_1.jinja":                   "drops an assistant turn's content",
		"vllm-tool_chat_template_hermes.jinja": "drops an assistant turn's content",
		"trl-qwen2_5_training.jinja":           "quoted string",
		"trl-qwen3.jinja":                      "no {% generation %} tags",
	} {
		path := shareddata.Path(t, "chat-templates/"+file)
		cfg := pipeline.ExportConfig{Formats: []string{"hf-tools"}, ChatTemplate: path, CorrectOnly: true}
		_, err := Run(t.Context(), RunOptions{Config: cfg, Dir: filepath.Join(t.TempDir(), "export"), Kept: episodetest.Stream(3, nil)})
		var ce *pipeline.ConfigError
		if !errors.As(err, &ce) || ce.Key != "export.chat_template" || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "What works") {
			t.Errorf("%s: got %v, want a config error on export.chat_template saying %q and what works", file, err, want)
		}
	}
	cfg := pipeline.ExportConfig{Formats: []string{ChatTextFormat}, CorrectOnly: true}
	_, err := Run(t.Context(), RunOptions{Config: cfg, Dir: filepath.Join(t.TempDir(), "export"), Kept: episodetest.Stream(3, nil)})
	if ce := (*pipeline.ConfigError)(nil); !errors.As(err, &ce) || !strings.Contains(err.Error(), "export.chat_template") {
		t.Errorf("chat-text without a template: got %v", err)
	}
}
