package llm

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// The key and prompt hash computed from a remembered prefix are requestKey's and
// textHash's, for requests as a run sends them (a shared few-shot prefix or system
// message, then each question's steps or turns) from many goroutines, and for prompts
// that end inside the prefix, differ right after a newline, or hold non-ASCII text at
// the cut, and first messages that are no memo's; the memo is used.
func TestPrefixHashesAreTheHashes(t *testing.T) {
	exemplars := "Solve a question answering task with interleaving Thought, Action, Observation steps.\n" +
		strings.Repeat("Question: Was <Zembla> \"older\" than Onhava & é?\nThought 1: I need to search.\nAction 1: Search[Zembla]\nObservation 1: Zembla is\tan island.\u2028\n", 30)
	var reqs []Request
	seed := 1
	for q := range 40 {
		prompt := exemplars + fmt.Sprintf("Question: question %d é\n", q)
		for step := 1; step <= 4; step++ {
			prompt += fmt.Sprintf("Thought %d: think\nAction %d: Search[é%d]\nObservation %d: \"x\" <y>\n", step, step, q, step)
			model := "m"
			if q%5 == 0 {
				model = "other"
			}
			reqs = append(reqs, Request{Model: model, Prompt: prompt, MaxTokens: 100, Stop: []string{"\nObservation"}, Attempt: q % 3, Seed: &seed})
		}
	}
	// Chat requests: the exemplars as the system message, then each question's turns.
	nChat := 0
	for q := range 20 {
		msgs := []Message{{Role: "system", Content: exemplars}, {Role: "user", Content: fmt.Sprintf("Question: question %d é", q)}}
		for step := 1; step <= 3; step++ {
			model := "m"
			if q%4 == 0 {
				model = "other"
			}
			reqs = append(reqs, Request{Model: model, Messages: msgs, Stop: []string{"\nObservation"}, TopP: 0.9, N: q % 3})
			nChat++
			msgs = append(msgs[:len(msgs):len(msgs)], Message{Role: "assistant", Content: fmt.Sprintf("Thought: <%d>", step),
				ToolCalls: []ToolCall{{ID: "c", Type: "function", Function: FunctionCall{Name: "search", Arguments: `{"q":"é"}`}}}},
				Message{Role: "tool", Content: "\"x\" \u2028", ToolCallID: "c", Name: "search"})
		}
	}
	reqs = append(reqs,
		Request{Model: "m", Messages: []Message{{Role: "system", Content: "short"}, {Role: "user", Content: "q"}}},
		Request{Model: "m", Messages: []Message{{Role: "system", Content: exemplars, Name: "x"}, {Role: "user", Content: "q"}}},
		Request{Model: "m", Messages: []Message{{Role: "user", Content: exemplars}, {Role: "user", Content: "q"}}},
		Request{Model: "m", Messages: []Message{{Role: "system", Content: exemplars}}},
		Request{Model: "m", Prompt: exemplars[:len(exemplars)/2]},
		Request{Model: "m", Prompt: exemplars},
		Request{Model: "m", Prompt: exemplars + "\xff\xfe"},
		Request{Model: "m", Prompt: exemplars[:len(exemplars)-1] + "é"},
		Request{Model: "m", Messages: []Message{{Role: "user", Content: exemplars}}},
		Request{Model: "m", Prompt: exemplars + "t", Tools: []Tool{{Type: "function", Function: FunctionDef{Name: "f", Parameters: []byte(`{}`)}}}},
	)
	var p prefixHashes
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < len(reqs); i += 8 {
				req := &reqs[i]
				key, m := p.key(req)
				if want := requestKey(*req); key != want {
					t.Errorf("request %d: key %s, want %s", i, key, want)
				}
				if got, want := text(req, m), textHash(*req); got != want {
					t.Errorf("request %d: prompt hash %s, want %s", i, got, want)
				}
			}
		})
	}
	wg.Wait()
	// Which prefixes the goroutines above learned depends on their order; learned in
	// the requests' order, the exemplars' prefix must serve most of them.
	var seq prefixHashes
	for i := range reqs {
		seq.key(&reqs[i])
	}
	used, usedChat := 0, 0
	for i := range reqs {
		if m := seq.find(&reqs[i]); m != nil && len(m.prefix) >= len(exemplars) {
			used++
			if m.chat {
				usedChat++
			}
		}
	}
	if used < len(reqs)/2 || usedChat < nChat {
		t.Errorf("the exemplars' prefix serves %d of %d requests, %d of %d chat ones", used, len(reqs), usedChat, nChat)
	}
	// Two prompts that part inside a rune (é and è share their first byte) and a third
	// that continues the first.
	var q prefixHashes
	base := strings.Repeat("Thought: x\n", 200) + "Action: Search["
	for i, prompt := range []string{base + "é]\n", base + "è]\n", base + "é]\nObservation: y\n"} {
		req := &Request{Model: "m", Prompt: prompt}
		key, m := q.key(req)
		if want := requestKey(*req); key != want {
			t.Errorf("parting prompt %d: key %s, want %s", i, key, want)
		}
		if got, want := text(req, m), textHash(*req); got != want {
			t.Errorf("parting prompt %d: prompt hash %s, want %s", i, got, want)
		}
	}
}
