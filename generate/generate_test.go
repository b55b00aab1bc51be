package generate

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

func TestMethods(t *testing.T) {
	tests := []struct {
		method, branch string
		q              pipeline.Question
		calls          int // LLM calls of the episode: CoT-SC's samples in one request with n
	}{
		{"standard", "", worldQuestions[0], 1},
		{"cot", "", worldQuestions[0], 1},
		{"cot-sc", "", worldQuestions[1], 1},
		{"act", "", worldQuestions[0], 3},
		{"react", "", worldQuestions[0], 3},
		{"react-cot-sc", "react", worldQuestions[0], 3},
		{"cot-sc-react", "cot-sc", worldQuestions[1], 1},
		{"cot-sc-react", "react", worldQuestions[2], 4},
	}
	for _, format := range []string{"completion", "chat"} {
		for _, tc := range tests {
			t.Run(format+"/"+tc.method+"/"+tc.q.ID, func(t *testing.T) {
				fm := &fakeModel{}
				srv := llmtest.NewServer(t, fm.handle)
				r := newRunner(t, "hotpotqa", tc.method, format, openAI(t, srv, 0, nil))
				ep := r.Episode(t.Context(), tc.q, 0)
				if !ep.Correct || ep.StopReason != pipeline.StopFinished {
					t.Fatalf("episode: correct %v stop %q prediction %q error %q, want correct %q", ep.Correct, ep.StopReason, ep.Prediction, ep.Error, tc.q.Answer)
				}
				if ep.Branch != tc.branch {
					t.Errorf("branch: got %q, want %q", ep.Branch, tc.branch)
				}
				switch by := ep.AnsweredBy(); by {
				case "react", "act":
					if !ep.Walked() {
						t.Errorf("answered by %s but not a walked trajectory: %+v", by, ep.Steps)
					}
				case "cot", "cot-sc":
					if _, ok := ep.Chain(); !ok {
						t.Errorf("answered by %s but no chain of thought", by)
					}
					if ep.Branch != "" && len(ep.Steps) != 0 {
						t.Errorf("a hybrid answered by %s has %d steps, want none", by, len(ep.Steps))
					}
				}
				if ep.LLMCalls != tc.calls || int(srv.Requests()) != tc.calls {
					t.Errorf("calls: recorded %d, server saw %d, want %d", ep.LLMCalls, srv.Requests(), tc.calls)
				}
				if ep.EM != 1 || ep.F1 != 1 {
					t.Errorf("scores: em %v f1 %v, want 1 and 1", ep.EM, ep.F1)
				}
				if ep.Policy != "fake-model" || ep.Format != format {
					t.Errorf("policy %q format %q, want fake-model and %s", ep.Policy, ep.Format, format)
				}
				if want := pipeline.EpisodeID("hotpotqa", tc.q.ID, tc.method, 0, false); ep.ID != want {
					t.Errorf("id: got %q, want %q", ep.ID, want)
				}
				if ep.Usage.TotalTokens == 0 {
					t.Errorf("usage: got no tokens")
				}
			})
		}
	}
}

func TestReActCoTSCFallsBack(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	r := newRunner(t, "hotpotqa", "react-cot-sc", "completion", openAI(t, srv, 0, nil))
	ep := r.Episode(t.Context(), worldQuestions[3], 0)
	if ep.Branch != "cot-sc" || !ep.Correct {
		t.Errorf("branch %q correct %v stop %q, want cot-sc and correct", ep.Branch, ep.Correct, ep.StopReason)
	}
	if len(ep.Samples) != 3 {
		t.Errorf("samples: got %d, want 3", len(ep.Samples))
	}
	// The steps are the trajectory ReAct walked, without a Finish it never took; the
	// answer's chain is the winning sample's.
	for i, st := range ep.Steps {
		if st.ActionType == pipeline.ActionFinish || len(st.Calls) == 0 {
			t.Errorf("step %d %q (%d calls): want only the agent's own steps", i+1, st.Action, len(st.Calls))
		}
	}
	if max := 7; len(ep.Steps) > max {
		t.Errorf("%d steps, more than the step limit %d", len(ep.Steps), max)
	}
	if ep.Walked() || ep.AnsweredBy() != "cot-sc" {
		t.Errorf("walked %v, answered by %q: want an answer of cot-sc", ep.Walked(), ep.AnsweredBy())
	}
	if chain, ok := ep.Chain(); !ok || chain != "I do not know it." {
		t.Errorf("chain: %q %v, want the winning sample's reasoning", chain, ok)
	}
}

func TestFeverReAct(t *testing.T) {
	for _, format := range []string{"completion", "chat"} {
		t.Run(format, func(t *testing.T) {
			fm := &fakeModel{}
			srv := llmtest.NewServer(t, fm.handle)
			r := newRunner(t, "fever", "react", format, openAI(t, srv, 0, nil))
			ep := r.Episode(t.Context(), feverClaims[0], 0)
			if !ep.Correct || ep.Prediction != "SUPPORTS" {
				t.Errorf("prediction %q correct %v error %q, want SUPPORTS", ep.Prediction, ep.Correct, ep.Error)
			}
			last, _ := srv.Last()
			text := last.Req.Prompt
			if format == "chat" {
				text = last.Req.Messages[1].Content
			}
			if !strings.Contains(text, "Claim: Onhava was founded in 1620.") {
				t.Errorf("request does not introduce the claim with Claim: %q", text)
			}
		})
	}
}

// TestFeverCoTAnswers drives CoT episodes whose answer is not spelled as a label. The
// answer-only path reads the spellings its instructions use (SUPPORTED, REFUTED, NOT
// ENOUGH INFORMATION) as labels; a negation is never read as the label it negates.
func TestFeverCoTAnswers(t *testing.T) {
	tests := []struct {
		answer, gold, prediction string
		correct                  bool
	}{
		{"SUPPORTS", pipeline.LabelSupports, pipeline.LabelSupports, true},
		{"supports!", pipeline.LabelSupports, pipeline.LabelSupports, true},
		{"Supported", pipeline.LabelSupports, pipeline.LabelSupports, true},
		{"REFUTED", pipeline.LabelRefutes, pipeline.LabelRefutes, true},
		{"NOT ENOUGH INFORMATION", pipeline.LabelNEI, pipeline.LabelNEI, true},
		{"not supported", pipeline.LabelSupports, "not supported", false},
		{"unsupported", pipeline.LabelSupports, "unsupported", false},
		{"The claim is not supported", pipeline.LabelSupports, "The claim is not supported", false},
		{"not refuted", pipeline.LabelRefutes, "not refuted", false},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
				return llmtest.Reply{Texts: []string{" Onhava was founded in 1620 by fishermen.\nAnswer: " + tt.answer}}
			})
			r := newRunner(t, pipeline.TaskFEVER, "cot", "completion", openAI(t, srv, 0, nil))
			q := feverClaims[0]
			q.Answer = tt.gold
			ep := r.Episode(t.Context(), q, 0)
			if !ep.Finished || ep.Prediction != tt.prediction || ep.Correct != tt.correct {
				t.Errorf("answer %q: got finished=%v prediction %q correct %v (error %q), want prediction %q correct %v",
					tt.answer, ep.Finished, ep.Prediction, ep.Correct, ep.Error, tt.prediction, tt.correct)
			}
		})
	}
}

func TestStopSequencesAndCut(t *testing.T) {
	tests := []struct{ format, first, second string }{
		{"completion", "\nObservation 1:", "\nObservation 2:"},
		{"chat", "\nObservation", "\nObservation"},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			fm := &fakeModel{}
			srv := llmtest.NewServer(t, fm.handle)
			r := newRunner(t, "hotpotqa", "react", tc.format, openAI(t, srv, 0, nil))
			ep := r.Episode(t.Context(), worldQuestions[0], 0)
			log := srv.Log()
			if len(log) < 2 {
				t.Fatalf("requests: got %d, want at least 2", len(log))
			}
			if got := log[0].Req.Stop; len(got) == 0 || got[0] != tc.first {
				t.Errorf("first stop: got %q, want %q", got, tc.first)
			}
			if got := log[1].Req.Stop; len(got) == 0 || got[0] != tc.second {
				t.Errorf("second stop: got %q, want %q", got, tc.second)
			}
			// The fake writes an Observation of its own after the action in completion
			// mode; the episode keeps the environment's (paper: the page's last sentence
			// ends in the splitter's full stop after its own).
			if got, want := ep.Steps[0].Observation, "Zembla is an island kingdom in the far north. Its capital is Onhava.."; got != want {
				t.Errorf("observation: got %q, want %q", got, want)
			}
		})
	}
}

func TestMissingActionIsReasked(t *testing.T) {
	for _, format := range []string{"completion", "chat"} {
		t.Run(format, func(t *testing.T) {
			fm := &fakeModel{noAction: map[string]bool{worldQuestions[0].Question: true}}
			srv := llmtest.NewServer(t, fm.handle)
			r := newRunner(t, "hotpotqa", "react", format, openAI(t, srv, 0, nil))
			ep := r.Episode(t.Context(), worldQuestions[0], 0)
			if !ep.Correct {
				t.Fatalf("episode not correct: stop %q error %q", ep.StopReason, ep.Error)
			}
			if ep.BadCalls != 3 || ep.LLMCalls != 6 {
				t.Errorf("bad calls %d, calls %d, want 3 and 6", ep.BadCalls, ep.LLMCalls)
			}
			if c := ep.Steps[0].Calls; len(c) != 2 || !c[0].Bad || c[1].Bad {
				t.Errorf("step 1 calls: got %+v, want a bad call then a good one", c)
			}
			if got := ep.Steps[0].Thought; got != "I need the capital of Zembla." {
				t.Errorf("thought kept from the first call: got %q", got)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	t.Run("429 with Retry-After, then 500", func(t *testing.T) {
		fm := &fakeModel{fault: func(n int) llmtest.Reply {
			switch n {
			case 1:
				return llmtest.Reply{Fault: llmtest.Fault429, RetryAfter: "7"}
			case 3:
				return llmtest.Reply{Fault: llmtest.Fault500}
			}
			return llmtest.Reply{}
		}}
		srv := llmtest.NewServer(t, fm.handle)
		var slept []time.Duration
		r := newRunner(t, "hotpotqa", "react", "chat", openAI(t, srv, 0, &slept))
		ep := r.Episode(t.Context(), worldQuestions[0], 0)
		if !ep.Correct {
			t.Fatalf("episode not correct after retries: stop %q error %q", ep.StopReason, ep.Error)
		}
		if len(slept) != 2 || slept[0] != 7*time.Second {
			t.Errorf("backoffs: got %v, want 7s (Retry-After) then one more", slept)
		}
		if ep.Steps[0].Calls[0].Retries != 1 || ep.Steps[1].Calls[0].Retries != 1 {
			t.Errorf("retries recorded: got %d and %d, want 1 and 1", ep.Steps[0].Calls[0].Retries, ep.Steps[1].Calls[0].Retries)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		fm := &fakeModel{fault: func(n int) llmtest.Reply { return llmtest.Reply{Fault: llmtest.FaultTimeout} }}
		srv := llmtest.NewServer(t, fm.handle)
		r := newRunner(t, "hotpotqa", "react", "chat", openAI(t, srv, 20*time.Millisecond, nil))
		ep := r.Episode(t.Context(), worldQuestions[0], 0)
		if ep.StopReason != pipeline.StopError || ep.Error == "" || ep.Finished {
			t.Errorf("stop %q error %q finished %v, want error", ep.StopReason, ep.Error, ep.Finished)
		}
		if len(ep.Steps) != 1 || ep.Steps[0].Calls[0].Error == "" {
			t.Errorf("the failed call is not recorded: %+v", ep.Steps)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		fm := &fakeModel{}
		srv := llmtest.NewServer(t, fm.handle)
		r := newRunner(t, "hotpotqa", "react", "chat", openAI(t, srv, 0, nil))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		ep := r.Episode(ctx, worldQuestions[0], 0)
		if ep.StopReason != pipeline.StopInterrupted {
			t.Errorf("stop: got %q, want interrupted", ep.StopReason)
		}
	})
}

func TestMaxStepsAndLoop(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	r := newRunner(t, "hotpotqa", "react", "completion", openAI(t, srv, 0, nil))
	ep := r.Episode(t.Context(), worldQuestions[3], 0)
	if ep.StopReason != pipeline.StopLoop || len(ep.Steps) != 3 || ep.Prediction != "" {
		t.Errorf("stop %q steps %d prediction %q, want loop after 3 steps", ep.StopReason, len(ep.Steps), ep.Prediction)
	}
	g, l := testConfig("react", "completion")
	g.MaxSteps = 2
	r2, err := NewRunner(RunnerOptions{Config: g, LLM: l, Task: "hotpotqa", Prompts: worldSet("hotpotqa"), Client: openAI(t, srv, 0, nil), NewEnv: worldEnv("hotpotqa")})
	if err != nil {
		t.Fatal(err)
	}
	ep = r2.Episode(t.Context(), worldQuestions[0], 0)
	if ep.StopReason != pipeline.StopMaxSteps || len(ep.Steps) != 2 || ep.Finished {
		t.Errorf("stop %q steps %d finished %v, want max_steps after 2", ep.StopReason, len(ep.Steps), ep.Finished)
	}
}

func TestAttemptsSampleAndSeed(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	r := newRunner(t, "hotpotqa", "cot", "chat", openAI(t, srv, 0, nil))
	e0 := r.Episode(t.Context(), worldQuestions[0], 0)
	e1 := r.Episode(t.Context(), worldQuestions[0], 1)
	log := srv.Log()
	if log[0].Req.Temperature != 0 || log[1].Req.Temperature != 0.7 {
		t.Errorf("temperatures: got %v and %v, want 0 then 0.7", log[0].Req.Temperature, log[1].Req.Temperature)
	}
	if e0.Seed == e1.Seed || e0.Seed != Seed(1, "q-river", 0) {
		t.Errorf("seeds: got %d and %d, want distinct and reproducible", e0.Seed, e1.Seed)
	}
	if e0.ID == e1.ID {
		t.Errorf("ids of two attempts are equal: %s", e0.ID)
	}
}

// expertActor plays the scripted moves without a model, as generate/expert does.
type expertActor struct{}

func (expertActor) Act(ctx context.Context, q pipeline.Question, history []pipeline.Step) (Move, error) {
	mv := worldScripts[q.Question].move(len(history))
	return Move{Thought: mv[0], Action: mv[1]}, nil
}

func TestExpertPolicy(t *testing.T) {
	g, l := testConfig("react", "chat")
	g.Policy = "expert"
	r, err := NewRunner(RunnerOptions{
		Config: g, LLM: l, Task: "hotpotqa", Prompts: worldSet("hotpotqa"), NewEnv: worldEnv("hotpotqa"),
		NewActor: func(pipeline.Question, int, int64) Actor { return expertActor{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	ep := r.Episode(t.Context(), worldQuestions[1], 0)
	if !ep.Correct || ep.Policy != "expert" || ep.LLMCalls != 0 {
		t.Errorf("correct %v policy %q calls %d, want a correct expert episode without calls", ep.Correct, ep.Policy, ep.LLMCalls)
	}
}

func TestPlay(t *testing.T) {
	in := strings.NewReader("Thought: The capital first.\nAction: Search[Zembla]\n\nOnhava next.\nsearch[Onhava]\nThought 3: It is the Vell.\nAction 3: Finish[Vell]\n")
	var out bytes.Buffer
	ex, err := Play(t.Context(), worldQuestions[0], worldEnv("hotpotqa")(worldQuestions[0]), in, &out)
	if err != nil {
		t.Fatalf("Play: %v", err)
	}
	if ex.Answer != "Vell" || len(ex.Steps) != 3 {
		t.Fatalf("exemplar: answer %q steps %d, want Vell and 3", ex.Answer, len(ex.Steps))
	}
	if got, want := ex.Steps[1].Action, "Search[Onhava]"; got != want {
		t.Errorf("action: got %q, want %q", got, want)
	}
	if got := ex.Steps[0].Observation; !strings.Contains(got, "Its capital is Onhava.") {
		t.Errorf("observation: got %q", got)
	}
	if !strings.Contains(out.String(), "Question: Which river") || !strings.Contains(out.String(), "Observation 1:") {
		t.Errorf("transcript: %q", out.String())
	}
	_, err = Play(t.Context(), worldQuestions[0], worldEnv("hotpotqa")(worldQuestions[0]), strings.NewReader("Thought: hm\n"), &out)
	if !errors.Is(err, ErrPlayEnded) {
		t.Errorf("short input: got %v, want ErrPlayEnded", err)
	}
}

func TestBudgetDecoratorStopsEpisode(t *testing.T) {
	fm := &fakeModel{}
	srv := llmtest.NewServer(t, fm.handle)
	c := llm.WithBudget(openAI(t, srv, 0, nil), llm.Budget{MaxRequests: 2}, nil)
	r := newRunner(t, "hotpotqa", "react", "chat", c)
	ep := r.Episode(t.Context(), worldQuestions[0], 0)
	if ep.StopReason != pipeline.StopBudget || !ep.Retryable() {
		t.Errorf("stop %q, want budget", ep.StopReason)
	}
}
