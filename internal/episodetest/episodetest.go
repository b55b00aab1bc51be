// Package episodetest builds the pipeline.Episode records that tests and benchmarks
// feed to the stages: one place, so that a new field or a changed default is one edit.
// It consumes nothing and produces records, and the one file the benchmarks start from:
// an episode log.
//
//   - Episode: a small finished, correct HotpotQA ReAct episode with the actions given;
//   - Small: the two-step trajectory the export's rendering tests read word by word;
//   - Full: every field set, for codec tests;
//   - Synth and Stream: a seeded stream of realistic episodes (about 2 KB of JSON) for
//     the export tests and benchmarks;
//   - Distinct and WriteLog: Synth's episodes one per question, and a log of them, for
//     the filter and export benchmarks.
package episodetest

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

// Defaults of every built episode.
const (
	RunID    = "run-test"
	Policy   = "test-model"
	Method   = "react"
	Question = "Which river runs through the old mill town?"
	Answer   = "Aldbrook"
)

// Episode is a finished, correct HotpotQA ReAct episode of question qid (a bridge
// question, answered and predicted Answer, attempt 0, schema set) with one step per
// action: its thought names the action, its observation is "Some text.". An empty id
// means the id a run derives (pipeline.EpisodeID); set Attempt with WithAttempt so the
// id follows it.
func Episode(id, qid string, actions ...string) pipeline.Episode {
	ep := pipeline.Episode{
		Schema: pipeline.SchemaVersion, ID: id, RunID: RunID, Task: pipeline.TaskHotpotQA, QuestionID: qid,
		Question: Question, Answer: Answer, QuestionType: "bridge", Method: Method, Policy: Policy,
		Prediction: Answer, Finished: true, Correct: true, EM: 1, F1: 1, StopReason: pipeline.StopFinished,
	}
	if id == "" {
		ep.ID = pipeline.EpisodeID(ep.Task, qid, ep.Method, 0, false)
	}
	for _, a := range actions {
		typ := pipeline.ActionInvalid
		if i := strings.IndexByte(a, '['); i > 0 {
			typ = strings.ToLower(a[:i])
		}
		ep.Steps = append(ep.Steps, pipeline.Step{Thought: "I think about " + a, Action: a, ActionType: typ, Observation: "Some text."})
	}
	return ep
}

// Actions are ep's steps' actions in order: what Episode builds an episode from, and
// what a test compares of two runs' trajectories.
func Actions(ep pipeline.Episode) []string {
	var out []string
	for _, st := range ep.Steps {
		out = append(out, st.Action)
	}
	return out
}

// WithAttempt returns ep as attempt k of its question, with the id a run gives it.
func WithAttempt(ep pipeline.Episode, k int) pipeline.Episode {
	ep.Attempt = k
	ep.ID = pipeline.EpisodeID(ep.Task, ep.QuestionID, ep.Method, k, ep.Rationalized)
	return ep
}

// Outcome is Episode("", qid) as attempt k, ended with stop; unless correct it is wrong
// (prediction, EM and F1 zero), and unless stop is StopFinished it is not finished.
func Outcome(qid string, k int, stop string, correct bool) pipeline.Episode {
	ep := WithAttempt(Episode("", qid), k)
	ep.StopReason, ep.Finished = stop, stop == pipeline.StopFinished
	if !correct {
		ep.Correct, ep.Prediction, ep.EM, ep.F1 = false, "", 0, 0
	}
	return ep
}

// Small is the two-step trajectory that the export's tests render and read back word by
// word: a search that finds the answer, then Finish.
func Small() pipeline.Episode {
	return pipeline.Episode{
		Schema: pipeline.SchemaVersion, ID: "ep1", RunID: "r1", Task: pipeline.TaskHotpotQA, QuestionID: "q1", Method: Method,
		Policy: "m", Question: "Where was the lantern museum built?", Answer: "Oslo", Prediction: "Oslo",
		Finished: true, Correct: true, EM: 1, F1: 1, StopReason: pipeline.StopFinished,
		Steps: []pipeline.Step{
			{Thought: "Search the museum.", Action: "Search[Lantern Museum]", ActionType: pipeline.ActionSearch,
				Argument: "Lantern Museum", Observation: "The Lantern Museum is in Oslo."},
			{Thought: "It is Oslo.", Action: "Finish[Oslo]", ActionType: pipeline.ActionFinish, Argument: "Oslo"},
		},
	}
}

// Full sets every field of the record and of the types it holds, with strings that need
// escaping in JSON (quotes, backslashes, control characters, U+2028, HTML, non-ASCII).
func Full() pipeline.Episode {
	call := pipeline.Call{Model: "gpt", PromptHash: "ab12", Prompt: "Question: <x> & y", Completion: "Thought: é \"q\"\n",
		FinishReason: "stop", Usage: pipeline.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CostUSD: 0.00125,
			CachedTokens: 4, CacheSavingUSD: 0.0005, UnpricedCalls: 1},
		LatencyMS: 321, Retries: 2, Cached: true, Bad: true, Error: "boom", NotSent: true, Choice: 1,
		ToolCalls: []pipeline.ToolCall{{ID: "call_1", Name: "search", Arguments: `{"entity":"Ada \"L\""}`}, {Name: "browse", Arguments: "not json"}},
		Reasoning: "First <think> about \"Ada\"\n", Logprobs: []float64{-0.25, -1.5e-7, -12.75},
		PromptTokenIDs: []int64{151644, 872}, CompletionTokenIDs: []int64{785, 13}}
	reward := 0.75
	return pipeline.Episode{Schema: pipeline.SchemaVersion, ID: "0123456789abcdef", RunID: "run", Task: pipeline.TaskHotpotQA,
		QuestionID: "q1", Question: "Who is \"A\"?\tTab \u2028 line", Answer: "Ada", QuestionType: "bridge", Method: Method,
		Branch: Method, Policy: "expert", Format: "chat", Attempt: 3, Seed: -9007199254740993,
		Steps: []pipeline.Step{
			{Thought: "I need \\ to search 日本", Action: "Search[Ada]", ActionType: pipeline.ActionSearch, Argument: "Ada",
				Observation: "Ada was... \"Quoted\"\x01\x1f end", Calls: []pipeline.Call{call, {}},
				Reasoning: "The user asks about \"A\"; 日本\n</think>",
				ToolCall:  &pipeline.ToolCall{ID: "call_1", Name: "search", Arguments: `{"entity": "Ada"}`}},
			{Action: "Finish[Ada]", ActionType: pipeline.ActionFinish, Argument: "Ada", Calls: []pipeline.Call{}},
		},
		Samples:    []pipeline.Sample{{Thought: "t", Answer: "a", Call: &call}, {Thought: "u"}},
		Prediction: "Ada", Finished: true, Correct: true, EM: 1, F1: 0.6666666666666666, StopReason: pipeline.StopFinished,
		LLMCalls: 2, BadCalls: 1, LatencyMS: 1 << 50, Rationalized: true, Round: 2, Error: "none",
		MaskedSteps: []pipeline.MaskedStep{{Step: 1, Code: "repeated_search"}},
		Reward:      &reward,
		Usage: pipeline.Usage{PromptTokens: 1 << 40, CompletionTokens: 7, TotalTokens: 1<<40 + 7, CostUSD: 1e-9, UnpricedCalls: 2,
			CachedTokens: 3, CacheSavingUSD: 2e-9},
	}
}

var synthWords = strings.Fields(`river castle engine violin harbor meadow lantern orbit
	novel painter bridge signal copper winter garden tower museum village album comet
	island mirror forest theater station canyon ribbon archive falcon glacier quartz`)

func words(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(synthWords[r.IntN(len(synthWords))])
	}
	return b.String()
}

// Synth is episode i of a seeded stream: a correct, finished episode of realistic size
// (3 to 7 steps; observations of 50 words and a quoted tail with a tab and a newline,
// about 3 KB of JSON), built from i alone so that a test can build the same stream
// again. Every third is a FEVER claim; two episodes share each question.
func Synth(i int) pipeline.Episode {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	task := pipeline.TaskHotpotQA
	answer := words(r, 2)
	question := "Which " + words(r, 6) + "?"
	if i%3 == 2 {
		task = pipeline.TaskFEVER
		answer = []string{pipeline.LabelSupports, pipeline.LabelRefutes, pipeline.LabelNEI}[i%3]
		question = "The " + words(r, 7) + "."
	}
	qid := fmt.Sprintf("q%06d", i/2) // two episodes per question, to exercise the split
	ep := pipeline.Episode{
		Schema: pipeline.SchemaVersion, RunID: RunID, Task: task, QuestionID: qid,
		Question: question, Answer: answer, Method: Method, Policy: Policy,
		Attempt: i % 2, Prediction: answer, Finished: true, Correct: true, EM: 1, F1: 1,
		StopReason: pipeline.StopFinished,
	}
	ep.ID = pipeline.EpisodeID(task, qid, Method, ep.Attempt, false)
	n := 3 + r.IntN(5)
	for s := range n - 1 {
		entity := words(r, 2)
		typ, act := pipeline.ActionSearch, "Search["+entity+"]"
		if s%3 == 2 {
			entity = synthWords[r.IntN(len(synthWords))] // the keyword
			typ, act = pipeline.ActionLookup, "Lookup["+entity+"]"
		}
		ep.Steps = append(ep.Steps, pipeline.Step{
			Thought: "I need to " + words(r, 14) + ".", Action: act, ActionType: typ, Argument: entity,
			Observation: "The " + words(r, 50) + ". \"Quoted\"\tand a\nnew line.",
		})
	}
	ep.Steps = append(ep.Steps, pipeline.Step{
		Thought: "So the answer is " + answer + ".", Action: "Finish[" + answer + "]",
		ActionType: pipeline.ActionFinish, Argument: answer,
	})
	return ep
}

// Stream yields Synth(0..n-1), each changed by mod first when mod is set; every call of
// the returned function starts the stream again, as a stage's Reopen does.
func Stream(n int, mod func(i int, ep *pipeline.Episode)) func() iter.Seq2[pipeline.Episode, error] {
	return func() iter.Seq2[pipeline.Episode, error] {
		return func(yield func(pipeline.Episode, error) bool) {
			for i := range n {
				ep := Synth(i)
				if mod != nil {
					mod(i, &ep)
				}
				if !yield(ep, nil) {
					return
				}
			}
		}
	}
}

// Seq yields eps in order.
func Seq(eps []pipeline.Episode) iter.Seq2[pipeline.Episode, error] {
	return func(yield func(pipeline.Episode, error) bool) {
		for _, ep := range eps {
			if !yield(ep, nil) {
				return
			}
		}
	}
}

// Distinct is Synth(i) as the only episode of a HotpotQA question of its own ("q<i>",
// attempt 0), each observation cut to the first words+1 words of its sentence and the
// quoted tail.
func Distinct(i, words int) pipeline.Episode {
	ep := Synth(i)
	ep.Task, ep.Attempt, ep.QuestionID = pipeline.TaskHotpotQA, 0, "q"+strconv.Itoa(i)
	ep.ID = pipeline.EpisodeID(ep.Task, ep.QuestionID, ep.Method, 0, false)
	for j := range ep.Steps {
		body, tail, ok := strings.Cut(ep.Steps[j].Observation, ". \"Quoted\"")
		if !ok {
			continue
		}
		w := strings.Fields(body)
		ep.Steps[j].Observation = strings.Join(w[:min(words+1, len(w))], " ") + ". \"Quoted\"" + tail
	}
	return ep
}

// WriteLog writes Distinct(0..n-1, words) as an episode log at path, as the generate
// stage writes episodes.jsonl, and returns its size in bytes.
func WriteLog(tb testing.TB, path string, n, words int) int64 {
	tb.Helper()
	w, err := pipeline.CreateJSONL(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Abort()
	for i := range n {
		if err := w.Write(Distinct(i, words)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		tb.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}
