package generate

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestReasoningAndLogprobsOfEveryCall runs each method against a reasoning model that
// also returns log-probabilities and token ids: every call keeps its reply's reasoning,
// its choice's log-probabilities and token ids (CoT-SC's further choices theirs), and
// every step the reasoning of the call that decided it, apart from its thought.
func TestReasoningAndLogprobsOfEveryCall(t *testing.T) {
	for _, method := range []string{"standard", "cot", "cot-sc", "react"} {
		t.Run(method, func(t *testing.T) {
			fm := &fakeModel{}
			srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
				rep := fm.handle(ctx, r)
				h := fnv.New32a()
				for _, m := range r.Messages {
					_, _ = h.Write([]byte(m.Content))
				}
				rep.Reasoning, rep.ReasoningField = fmt.Sprintf("I weigh request %08x.", h.Sum32()), "reasoning"
				return rep
			})
			g, l := testConfig(method, "chat")
			l.Logprobs, l.TokenIDs = true, true
			r, err := NewRunner(RunnerOptions{Config: g, LLM: l, Task: "hotpotqa", RunID: "test", Prompts: worldSet("hotpotqa"),
				Client: openAI(t, srv, 0, nil), NewEnv: worldEnv("hotpotqa")})
			if err != nil {
				t.Fatal(err)
			}
			ep := r.Episode(t.Context(), worldQuestions[1], 0)
			if !ep.Correct {
				t.Fatalf("episode not correct: %q %q", ep.Prediction, ep.Error)
			}
			check := func(what string, c pipeline.Call) {
				t.Helper()
				tokens := llmtest.FakeTokens(c.Completion)
				if c.Reasoning == "" || len(c.Logprobs) != len(tokens) || len(c.CompletionTokenIDs) != len(tokens) || c.Choice == 0 && len(c.PromptTokenIDs) == 0 {
					t.Errorf("%s: reasoning %q, %d logprobs, %d completion ids, %d prompt ids for %d tokens",
						what, c.Reasoning, len(c.Logprobs), len(c.CompletionTokenIDs), len(c.PromptTokenIDs), len(tokens))
				}
			}
			for i, st := range ep.Steps {
				for j, c := range st.Calls {
					check(fmt.Sprintf("step %d call %d", i+1, j+1), c)
				}
				if len(st.Calls) > 0 && st.Reasoning != st.Calls[len(st.Calls)-1].Reasoning {
					t.Errorf("step %d: reasoning %q, its call's %q", i+1, st.Reasoning, st.Calls[len(st.Calls)-1].Reasoning)
				}
				if st.Reasoning == "" || st.Reasoning == st.Thought {
					t.Errorf("step %d: reasoning %q beside thought %q", i+1, st.Reasoning, st.Thought)
				}
			}
			further := 0
			for i, s := range ep.Samples {
				if s.Call != nil {
					check(fmt.Sprintf("sample %d", i+1), *s.Call)
					if s.Call.Choice > 0 {
						further++
					}
				}
			}
			if method == "cot-sc" && further == 0 {
				t.Error("no sample was a further choice of one request: n was not tested")
			}
		})
	}
}
