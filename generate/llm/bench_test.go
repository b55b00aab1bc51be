package llm_test

import (
	"fmt"
	"testing"

	"github.com/reactgen/reactgen/generate/llm"
	"github.com/reactgen/reactgen/generate/llm/llmtest"
)

// BenchmarkOpenAIRoundTrip measures the adapter's overhead per request against the fake.
func BenchmarkOpenAIRoundTrip(b *testing.B) {
	s := llmtest.NewServer(b, llmtest.Text("Thought: x\nAction: Search[y]"))
	c, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: s.URL, APIKey: "k"})
	if err != nil {
		b.Fatal(err)
	}
	req := chatReq("question")
	for b.Loop() {
		if _, err := c.Complete(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCacheHit measures a replayed request.
func BenchmarkCacheHit(b *testing.B) {
	s := llmtest.NewServer(b, llmtest.Text("Thought: x\nAction: Search[y]"))
	oa, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: s.URL})
	if err != nil {
		b.Fatal(err)
	}
	c := llm.WithCache(oa, b.TempDir())
	reqs := make([]llm.Request, 64)
	for i := range reqs {
		reqs[i] = chatReq(fmt.Sprint("question ", i))
		if _, err := c.Complete(b.Context(), reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		if _, err := c.Complete(b.Context(), reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
