package generate

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envtest"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// The test world: a few invented pages, questions about them, and a fake model that
// knows how to solve each question.

var worldPages = []env.Page{
	{Title: "Zembla", Sentences: []string{"Zembla is an island kingdom in the far north.", "Its capital is Onhava."}},
	{Title: "Onhava", Sentences: []string{"Onhava is a port city on the river Vell.", "It was founded in 1620 by fishermen."}},
	{Title: "Plim", Sentences: []string{"Plim is a market town.", "Plim was founded in 1820."}},
	{Title: "Plom", Sentences: []string{"Plom is a mill town.", "Plom was founded in 1790."}},
	{Title: "Vell", Sentences: []string{"The Vell is a river of Zembla.", "It is 210 km long."}},
}

func worldEnv(task string) func(pipeline.Question) Environment {
	c := envtest.NewMemory(worldPages)
	return func(q pipeline.Question) Environment { return env.New(c, env.Options{Task: task, Gold: q.Answer}) }
}

// script is how the fake model solves one question.
type script struct {
	moves     [][2]string // thought, action per step
	reasoning string
	answers   []string // CoT answers by sample (cycled by seed); Standard uses answers[0]
}

var worldQuestions = []pipeline.Question{
	{ID: "q-river", Task: "hotpotqa", Question: "Which river flows through the capital of Zembla?", Answer: "Vell", Type: "bridge"},
	{ID: "q-older", Task: "hotpotqa", Question: "Is Plim older than Plom?", Answer: "no", Type: "comparison"},
	{ID: "q-length", Task: "hotpotqa", Question: "How long is the river of Onhava?", Answer: "210 km", Type: "bridge"},
	{ID: "q-loop", Task: "hotpotqa", Question: "What is the motto of Zembla?", Answer: "none known", Type: "bridge"},
}

var worldScripts = map[string]script{
	"Which river flows through the capital of Zembla?": {
		moves: [][2]string{
			{"I need the capital of Zembla.", "Search[Zembla]"},
			{"The capital is Onhava. I need its river.", "Search[Onhava]"},
			{"Onhava is on the river Vell.", "Finish[Vell]"},
		},
		reasoning: "The capital of Zembla is Onhava, which lies on the Vell.", answers: []string{"Vell"},
	},
	"Is Plim older than Plom?": {
		moves: [][2]string{
			{"I need when Plim was founded.", "Search[Plim]"},
			{"Plim dates from 1820. Now Plom.", "Search[Plom]"},
			{"1790 is before 1820, so Plim is not older.", "Finish[no]"},
		},
		reasoning: "Plim was founded in 1820 and Plom in 1790.", answers: []string{"no", "yes", "no"},
	},
	"How long is the river of Onhava?": {
		moves: [][2]string{
			{"I need the river of Onhava.", "Search[Onhava]"},
			{"It is the Vell. How long is it?", "Search[Vell]"},
			{"The Vell is 210 km long.", "Finish[210 km]"},
		},
		reasoning: "Onhava is on the Vell, which is 210 km long.", answers: []string{"100 km", "210 km", "300 km", "50 km"},
	},
	"What is the motto of Zembla?": {
		moves:     [][2]string{{"Maybe the Zembla page says.", "Search[Zembla]"}},
		reasoning: "I do not know it.", answers: []string{"none known"},
	},
	"Onhava was founded in 1620.": {
		moves: [][2]string{
			{"I should search Onhava.", "Search[Onhava]"},
			{"It was founded in 1620.", "Finish[SUPPORTS]"},
		},
		reasoning: "Onhava was founded in 1620 by fishermen.", answers: []string{"SUPPORTS"},
	},
}

var feverClaims = []pipeline.Question{
	{ID: "c-1620", Task: "fever", Question: "Onhava was founded in 1620.", Answer: "SUPPORTS"},
}

// worldSet is a small exemplar set of the test's own.
func worldSet(task string) prompt.Set {
	return prompt.Set{
		Task: task, Kind: prompt.KindReAct, Instruction: "Solve the task with Thought, Action and Observation steps.",
		Exemplars: []prompt.Exemplar{{
			Question: "Which town lies on the Ost?", Answer: "Brel",
			Steps: []prompt.Step{
				{Thought: "Search the Ost.", Action: "Search[Ost]", Observation: "The Ost flows through Brel."},
				{Thought: "So it is Brel.", Action: "Finish[Brel]"},
			},
		}},
	}
}

var hintRe = regexp.MustCompile(` \(Hint: .*\)$`)

// unhint drops the rationalization hint; the regexp runs only when there is one, since
// the fake answers hundreds of requests at once in the scheduler benchmark.
func unhint(q string) string {
	if !strings.Contains(q, " (Hint: ") {
		return q
	}
	return hintRe.ReplaceAllString(q, "")
}

// fakeModel answers as a capable model would: it finds the current question in the
// request, counts the steps done, and writes the scripted next step in the layout asked.
type fakeModel struct {
	mu sync.Mutex
	// noAction lists questions whose first completion of a step omits the action.
	noAction map[string]bool
	// badCall gives, by question, the kind of malformed reply (see malformedReply) that
	// the first reply of the question's first step is; with badCallTwice the re-ask's
	// reply is malformed the same way.
	badCall      map[string]string
	badCallTwice bool
	seenBad      map[string]bool
	delay        func() time.Duration
	fault        func(n int) llmtest.Reply // by request number, 1-based; FaultNone = answer
	n            int
}

func (f *fakeModel) handle(ctx context.Context, r llmtest.Req) llmtest.Reply {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	if f.fault != nil {
		if rep := f.fault(n); rep.Fault != llmtest.FaultNone || rep.Status != 0 {
			return rep
		}
	}
	if len(r.Tools) > 0 {
		rep := f.toolReply(r)
		if f.delay != nil {
			rep.Delay = f.delay()
		}
		return rep
	}
	// Choice i of a request with n > 1 is what a request with seed+i would get, so that
	// one request with n and n requests give the same samples.
	rep := llmtest.Reply{Texts: []string{f.answer(r)}}
	for i := 1; i < r.N && r.Seed != nil; i++ {
		sd := *r.Seed + i
		ri := r
		ri.Seed = &sd
		rep.Texts = append(rep.Texts, f.answer(ri))
	}
	if f.delay != nil {
		rep.Delay = f.delay()
	}
	return rep
}

var lastQuestionRe = regexp.MustCompile(`(?s).*\n(?:Question|Claim): ([^\n]*)\n(.*)$`)

func (f *fakeModel) answer(r llmtest.Req) string {
	seed := 0
	if r.Seed != nil {
		seed = *r.Seed
	}
	if r.Endpoint == "completions" {
		m := lastQuestionRe.FindStringSubmatch(r.Prompt)
		if m == nil {
			return "I am lost."
		}
		q, rest := unhint(m[1]), m[2]
		sc := worldScripts[q]
		step := strings.Count(rest, "Observation ")
		switch {
		case strings.HasSuffix(rest, "Answer:"):
			return " " + sc.answers[0]
		case rest == "Thought:":
			return fmt.Sprintf(" %s\nAnswer: %s", sc.reasoning, sc.answers[seed%len(sc.answers)])
		case strings.HasPrefix(rest[strings.LastIndex(rest, "\n")+1:], "Action"):
			return " " + sc.move(step)[1]
		default:
			mv := sc.move(step)
			if f.skipAction(q, step) {
				return " " + mv[0]
			}
			return fmt.Sprintf(" %s\nAction %d: %s\nObservation %d: I imagine an answer", mv[0], step+1, mv[1], step+1)
		}
	}
	// chat
	sys := r.Messages[0].Content
	var q string
	steps := 0
	for _, m := range r.Messages[1:] {
		if m.Role == "user" && (strings.HasPrefix(m.Content, "Question: ") || strings.HasPrefix(m.Content, "Claim: ")) {
			_, q, _ = strings.Cut(m.Content, ": ")
		}
		if m.Role == "user" && strings.HasPrefix(m.Content, "Observation: ") {
			steps++
		}
	}
	q = unhint(q)
	sc := worldScripts[q]
	last := r.Messages[len(r.Messages)-1]
	switch {
	case !strings.Contains(sys, "Action:") && strings.Contains(sys, "Thought:"):
		return fmt.Sprintf("Thought: %s\nAnswer: %s", sc.reasoning, sc.answers[seed%len(sc.answers)])
	case !strings.Contains(sys, "Action:"):
		return "Answer: " + sc.answers[0]
	case strings.HasPrefix(last.Content, "Write only the Action"):
		return "Action: " + sc.move(steps)[1]
	case !strings.Contains(sys, "Thought:"):
		return "Action: " + sc.move(steps)[1]
	}
	mv := sc.move(steps)
	if f.skipAction(q, steps) {
		return "Thought: " + mv[0]
	}
	return fmt.Sprintf("Thought: %s\nAction: %s", mv[0], mv[1])
}

// skipAction reports, once per (question, step), whether to leave the action out.
func (f *fakeModel) skipAction(q string, step int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.noAction[q] {
		return false
	}
	k := fmt.Sprintf("%s#%d", q, step)
	if f.seenBad == nil {
		f.seenBad = map[string]bool{}
	}
	if f.seenBad[k] {
		return false
	}
	f.seenBad[k] = true
	return true
}

func (s script) move(step int) [2]string {
	if len(s.moves) == 0 {
		return [2]string{"I am unsure.", "Search[Nothing]"}
	}
	return s.moves[min(step, len(s.moves)-1)]
}

// memSink keeps episodes for inspection.
type memSink struct {
	mu  sync.Mutex
	eps []pipeline.Episode
}

func (s *memSink) Write(ctx context.Context, ep pipeline.Episode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eps = append(s.eps, ep)
	return nil
}

func (s *memSink) byKey() map[string]pipeline.Episode {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]pipeline.Episode{}
	for _, ep := range s.eps {
		m[ep.Key()] = ep
	}
	return m
}

// openAI is the real adapter pointed at the fake, with retries that do not sleep, and
// WithChoices outside them as llm.New has it.
func openAI(t testing.TB, srv *llmtest.Server, timeout time.Duration, slept *[]time.Duration) llm.Client {
	t.Helper()
	c, err := llm.NewOpenAI(llm.OpenAIOptions{
		BaseURL: srv.URL, APIKey: "test-key", Timeout: timeout,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	return llm.WithChoices(llm.WithRetry(c, llm.RetryPolicy{MaxRetries: 3, Sleep: func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		if slept != nil {
			*slept = append(*slept, d)
		}
		return ctx.Err()
	}}))
}

func testConfig(method, format string) (pipeline.GenerateConfig, pipeline.LLMConfig) {
	d := pipeline.Default()
	g, l := d.Generate, d.LLM
	g.Method, g.Format, g.Samples, g.Concurrency, g.TargetCorrect, g.Progress = method, format, 3, 4, 0, "off"
	l.Model = "fake-model"
	return g, l
}

func newRunner(t testing.TB, task, method, format string, c llm.Client) *Runner {
	t.Helper()
	g, l := testConfig(method, format)
	r, err := NewRunner(RunnerOptions{Config: g, LLM: l, Task: task, RunID: "test", Prompts: worldSet(task), Client: c, NewEnv: worldEnv(task)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// toolReply answers a tools-format request as a tool-calling model would: the scripted
// step's thought as content and its action as one function call.
func (f *fakeModel) toolReply(r llmtest.Req) llmtest.Reply {
	var q string
	start := 0
	for i, m := range r.Messages {
		if m.Role == "user" && (strings.HasPrefix(m.Content, "Question: ") || strings.HasPrefix(m.Content, "Claim: ")) {
			_, q, _ = strings.Cut(m.Content, ": ")
			start = i
		}
	}
	q = unhint(q)
	steps := 0
	for _, m := range r.Messages[start+1:] {
		if m.Role == "assistant" {
			steps++
		}
	}
	last := r.Messages[len(r.Messages)-1]
	retry := last.Role == "tool" && strings.HasPrefix(last.Content, "Error: ") ||
		last.Role == "user" && strings.HasPrefix(last.Content, "No tool was called")
	if retry {
		steps-- // the rejected reply is the last assistant turn
	}
	mv := worldScripts[q].move(steps)
	if kind := f.badCall[q]; kind != "" && steps == 0 && (!retry || f.badCallTwice) {
		return malformedReply(kind, mv)
	}
	return llmtest.Reply{Texts: []string{mv[0]}, ToolCalls: []llm.ToolCall{toolCallOf(mv[1])}}
}

// toolCallOf is the function call of an action in the paper's syntax.
func toolCallOf(action string) llm.ToolCall {
	a := env.ParseAction(action)
	name, args, ok := tool.FromAction(a.Type, a.Argument)
	if !ok {
		name, args = "search", `{"entity":"Nothing"}`
	}
	return llm.ToolCall{Function: llm.FunctionCall{Name: name, Arguments: args}}
}

// The kinds of malformed reply.
var malformedKinds = []string{"unknown function", "arguments not JSON", "missing argument", "wrong argument type",
	"several calls", "text, no call", "empty"}

// malformedReply is a reply of the given kind for the move mv.
func malformedReply(kind string, mv [2]string) llmtest.Reply {
	good := toolCallOf(mv[1])
	one := func(name, args string) llmtest.Reply {
		return llmtest.Reply{Texts: []string{mv[0]}, ToolCalls: []llm.ToolCall{{Function: llm.FunctionCall{Name: name, Arguments: args}}}}
	}
	switch kind {
	case "unknown function":
		return one("browse", `{"url":"https://example.org"}`)
	case "arguments not JSON":
		return one(good.Function.Name, good.Function.Arguments[:len(good.Function.Arguments)-2])
	case "missing argument":
		return one(good.Function.Name, `{}`)
	case "wrong argument type":
		return one(good.Function.Name, `{"entity":["a","b"],"keyword":1,"answer":null}`)
	case "several calls":
		return llmtest.Reply{Texts: []string{mv[0]}, ToolCalls: []llm.ToolCall{good, toolCallOf("Lookup[capital]")}}
	case "text, no call":
		return llmtest.Reply{Texts: []string{"Thought: " + mv[0] + "\nAction: " + mv[1]}}
	case "empty":
		return llmtest.Reply{}
	}
	panic("unknown malformed kind " + kind)
}
