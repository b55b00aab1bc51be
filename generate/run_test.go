package generate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// manyQuestions repeats the world's questions under distinct ids.
func manyQuestions(n int) []pipeline.Question {
	qs := make([]pipeline.Question, n)
	for i := range qs {
		qs[i] = worldQuestions[i%3]
		qs[i].ID = fmt.Sprintf("%s-%d", qs[i].ID, i)
	}
	return qs
}

func runOpts(t *testing.T, method, format string, c llm.Client, qs []pipeline.Question) (RunOptions, *memSink) {
	t.Helper()
	g, l := testConfig(method, format)
	sink := &memSink{}
	return RunOptions{
		Config: g, LLM: l, Task: "hotpotqa", RunID: "run", Questions: qs, Prompts: worldSet("hotpotqa"),
		NewEnv: worldEnv("hotpotqa"), Client: c, Sink: sink,
	}, sink
}

func TestRunPrefixIsIdentical(t *testing.T) {
	for _, format := range []string{"completion", "chat"} {
		t.Run(format, func(t *testing.T) {
			fm := &fakeModel{noAction: map[string]bool{worldQuestions[1].Question: true}}
			srv := llmtest.NewServer(t, fm.handle)
			o, sink := runOpts(t, "react", format, openAI(t, srv, 0, nil), manyQuestions(9))
			o.Config.Attempts, o.Tally = 2, unsolved{} // every question gets both attempts
			sum, err := Run(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Episodes != 18 || sum.Correct != 18 || len(sink.eps) != 18 || sum.Stopped != StoppedDone {
				t.Fatalf("summary %+v, sink %d: want 18 correct episodes, done", sum, len(sink.eps))
			}
			set, _ := worldSet("hotpotqa").For("react")
			l, _ := prompt.NewLayout(set, format)
			log := srv.Log()
			if len(log) < 18*3 {
				t.Fatalf("requests: got %d, want at least 54", len(log))
			}
			for i, rec := range log {
				if format == "completion" && !strings.HasPrefix(rec.Req.Prompt, l.Prefix()) {
					t.Fatalf("request %d does not start with the shared prefix", i)
				}
				if format == "chat" && (rec.Req.Messages[0].Role != "system" || rec.Req.Messages[0].Content != l.Prefix()) {
					t.Fatalf("request %d: system message differs from the shared prefix", i)
				}
			}
		})
	}
}

func TestRunBudgetStop(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	c := llm.WithBudget(openAI(t, srv, 0, nil), llm.Budget{MaxRequests: 10}, nil)
	o, sink := runOpts(t, "react", "chat", c, manyQuestions(30))
	sum, err := Run(t.Context(), o)
	if err != nil {
		t.Fatalf("a budget stop is clean, got %v", err)
	}
	if sum.Stopped != StoppedBudget {
		t.Errorf("stopped: got %q, want budget", sum.Stopped)
	}
	if srv.Requests() != 10 {
		t.Errorf("requests: got %d, want 10", srv.Requests())
	}
	budget := 0
	for _, ep := range sink.eps {
		if ep.StopReason == pipeline.StopBudget {
			budget++
		}
	}
	if budget == 0 || len(sink.eps) >= 30 {
		t.Errorf("episodes %d with %d budget stops: want some budget stops and unstarted questions", len(sink.eps), budget)
	}
}

func TestRunCacheReplays(t *testing.T) {
	dir := t.TempDir()
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	var firsts [2]Summary
	for i := range 2 {
		o, _ := runOpts(t, "react", "completion", llm.WithCache(openAI(t, srv, 0, nil), dir), manyQuestions(6))
		sum, err := Run(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		firsts[i] = sum
		if i == 0 {
			if srv.Requests() == 0 {
				t.Fatalf("first run made no requests")
			}
			continue
		}
		if got := srv.Requests(); got != int64(firsts[0].Requests) {
			t.Errorf("second run: server saw %d requests in all, want the first run's %d only", got, firsts[0].Requests)
		}
	}
	if firsts[0].Correct != firsts[1].Correct {
		t.Errorf("correct: %d then %d, want equal", firsts[0].Correct, firsts[1].Correct)
	}
}

func TestRunTargetAndResume(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	qs := manyQuestions(40)
	o, sink := runOpts(t, "cot", "chat", openAI(t, srv, 0, nil), qs)
	o.Config.TargetCorrect, o.Config.Concurrency = 5, 1
	sum, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Stopped != StoppedTarget || sum.Correct < 5 || sum.Episodes >= 40 {
		t.Errorf("summary %+v, want a target stop after 5 correct", sum)
	}
	// Resume: the written keys are done and counted; three more of a target of 8.
	done := map[string]bool{}
	before := &correctTally{}
	for _, ep := range sink.eps {
		done[ep.Key()] = true
		before.Add(&ep)
	}
	o2, sink2 := runOpts(t, "cot", "chat", openAI(t, srv, 0, nil), qs)
	o2.Done, o2.Tally, o2.Config.TargetCorrect, o2.Config.Concurrency = done, before, sum.Correct+3, 1
	sum2, err := Run(t.Context(), o2)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range sink2.eps {
		if done[ep.Key()] {
			t.Errorf("episode %s ran again on resume", ep.Key())
		}
	}
	if sum2.Correct < 3 || sum2.Planned != 40-len(done) {
		t.Errorf("resume summary %+v, want 3 more correct of %d planned", sum2, 40-len(done))
	}
	// The shuffled order is the seed's: a second run with the same seed starts alike.
	o3, sink3 := runOpts(t, "cot", "chat", openAI(t, srv, 0, nil), qs)
	o3.Config.TargetCorrect, o3.Config.Concurrency = 5, 1
	if _, err := Run(t.Context(), o3); err != nil {
		t.Fatal(err)
	}
	if sink3.eps[0].QuestionID != sink.eps[0].QuestionID || sink3.eps[0].QuestionID == qs[0].ID && sink3.eps[1].QuestionID == qs[1].ID {
		t.Errorf("order: first %s then %s, want the same seeded shuffle", sink.eps[0].QuestionID, sink3.eps[0].QuestionID)
	}
}

func TestRunRationalize(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	// The fake's Standard answer to this question is always "100 km": q-hint is right,
	// q-wrong is wrong and is tried once more with the hint.
	q := pipeline.Question{ID: "q-hint", Task: "hotpotqa", Question: "How long is the river of Onhava?", Answer: "100 km"}
	wrong := pipeline.Question{ID: "q-wrong", Task: "hotpotqa", Question: "How long is the river of Onhava?", Answer: "999 km"}
	o, sink := runOpts(t, "standard", "completion", openAI(t, srv, 0, nil), []pipeline.Question{q, wrong, worldQuestions[0]})
	o.Config.Rationalize = true
	sum, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rationalized != 1 {
		t.Fatalf("rationalized: got %d, want 1 (only q-wrong failed)", sum.Rationalized)
	}
	eps := sink.byKey()
	ep, ok := eps["q-wrong#1"]
	if !ok || !ep.Rationalized {
		t.Fatalf("no rationalized episode at q-wrong#1: %v", eps)
	}
	if strings.Contains(ep.Question, "Hint") || ep.Question != wrong.Question {
		t.Errorf("recorded question: got %q, want it without the hint", ep.Question)
	}
	if ep.ID != pipeline.EpisodeID("hotpotqa", "q-wrong", "standard", 1, true) {
		t.Errorf("id: got %s, want the rationalized id", ep.ID)
	}
	last, _ := srv.Last()
	if !strings.Contains(last.Req.Prompt, "(Hint: the answer is 999 km.)") {
		t.Errorf("the hint is not in the prompt: %q", last.Req.Prompt[max(0, len(last.Req.Prompt)-120):])
	}
}

func TestRunUnusable(t *testing.T) {
	fm := &fakeModel{fault: func(int) llmtest.Reply { return llmtest.Reply{Fault: llmtest.FaultUnauthorized} }}
	srv := llmtest.NewServer(t, fm.handle)
	c := llm.WithBreaker(openAI(t, srv, 0, nil), 3)
	o, _ := runOpts(t, "react", "chat", c, manyQuestions(50))
	sum, err := Run(t.Context(), o)
	if !errors.Is(err, llm.ErrUnusable) {
		t.Fatalf("error: got %v, want ErrUnusable", err)
	}
	if sum.Stopped != StoppedUnusable || srv.Requests() > int64(3+o.Config.Concurrency) {
		t.Errorf("stopped %q after %d requests, want unusable after at most 3 + concurrency", sum.Stopped, srv.Requests())
	}
}

func TestRunInterrupted(t *testing.T) {
	started := make(chan struct{}, 100)
	release := make(chan struct{})
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return fm.handle(ctx, r)
	})
	o, sink := runOpts(t, "react", "chat", openAI(t, srv, 0, nil), manyQuestions(20))
	o.Config.Concurrency = 2
	soft, stopSoft := context.WithCancel(t.Context())
	hard, stopHard := context.WithCancel(t.Context())
	done := make(chan Summary)
	go func() {
		sum, _ := RunGraceful(soft, hard, o)
		done <- sum
	}()
	<-started
	<-started
	stopSoft() // no new episodes; the two in flight may finish
	close(release)
	sum := <-done
	stopHard()
	if sum.Stopped != StoppedInterrupted || sum.Episodes != 2 {
		t.Errorf("summary %+v, want 2 episodes and interrupted", sum)
	}
	for _, ep := range sink.eps {
		if !ep.Correct {
			t.Errorf("in-flight episode %s did not finish: %q", ep.Key(), ep.StopReason)
		}
	}

	// Cancelling the hard context cuts the in-flight episodes short.
	srv2 := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		<-ctx.Done()
		return llmtest.Reply{}
	})
	o2, sink2 := runOpts(t, "react", "chat", openAI(t, srv2, 0, nil), manyQuestions(4))
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for srv2.Requests() < 4 {
			select {
			case <-t.Context().Done():
				return
			default:
			}
		}
		cancel()
	}()
	sum2, _ := Run(ctx, o2)
	if sum2.Episodes != 4 {
		t.Fatalf("episodes: got %d, want 4", sum2.Episodes)
	}
	for _, ep := range sink2.eps {
		if ep.StopReason != pipeline.StopInterrupted {
			t.Errorf("episode %s: stop %q, want interrupted", ep.Key(), ep.StopReason)
		}
	}
}

func TestProgressLines(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	var buf bytes.Buffer
	o, _ := runOpts(t, "cot", "chat", openAI(t, srv, 0, nil), manyQuestions(3))
	o.Progress, o.Config.Progress = &buf, "lines"
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{"episodes 3/3", "kept 3", "correct 3", "requests 3", "per kept $", "stopped: done"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress %q lacks %q", got, want)
		}
	}
	// With a target the line counts toward it, and the last one, after the stop, has no ETA.
	buf.Reset()
	o.Sink, o.Questions, o.Config.TargetCorrect, o.Config.Concurrency = &memSink{}, manyQuestions(12), 2, 1
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "kept 2/2") || !strings.Contains(last, "stopped: target") || strings.Contains(last, "eta") {
		t.Errorf("last progress line %q: want kept 2/2, stopped: target and no eta", last)
	}
	buf.Reset()
	o.Config.Progress = "bar"
	o.Sink = &memSink{}
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "\r") {
		t.Errorf("bar mode does not redraw with \\r: %q", buf.String())
	}
}

// TestCoTSCSamplesInOneRequest runs CoT-SC over 100 questions against servers that honour
// n, ignore it and reject it, through the client llm.New builds: one request per question
// where n is honoured, one per sample (after one request that finds out) where it is not,
// and the same samples and votes either way.
func TestCoTSCSamplesInOneRequest(t *testing.T) {
	const questions, samples = 100, 21
	tests := []struct {
		name     string
		mode     func(*llmtest.Server)
		requests int64
		calls    int // recorded per episode
	}{
		{"honours n", func(*llmtest.Server) {}, questions, 1},
		{"ignores n", (*llmtest.Server).IgnoreN, 1 + questions*samples, samples},
		{"rejects n", (*llmtest.Server).RejectN, 1 + questions*samples, samples},
	}
	var want map[string][]string // question id -> the samples' answers, then the prediction
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := &fakeModel{}
			srv := llmtest.NewServer(t, fm.handle)
			tt.mode(srv)
			cfg := pipeline.Default().LLM
			cfg.BaseURL, cfg.Model, cfg.Cache = srv.URL, "fake-model", false
			c, _, _, err := llm.New(t.Context(), cfg, "", "")
			if err != nil {
				t.Fatal(err)
			}
			o, sink := runOpts(t, "cot-sc", "chat", c, manyQuestions(questions))
			o.Config.Samples, o.Config.Concurrency = samples, 8
			sum, err := Run(t.Context(), o)
			if err != nil || sum.Episodes != questions {
				t.Fatalf("run: %+v, %v", sum, err)
			}
			if got := srv.Requests(); got != tt.requests {
				t.Errorf("server requests: got %d, want %d", got, tt.requests)
			}
			got := map[string][]string{}
			for _, ep := range sink.eps {
				if ep.LLMCalls != tt.calls || len(ep.Samples) != samples {
					t.Fatalf("episode %s: %d calls, %d samples, want %d and %d (error %q)", ep.QuestionID, ep.LLMCalls, len(ep.Samples), tt.calls, samples, ep.Error)
				}
				for _, sm := range ep.Samples {
					got[ep.QuestionID] = append(got[ep.QuestionID], sm.Answer)
				}
				got[ep.QuestionID] = append(got[ep.QuestionID], ep.Prediction)
			}
			if want == nil {
				want = got
				return
			}
			for id, w := range want {
				if fmt.Sprint(got[id]) != fmt.Sprint(w) {
					t.Errorf("question %s: samples and prediction %v, want %v as with n honoured", id, got[id], w)
				}
			}
		})
	}
}

// TestPoolLosesNoEpisodeWhenAnEndpointDies runs ReAct over a pool of three endpoints and
// kills one of them mid-run: its requests move to the others, and every episode ends as
// it would have with no failure.
func TestPoolLosesNoEpisodeWhenAnEndpointDies(t *testing.T) {
	const questions = 60
	var servers []*llmtest.Server
	var seen atomic.Int64
	for i := range 3 {
		fm := &fakeModel{delay: func() time.Duration { return 2 * time.Millisecond }}
		var s *llmtest.Server
		s = llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
			if i == 0 && seen.Add(1) == 40 {
				go s.Kill()
			}
			return fm.handle(ctx, r)
		})
		servers = append(servers, s)
	}
	cfg := pipeline.Default().LLM
	cfg.Model, cfg.Cache, cfg.BackoffBase, cfg.BackoffMax = "fake-model", false, time.Millisecond, 5*time.Millisecond
	for _, s := range servers {
		cfg.Endpoints = append(cfg.Endpoints, pipeline.EndpointConfig{BaseURL: s.URL, Concurrency: 4})
	}
	cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	o, sink := runOpts(t, "react", "chat", cs.Client, manyQuestions(questions))
	o.Config.Concurrency = 12
	sum, err := Run(t.Context(), o)
	if err != nil || sum.Episodes != questions || sum.Correct != questions {
		t.Fatalf("run: %+v, %v: want %d correct episodes", sum, err, questions)
	}
	for _, ep := range sink.eps {
		if ep.Error != "" {
			t.Errorf("episode %s: %s", ep.QuestionID, ep.Error)
		}
	}
	st := cs.Pool.Stats()
	if st[0].Ejections == 0 || st[1].Served == 0 || st[2].Served == 0 {
		t.Errorf("pool stats %+v: want the killed endpoint taken out and the others serving", st)
	}
	if seen.Load() < 40 {
		t.Errorf("the first endpoint saw %d requests, so it was never killed", seen.Load())
	}
}

// unsolved is a Tally under which no question is ever solved: every attempt runs.
type unsolved struct{}

func (unsolved) Add(ep *pipeline.Episode) bool { return ep.Correct }
func (unsolved) Solved(string) bool            { return false }
func (unsolved) Kept() int                     { return 0 }

// TestAttemptsOnlyOnUnsolved: a question's next attempt runs only while the question is
// not solved, and after the one before it ended: the questions solved at once get one
// episode, the one never solved gets every attempt.
func TestAttemptsOnlyOnUnsolved(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	qs := append(manyQuestions(6), worldQuestions[3]) // q-loop: ReAct loops, never correct
	o, sink := runOpts(t, "react", "chat", openAI(t, srv, 0, nil), qs)
	o.Config.Attempts, o.Config.Concurrency = 3, 4
	sum, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string][]pipeline.Episode{}
	for _, ep := range sink.eps {
		per[ep.QuestionID] = append(per[ep.QuestionID], ep)
	}
	for _, q := range qs {
		eps := per[q.ID]
		want := 1
		if q.ID == "q-loop" {
			want = 3
		}
		if len(eps) != want {
			t.Errorf("%s: %d episodes, want %d", q.ID, len(eps), want)
		}
		for i, ep := range eps {
			if ep.Attempt != i {
				t.Errorf("%s: episode %d is attempt %d, want the attempts in order", q.ID, i, ep.Attempt)
			}
		}
	}
	if sum.Planned != 3*len(qs) || sum.Skipped != 2*(len(qs)-1) || sum.Kept != len(qs)-1 {
		t.Errorf("summary %+v: want %d planned, %d skipped, %d kept", sum, 3*len(qs), 2*(len(qs)-1), len(qs)-1)
	}
}
