package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm"
)

func TestLayoutCompletion(t *testing.T) {
	l := tinyLayout(t, "hotpotqa", MethodReAct, FormatCompletion)
	hist := []Turn{{Thought: "Find Zembla.", Action: "Search[Zembla]", Observation: "Zembla is a kingdom."}}
	req := l.Step("Where is Onhava?", hist)
	wantTail := "Question: Where is Onhava?\nThought 1: Find Zembla.\nAction 1: Search[Zembla]\nObservation 1: Zembla is a kingdom.\nThought 2:"
	if !strings.HasSuffix(req.Prompt, wantTail) {
		t.Errorf("prompt tail: got %q, want suffix %q", req.Prompt[len(req.Prompt)-len(wantTail):], wantTail)
	}
	if !strings.HasPrefix(req.Prompt, l.Prefix()) {
		t.Errorf("prompt does not start with the prefix")
	}
	if got, want := strings.Join(req.Stop, "|"), "\nObservation 2:"; got != want {
		t.Errorf("stop: got %q, want %q", got, want)
	}
	if !strings.Contains(l.Prefix(), "Thought 3: The river is the Vell.\nAction 3: Finish[Vell]\n") {
		t.Errorf("prefix lacks the numbered exemplar: %q", l.Prefix())
	}
	re := l.Reask("Where is Onhava?", hist, "I need Onhava.")
	if !strings.HasSuffix(re.Prompt, "Thought 2: I need Onhava.\nAction 2:") {
		t.Errorf("reask tail: got %q", re.Prompt[len(re.Prompt)-40:])
	}

	if got := tinyLayout(t, "hotpotqa", MethodAct, FormatCompletion).Step("Q?", nil).Prompt; !strings.HasSuffix(got, "Question: Q?\nAction 1:") || strings.Contains(got, "Thought 1") {
		t.Errorf("act prompt: got %q", got)
	}
	if got := tinyLayout(t, "hotpotqa", MethodCoT, FormatCompletion).Answer("Q?").Prompt; !strings.HasSuffix(got, "Question: Q?\nThought:") || !strings.Contains(got, "Answer: Vell\n") {
		t.Errorf("cot prompt: got %q", got)
	}
	if got := tinyLayout(t, "hotpotqa", MethodStandard, FormatCompletion).Answer("Q?").Prompt; !strings.HasSuffix(got, "Question: Q?\nAnswer:") || strings.Contains(got, "\nThought") {
		t.Errorf("standard prompt: got %q", got)
	}
}

func TestLayoutChat(t *testing.T) {
	if _, err := Load("testdata/tiny.json", "fever", nil); err == nil {
		t.Fatalf("tiny.json is a hotpotqa file, want an error for fever")
	}
	l := tinyLayout(t, "fever", MethodReAct, FormatChat)
	hist := []Turn{{Thought: "t1", Action: "Search[A]", Observation: "o1"}}
	req := l.Step("A is B.", hist)
	if len(req.Messages) != 4 {
		t.Fatalf("messages: got %d, want 4", len(req.Messages))
	}
	want := []struct{ role, content string }{
		{"system", l.Prefix()},
		{"user", "Claim: A is B."},
		{"assistant", "Thought: t1\nAction: Search[A]"},
		{"user", "Observation: o1"},
	}
	for i, w := range want {
		if req.Messages[i].Role != w.role || req.Messages[i].Content != w.content {
			t.Errorf("message %d: got %+v, want %s %q", i, req.Messages[i], w.role, w.content)
		}
	}
	if strings.Contains(l.Prefix(), "Thought 1") || !strings.Contains(l.Prefix(), "Claim: Which river") {
		t.Errorf("chat prefix should be unnumbered and use Claim: %q", l.Prefix())
	}
	if got, want := strings.Join(req.Stop, "|"), "\nObservation"; got != want {
		t.Errorf("stop: got %q, want %q", got, want)
	}
	s, err := Load("testdata/tiny.json", "hotpotqa", nil)
	if err != nil {
		t.Fatal(err)
	}
	react, err := s.For(MethodReAct)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewLayout(react, "xml"); err == nil {
		t.Errorf("NewLayout(xml): got no error")
	}
}

// Hash resumes from the layout's prefix state; it must equal the sha256 of Text for every
// request a layout renders, and for requests built by hand.
func TestRequestHash(t *testing.T) {
	hist := []Turn{{Thought: "Find <Zembla> & co.", Action: "Search[Zembla]", Observation: "Zembla is a \"kingdom\".\u2028"}}
	for _, format := range []string{FormatChat, FormatCompletion} {
		for _, method := range []string{MethodReAct, MethodAct, MethodCoT, MethodStandard} {
			l := tinyLayout(t, "hotpotqa", method, format)
			reqs := map[string]Request{
				"step 1": l.Step("Where is Onhava?", nil), "step 2": l.Step("Where is Onhava?", hist),
				"reask": l.Reask("Where is Onhava?", hist, "I need <it>."), "reask without thought": l.Reask("Q", nil, ""),
				"answer": l.Answer("Where is Onhava?"),
			}
			for name, r := range reqs {
				sum := sha256.Sum256([]byte(r.Text()))
				if got, want := r.Hash(), hex.EncodeToString(sum[:]); got != want {
					t.Errorf("%s %s %s: got %s, want %s", format, method, name, got, want)
				}
				if l.resume(r) == nil {
					t.Errorf("%s %s %s: hashed from the start, not from the prefix", format, method, name)
				}
			}
		}
	}
	byHand := []Request{
		{Prompt: "Question: x"}, {Messages: []llm.Message{{Role: "user", Content: "q"}}}, {Messages: []llm.Message{}},
	}
	for _, r := range byHand {
		sum := sha256.Sum256([]byte(r.Text()))
		if got, want := r.Hash(), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%+v: got %s, want %s", r, got, want)
		}
	}
}
