package generate

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestToolsFormatMatchesText runs the world's questions in the chat format and in the
// tools format against a model that solves them alike: every episode takes the same
// canonical actions to the same verdict, and each tools step keeps the call it came from.
func TestToolsFormatMatchesText(t *testing.T) {
	for _, tc := range []struct{ task, method string }{
		{pipeline.TaskHotpotQA, "react"}, {pipeline.TaskFEVER, "react"}, {pipeline.TaskHotpotQA, "act"},
		{pipeline.TaskHotpotQA, "react-cot-sc"}, {pipeline.TaskHotpotQA, "cot-sc-react"},
	} {
		task := tc.task
		t.Run(task+"/"+tc.method, func(t *testing.T) {
			qs := worldQuestions
			if task == pipeline.TaskFEVER {
				qs = feverClaims
			}
			eps := map[string]map[string]pipeline.Episode{}
			sums := map[string]Summary{}
			for _, format := range []string{prompt.FormatChat, prompt.FormatTools} {
				fm := &fakeModel{}
				srv := llmtest.NewServer(t, fm.handle)
				o, sink := runOpts(t, tc.method, format, openAI(t, srv, 0, nil), qs)
				o.Task, o.Prompts, o.NewEnv = task, worldSet(task), worldEnv(task)
				sum, err := Run(t.Context(), o)
				if err != nil {
					t.Fatal(err)
				}
				sums[format], eps[format] = sum, sink.byKey()
				for _, rec := range srv.Log() {
					cot := !strings.Contains(rec.Req.Messages[0].Content, "Action") && !strings.Contains(rec.Req.Messages[0].Content, "tool")
					if got := len(rec.Req.Tools) > 0; got != (format == prompt.FormatTools && !cot) {
						t.Errorf("%s: a request with tools %v: %.80q", format, got, rec.Req.Messages[0].Content)
					}
				}
			}
			text, tools := sums[prompt.FormatChat], sums[prompt.FormatTools]
			if text.Correct == 0 || tools.Correct != text.Correct || tools.Episodes != text.Episodes {
				t.Errorf("correct: text %d of %d, tools %d of %d, want equal and not 0", text.Correct, text.Episodes, tools.Correct, tools.Episodes)
			}
			for key, te := range eps[prompt.FormatChat] {
				ue := eps[prompt.FormatTools][key]
				if !reflect.DeepEqual(episodetest.Actions(te), episodetest.Actions(ue)) || te.Correct != ue.Correct || te.Prediction != ue.Prediction || te.StopReason != ue.StopReason {
					t.Errorf("%s: text %v %q %v, tools %v %q %v", key, episodetest.Actions(te), te.Prediction, te.Correct, episodetest.Actions(ue), ue.Prediction, ue.Correct)
				}
				if ue.Format != prompt.FormatTools || ue.BadCalls != 0 || ue.Branch != te.Branch {
					t.Errorf("%s: format %q, bad calls %d, branch %q (text %q)", key, ue.Format, ue.BadCalls, ue.Branch, te.Branch)
				}
				if ue.Branch == prompt.MethodCoTSC {
					continue // CoT-SC answered: no tool steps
				}
				for i, st := range ue.Steps {
					if st.ToolCall == nil || st.ToolCall.ID == "" || !strings.EqualFold(st.ToolCall.Name, st.ActionType) ||
						!strings.Contains(st.ToolCall.Arguments, st.Argument) || len(st.Calls) != 1 || len(st.Calls[0].ToolCalls) != 1 {
						t.Errorf("%s step %d: tool call %+v for %s, calls %+v", key, i+1, st.ToolCall, st.Action, st.Calls)
					}
					if st.Thought == "" && tc.method != "act" {
						t.Errorf("%s step %d: no thought", key, i+1)
					}
				}
				if len(te.Steps) > 0 && te.Steps[0].ToolCall != nil {
					t.Errorf("%s: a chat step has a tool call", key)
				}
			}
		})
	}
}

// TestToolsHistoryAnswersEachCall checks the second request of an episode on the wire:
// the first step's call, under the id the server gave it, answered by a tool turn.
func TestToolsHistoryAnswersEachCall(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	r := newRunner(t, "hotpotqa", "react", prompt.FormatTools, openAI(t, srv, 0, nil))
	ep := r.Episode(t.Context(), worldQuestions[0], 0)
	if !ep.Correct {
		t.Fatalf("not correct: %q %q", ep.StopReason, ep.Error)
	}
	log := srv.Log()
	second := log[1].Req.Messages
	n := len(second)
	asst, obs := second[n-2], second[n-1]
	if asst.Role != "assistant" || asst.Content != ep.Steps[0].Thought || len(asst.ToolCalls) != 1 ||
		asst.ToolCalls[0].ID != ep.Steps[0].ToolCall.ID || asst.ToolCalls[0].Function.Arguments != ep.Steps[0].ToolCall.Arguments {
		t.Errorf("assistant turn: %+v, step %+v", asst, ep.Steps[0])
	}
	if obs.Role != "tool" || obs.ToolCallID != asst.ToolCalls[0].ID || obs.Content != ep.Steps[0].Observation {
		t.Errorf("tool turn: %+v", obs)
	}
	if log[0].Req.Stop != nil {
		t.Errorf("stop sequences sent with tools: %q", log[0].Req.Stop)
	}
}

// TestToolsMalformedCalls: each kind of malformed reply is recorded, asked once more and
// counted, and the episode goes on to the right answer; a reply that is malformed twice
// becomes an invalid step that the environment answers, recorded with the call.
func TestToolsMalformedCalls(t *testing.T) {
	q := worldQuestions[0]
	for _, kind := range malformedKinds {
		t.Run(kind, func(t *testing.T) {
			fm := &fakeModel{badCall: map[string]string{q.Question: kind}}
			srv := llmtest.NewServer(t, fm.handle)
			r := newRunner(t, "hotpotqa", "react", prompt.FormatTools, openAI(t, srv, 0, nil))
			ep := r.Episode(t.Context(), q, 0)
			if !ep.Correct || ep.BadCalls != 1 || ep.LLMCalls != 4 {
				t.Fatalf("correct %v, bad calls %d, calls %d (stop %q, error %q), want correct, 1 and 4",
					ep.Correct, ep.BadCalls, ep.LLMCalls, ep.StopReason, ep.Error)
			}
			st := ep.Steps[0]
			if len(st.Calls) != 2 || !st.Calls[0].Bad || st.Calls[1].Bad || st.Action != "Search[Zembla]" || st.ToolCall.Name != "search" {
				t.Errorf("step 1: %+v", st)
			}
			bad := malformedReply(kind, worldScripts[q.Question].move(0))
			if got := st.Calls[0].ToolCalls; len(got) != len(bad.ToolCalls) {
				t.Errorf("recorded calls of the bad reply: %+v, want %d", got, len(bad.ToolCalls))
			} else {
				for i, c := range got {
					if c.Name != bad.ToolCalls[i].Function.Name || c.Arguments != bad.ToolCalls[i].Function.Arguments || c.ID == "" {
						t.Errorf("recorded call %d: %+v, want %+v", i, c, bad.ToolCalls[i])
					}
				}
			}
			// The re-ask shows the bad reply and says what was wrong.
			retry := srv.Log()[1].Req.Messages
			last := retry[len(retry)-1]
			switch len(bad.ToolCalls) {
			case 0:
				if last.Role != "user" || !strings.Contains(last.Content, "No tool was called") {
					t.Errorf("re-ask's last turn: %+v", last)
				}
			default:
				if last.Role != "tool" || !strings.HasPrefix(last.Content, "Error: ") {
					t.Errorf("re-ask's last turn: %+v", last)
				}
				asst := retry[len(retry)-1-len(bad.ToolCalls)]
				if asst.Role != "assistant" || len(asst.ToolCalls) != len(bad.ToolCalls) {
					t.Errorf("re-ask's bad reply: %+v", asst)
				}
			}
		})
	}
	for _, kind := range malformedKinds {
		t.Run(kind+" twice", func(t *testing.T) {
			fm := &fakeModel{badCall: map[string]string{q.Question: kind}, badCallTwice: true}
			srv := llmtest.NewServer(t, fm.handle)
			r := newRunner(t, "hotpotqa", "react", prompt.FormatTools, openAI(t, srv, 0, nil))
			ep := r.Episode(t.Context(), q, 0)
			st := ep.Steps[0]
			if st.ActionType != pipeline.ActionInvalid || !strings.HasPrefix(st.Observation, "Invalid action: ") ||
				ep.BadCalls != 1 || len(st.Calls) != 2 {
				t.Fatalf("step 1: %+v (bad calls %d)", st, ep.BadCalls)
			}
			bad := malformedReply(kind, worldScripts[q.Question].move(0))
			if (st.ToolCall != nil) != (len(bad.ToolCalls) > 0) || st.ToolCall != nil && st.ToolCall.Name != bad.ToolCalls[0].Function.Name {
				t.Errorf("step 1 tool call %+v, want the first of %+v", st.ToolCall, bad.ToolCalls)
			}
			if !ep.Correct {
				t.Errorf("the episode did not recover after the invalid step: %v %q", episodetest.Actions(ep), ep.StopReason)
			}
			// The next request shows the invalid step as it happened and answers it.
			next := srv.Log()[2].Req.Messages
			obs := next[len(next)-1]
			if obs.Content != st.Observation || (st.ToolCall != nil) != (obs.Role == "tool") {
				t.Errorf("the invalid step in the history: %+v", obs)
			}
		})
	}
}

// TestToolsReasoningIsTheThought: a reply with reasoning_content and no content gives its
// reasoning as the thought.
func TestToolsReasoningIsTheThought(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		rep := fm.handle(ctx, r)
		rep.Reasoning, rep.Texts = rep.Texts[0], nil
		return rep
	})
	r := newRunner(t, "hotpotqa", "react", prompt.FormatTools, openAI(t, srv, 0, nil))
	ep := r.Episode(t.Context(), worldQuestions[0], 0)
	if !ep.Correct || ep.Steps[0].Thought != worldScripts[worldQuestions[0].Question].moves[0][0] {
		t.Errorf("correct %v, thought %q", ep.Correct, ep.Steps[0].Thought)
	}
}

// TestToolsCacheAndResume: a second tools run over the same cache sends nothing and writes
// the same episodes; a run interrupted after its first episodes resumes to the same result.
func TestToolsCacheAndResume(t *testing.T) {
	dir := t.TempDir()
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	qs := manyQuestions(9)
	o, sink := runOpts(t, "react", prompt.FormatTools, llm.WithCache(openAI(t, srv, 0, nil), dir), qs)
	whole, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.Requests()
	if sent == 0 || whole.Correct == 0 {
		t.Fatalf("first run: %d requests, %d correct", sent, whole.Correct)
	}
	o2, sink2 := runOpts(t, "react", prompt.FormatTools, llm.WithCache(openAI(t, srv, 0, nil), dir), qs)
	again, err := Run(t.Context(), o2)
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests() - sent; n != 0 {
		t.Errorf("second run sent %d requests, want 0", n)
	}
	if again.Correct != whole.Correct {
		t.Errorf("correct: %d then %d", whole.Correct, again.Correct)
	}
	for key, ep := range sink.byKey() {
		ep2 := sink2.byKey()[key]
		if !reflect.DeepEqual(episodetest.Actions(ep), episodetest.Actions(ep2)) || !reflect.DeepEqual(ep.Steps[0].ToolCall, ep2.Steps[0].ToolCall) {
			t.Errorf("%s: replay differs: %v %+v, %v %+v", key, episodetest.Actions(ep), ep.Steps[0].ToolCall, episodetest.Actions(ep2), ep2.Steps[0].ToolCall)
		}
	}

	// Interrupted: a fresh server, no cache; the run is cancelled once 2 episodes are in.
	srv3 := llmtest.NewServer(t, (&fakeModel{}).handle)
	o3, sink3 := runOpts(t, "react", prompt.FormatTools, openAI(t, srv3, 0, nil), qs)
	o3.Config.Concurrency = 1
	ctx, cancel := context.WithCancel(t.Context())
	o3.Sink = sinkFunc(func(ctx context.Context, ep pipeline.Episode) error {
		err := sink3.Write(ctx, ep)
		if len(sink3.eps) == 2 {
			cancel()
		}
		return err
	})
	part, _ := Run(ctx, o3)
	if part.Stopped != StoppedInterrupted || part.Episodes >= len(qs) {
		t.Fatalf("interrupted run: %+v", part)
	}
	done, correct, before := map[string]bool{}, 0, &correctTally{}
	for _, ep := range sink3.eps {
		if !ep.Retryable() {
			done[ep.Key()] = true
			before.Add(&ep)
			if ep.Correct {
				correct++
			}
		}
	}
	o4, sink4 := runOpts(t, "react", prompt.FormatTools, openAI(t, srv3, 0, nil), qs)
	o4.Done, o4.Tally = done, before
	rest, err := Run(t.Context(), o4)
	if err != nil {
		t.Fatal(err)
	}
	if correct+rest.Correct != whole.Correct || len(done)+rest.Episodes != len(qs) {
		t.Errorf("resumed: %d + %d correct of %d + %d episodes, want %d correct of %d", correct, rest.Correct, len(done), rest.Episodes, whole.Correct, len(qs))
	}
	for _, ep := range sink4.eps {
		if done[ep.Key()] {
			t.Errorf("%s ran again on resume", ep.Key())
		}
	}
}

type sinkFunc func(ctx context.Context, ep pipeline.Episode) error

func (f sinkFunc) Write(ctx context.Context, ep pipeline.Episode) error { return f(ctx, ep) }

// TestToolsRefusedStopsTheRun: a server that does not take tools stops the run with one
// error naming the other formats, after a handful of requests.
func TestToolsRefusedStopsTheRun(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	srv.RejectTools()
	c := llm.WithBreaker(openAI(t, srv, 0, nil), 3)
	o, sink := runOpts(t, "react", prompt.FormatTools, c, manyQuestions(50))
	sum, err := Run(t.Context(), o)
	if !errors.Is(err, ErrToolsRefused) || !errors.Is(err, llm.ErrToolsUnsupported) {
		t.Fatalf("error: got %v, want ErrToolsRefused", err)
	}
	for _, want := range []string{"generate.format chat or completion", "--enable-auto-tool-choice"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if n := srv.Requests(); n > int64(o.Config.Concurrency) {
		t.Errorf("%d requests sent, want at most one per episode slot (%d)", n, o.Config.Concurrency)
	}
	if sum.Episodes > o.Config.Concurrency {
		t.Errorf("%d episodes ran", sum.Episodes)
	}
	for _, ep := range sink.eps {
		if !ep.Retryable() {
			t.Errorf("%s: stop %q is not retried on resume", ep.Key(), ep.StopReason)
		}
	}
}

// TestToolsTrainedNoRetry: a trained tools layout sends no instruction and no exemplar,
// solves the question in tool calls, and does not ask a malformed reply again (its model
// never saw the retry's turn): the step is counted bad and the environment answers it.
func TestToolsTrainedNoRetry(t *testing.T) {
	q := worldQuestions[0]
	for _, bad := range []bool{false, true} {
		fm := &fakeModel{}
		if bad {
			fm.badCall = map[string]string{q.Question: "text, no call"}
		}
		srv := llmtest.NewServer(t, fm.handle)
		g, l := testConfig("react", prompt.FormatTools)
		g.Prompting = prompt.PromptingTrained
		r, err := NewRunner(RunnerOptions{Config: g, LLM: l, Task: "hotpotqa", RunID: "test", Client: openAI(t, srv, 0, nil), NewEnv: worldEnv("hotpotqa")})
		if err != nil {
			t.Fatal(err)
		}
		ep := r.Episode(t.Context(), q, 0)
		first := srv.Log()[0].Req
		if len(first.Tools) != 3 || len(first.Messages) != 1 || first.Messages[0].Role != "user" {
			t.Errorf("bad %v: the first trained request is not the question alone with the tools: %+v", bad, first.Messages)
		}
		if !bad {
			if !ep.Correct || ep.BadCalls != 0 {
				t.Errorf("correct %v, bad calls %d: %v", ep.Correct, ep.BadCalls, episodetest.Actions(ep))
			}
			continue
		}
		st := ep.Steps[0]
		if ep.BadCalls != 1 || len(st.Calls) != 1 || st.ActionType != pipeline.ActionInvalid {
			t.Errorf("a malformed trained reply: bad calls %d, %d requests for step 1, action %q", ep.BadCalls, len(st.Calls), st.Action)
		}
	}
}
