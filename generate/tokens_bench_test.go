package generate

import (
	"strings"
	"testing"

	"github.com/reactgen/reactgen/data"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/internal/jsonltest"
	"github.com/reactgen/reactgen/internal/shareddata"
)

// BenchmarkEpisodeTokens measures what one ReAct episode sends and receives, in
// o200k_base tokens, for the cost estimate in docs/scale.md: reactgen's chat requests
// with its six HotpotQA exemplars, replayed over the 500 real GPT-4 HotpotQA trajectories
// of FireAct (their thoughts, actions and search-engine observations). It reports per
// episode the requests, the prompt tokens, the prompt tokens of the shared exemplar
// prefix (what a server's prompt cache can serve), and the completion tokens. It skips
// when ../shared/data is absent; run it with -benchtime 1x.
func BenchmarkEpisodeTokens(b *testing.B) {
	path := shareddata.Path(b, "fireact/gpt_format_hotpotqa.jsonl")
	set, err := prompt.Load("", "hotpotqa", data.FS)
	if err != nil {
		b.Fatal(err)
	}
	set, err = set.For(prompt.MethodReAct)
	if err != nil {
		b.Fatal(err)
	}
	layout, err := prompt.NewLayout(set, prompt.FormatChat)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := bpe.Open(bpe.Default)
	if err != nil {
		b.Fatal(err)
	}
	type episode struct {
		question string
		turns    []prompt.Turn
	}
	var eps []episode
	type record struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	jsonltest.Each(b, path, func(line int, rec record) {
		if len(rec.Messages) < 2 {
			b.Fatalf("%s line %d: %d messages, want a question and an answer", path, line, len(rec.Messages))
		}
		ep := episode{question: rec.Messages[0].Content}
		for _, m := range rec.Messages[1:] {
			switch {
			case m.Role == "assistant":
				th, act, _ := strings.Cut(m.Content, "\nAction: ")
				ep.turns = append(ep.turns, prompt.Turn{Thought: strings.TrimPrefix(th, "Thought: "), Action: act})
			case len(ep.turns) > 0:
				ep.turns[len(ep.turns)-1].Observation = strings.TrimPrefix(m.Content, "Observation: ")
			}
		}
		eps = append(eps, ep)
	})
	var requests, promptTok, prefixTok, completionTok int
	for b.Loop() {
		requests, promptTok, prefixTok, completionTok = 0, 0, 0, 0
		prefix := tok.Count(layout.Prefix())
		for _, ep := range eps {
			for j, t := range ep.turns {
				req := layout.Step(ep.question, ep.turns[:j])
				for _, m := range req.Messages {
					promptTok += tok.Count(m.Content) + 4 // the chat format's few tokens per message
				}
				prefixTok += prefix
				completionTok += tok.Count("Thought: " + t.Thought + "\nAction: " + t.Action)
				requests++
			}
		}
	}
	n := float64(len(eps))
	b.ReportMetric(float64(requests)/n, "requests/episode")
	b.ReportMetric(float64(promptTok)/n, "prompt-tokens/episode")
	b.ReportMetric(float64(prefixTok)/n, "prefix-tokens/episode")
	b.ReportMetric(float64(completionTok)/n, "completion-tokens/episode")
}
