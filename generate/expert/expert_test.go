package expert

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envtest"
	"github.com/reactgen/reactgen/internal/sentence"
	"github.com/reactgen/reactgen/pipeline"
)

const demoDir = "../../data/demo/"

func readDemo(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(demoDir + name)
	if err != nil {
		t.Fatalf("read demo: %v", err)
	}
	return b
}

// demoCorpus loads the committed demo corpus the way the pipeline does: page texts split
// with sentence.Split.
func demoCorpus(t *testing.T) env.Corpus {
	t.Helper()
	var pages []env.Page
	sc := bufio.NewScanner(bytes.NewReader(readDemo(t, "corpus.jsonl")))
	for line := 1; sc.Scan(); line++ {
		var rec struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("corpus.jsonl line %d: %v", line, err)
		}
		pages = append(pages, env.Page{
			Title: rec.Title, Sentences: sentence.Split(rec.Text),
			Disambiguation: strings.Contains(rec.Text, "may refer to:"),
		})
	}
	return envtest.NewMemory(pages)
}

func demoHotpot(t *testing.T) []pipeline.Question {
	t.Helper()
	var raw []struct {
		ID              string  `json:"_id"`
		Question        string  `json:"question"`
		Answer          string  `json:"answer"`
		Type            string  `json:"type"`
		SupportingFacts [][]any `json:"supporting_facts"`
	}
	if err := json.Unmarshal(readDemo(t, "hotpotqa.json"), &raw); err != nil {
		t.Fatalf("hotpotqa.json: %v", err)
	}
	var out []pipeline.Question
	for _, r := range raw {
		q := pipeline.Question{ID: r.ID, Task: pipeline.TaskHotpotQA, Question: r.Question, Answer: r.Answer, Type: r.Type}
		for _, f := range r.SupportingFacts {
			q.SupportingFacts = append(q.SupportingFacts, pipeline.Fact{Title: f[0].(string), Sentence: int(f[1].(float64))})
		}
		out = append(out, q)
	}
	return out
}

func demoFever(t *testing.T) []pipeline.Question {
	t.Helper()
	var out []pipeline.Question
	sc := bufio.NewScanner(bytes.NewReader(readDemo(t, "fever.jsonl")))
	for line := 1; sc.Scan(); line++ {
		var r struct {
			ID       int       `json:"id"`
			Label    string    `json:"label"`
			Claim    string    `json:"claim"`
			Evidence [][][]any `json:"evidence"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("fever.jsonl line %d: %v", line, err)
		}
		q := pipeline.Question{ID: fmt.Sprint(r.ID), Task: pipeline.TaskFEVER, Question: r.Claim, Answer: r.Label, Type: r.Label}
		for _, set := range r.Evidence {
			for _, e := range set {
				if title, ok := e[2].(string); ok {
					q.SupportingFacts = append(q.SupportingFacts, pipeline.Fact{Title: title, Sentence: int(e[3].(float64))})
				}
			}
		}
		out = append(out, q)
	}
	return out
}

// play runs one episode of the expert through the real environment, in paper mode or,
// with rules set, in rules mode.
func play(ctx context.Context, x *Expert, c env.Corpus, q pipeline.Question, rules bool) ([]pipeline.Step, env.Result, error) {
	opts := env.Options{Task: q.Task, Gold: q.Answer, Sentences: 5, MaxObservationChars: 2000}
	if rules {
		opts.Observations, opts.Actions = env.ObservationsRules, env.ActionsLenient
	}
	w := env.New(c, opts)
	var steps []pipeline.Step
	limit := pipeline.GenerateConfig{}.MaxStepsFor(q.Task)
	for len(steps) < limit {
		m, err := x.Act(ctx, q, steps)
		if err != nil {
			return steps, env.Result{}, err
		}
		res, err := w.Step(ctx, m.Action)
		if err != nil {
			return steps, env.Result{}, err
		}
		steps = append(steps, pipeline.Step{Thought: m.Thought, Action: res.Action.String(), ActionType: res.Action.Type, Argument: res.Action.Argument, Observation: res.Observation})
		if res.Done {
			return steps, res, nil
		}
	}
	return steps, env.Result{}, nil
}

// TestDemoWorld plays every demo question and claim in both observation modes and
// requires the gold answer within the paper's step limits, with no invalid action and no
// action three times in a row.
func TestDemoWorld(t *testing.T) {
	c := demoCorpus(t)
	x := New(c)
	for _, set := range []struct {
		name  string
		qs    []pipeline.Question
		rules bool
	}{{"hotpotqa", demoHotpot(t), false}, {"fever", demoFever(t), false}, {"hotpotqa rules", demoHotpot(t), true}, {"fever rules", demoFever(t), true}} {
		t.Run(set.name, func(t *testing.T) {
			solved, lookups := 0, 0
			for _, q := range set.qs {
				steps, res, err := play(t.Context(), x, c, q, set.rules)
				if err != nil {
					t.Fatalf("%s: %v", q.ID, err)
				}
				for i, s := range steps {
					if s.ActionType == pipeline.ActionInvalid {
						t.Errorf("%s step %d: invalid action %q", q.ID, i+1, s.Action)
					}
					if s.ActionType == pipeline.ActionLookup {
						lookups++
					}
					if i >= 2 && s.Action == steps[i-1].Action && s.Action == steps[i-2].Action {
						t.Errorf("%s step %d: %q three times in a row", q.ID, i+1, s.Action)
					}
				}
				if res.Done && res.Answer == q.Answer {
					solved++
				} else {
					t.Errorf("%s %q: got %q done=%v after %d steps, want %q; steps %+v", q.ID, q.Question, res.Answer, res.Done, len(steps), q.Answer, steps)
				}
			}
			t.Logf("%s: expert solved %d / %d within %d steps (%.1f%%), %d lookups", set.name, solved, len(set.qs),
				pipeline.GenerateConfig{}.MaxStepsFor(set.qs[0].Task), 100*float64(solved)/float64(len(set.qs)), lookups)
			if lookups == 0 && set.qs[0].Task == pipeline.TaskHotpotQA {
				t.Errorf("no episode needed Lookup; the demo world should need some")
			}
		})
	}
}

// TestConcurrent plays the same questions from many goroutines on one Expert.
func TestConcurrent(t *testing.T) {
	c := demoCorpus(t)
	x := New(c)
	qs := demoHotpot(t)[:40]
	var wg sync.WaitGroup
	errs := make(chan error, len(qs))
	for _, q := range qs {
		wg.Go(func() {
			_, res, err := play(t.Context(), x, c, q, false)
			if err == nil && res.Answer != q.Answer {
				err = fmt.Errorf("%s: got %q, want %q", q.ID, res.Answer, q.Answer)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testPages() []env.Page {
	return []env.Page{
		{Title: "Omvar Teel", Sentences: []string{
			"Omvar Teel was a cartographer.", "Teel drew maps of the coast.", "Teel lived by the sea.",
			"Teel kept a boat.", "Teel owned three dogs.", "Teel was born in Brisk in 1850.", "Teel was born again, said his friends.",
		}},
		{Title: "Brisk", Sentences: []string{"Brisk is a town in Welm.", "Brisk lies on the Aun River."}},
		{Title: "Brisk Harbour", Sentences: []string{"Brisk Harbour is a port."}},
	}
}

func TestMoves(t *testing.T) {
	c := envtest.NewMemory(testPages())
	x := New(c)
	q := pipeline.Question{
		Task: pipeline.TaskHotpotQA, Question: "On which river lies the birthplace of Omvar Teel?", Answer: "Aun River",
		SupportingFacts: []pipeline.Fact{{Title: "Omvar_Teel", Sentence: 5}, {Title: "Brisk", Sentence: 1}},
	}
	searchTeel := pipeline.Step{Action: "Search[Omvar Teel]", Observation: strings.Join(testPages()[0].Sentences[:5], " ")}
	tests := []struct {
		name    string
		history []pipeline.Step
		want    string
	}{
		{"start", nil, "Search[Omvar Teel]"},
		{"needed sentence past the fifth", []pipeline.Step{searchTeel}, "Lookup[born]"},
		{"after lookup", []pipeline.Step{searchTeel, {Action: "Lookup[born]", Observation: "(Result 1 / 2) Teel was born in Brisk in 1850."}}, "Search[Brisk]"},
		{"failed search picks a similar title", []pipeline.Step{searchTeel,
			{Action: "Lookup[born]", Observation: "(Result 1 / 2) Teel was born in Brisk in 1850."},
			{Action: "Search[Brisk]", Observation: "Could not find [Brisk]. Similar: ['Brisk Harbour', 'Brisk (town)', 'Welm']."},
		}, "Search[Brisk (town)]"},
		{"paper lookup shows part of the sentence", []pipeline.Step{searchTeel, {Action: "Lookup[born]", Observation: "(Result 1 / 2) Brisk in 1850."}}, "Search[Brisk]"},
		{"all seen", []pipeline.Step{searchTeel,
			{Action: "Lookup[born]", Observation: "(Result 1 / 2) Teel was born in Brisk in 1850."},
			{Action: "Search[Brisk]", Observation: "Brisk is a town in Welm. Brisk lies on the Aun River."},
		}, "Finish[Aun River]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := x.Act(t.Context(), q, tt.history)
			if err != nil {
				t.Fatalf("Act: %v", err)
			}
			if m.Action != tt.want {
				t.Errorf("action: got %q, want %q", m.Action, tt.want)
			}
			if m.Thought == "" {
				t.Errorf("empty thought for %q", m.Action)
			}
		})
	}
}

func TestFEVERNotEnoughInfo(t *testing.T) {
	x := New(envtest.NewMemory(testPages()))
	q := pipeline.Question{Task: pipeline.TaskFEVER, Question: "Omvar Teel played the harp at court.", Answer: pipeline.LabelNEI}
	m, err := x.Act(t.Context(), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Search[Omvar Teel]"; m.Action != want {
		t.Errorf("first action: got %q, want %q", m.Action, want)
	}
	m, err = x.Act(t.Context(), q, []pipeline.Step{{Action: m.Action, Observation: "Omvar Teel was a cartographer."}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Finish[NOT ENOUGH INFO]"; m.Action != want {
		t.Errorf("second action: got %q, want %q", m.Action, want)
	}
}

func TestKeyword(t *testing.T) {
	s := testPages()[0].Sentences
	tests := []struct {
		target int
		want   string
	}{
		{5, "born"},
		{6, "friends"},
		{1, "coast"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.target), func(t *testing.T) {
			if got := keyword(s, tt.target); got != tt.want {
				t.Errorf("keyword(%d): got %q, want %q", tt.target, got, tt.want)
			}
		})
	}
	if got, want := keyword([]string{"Aa bb.", "Aa bb."}, 1), "Aa bb"; got != want {
		t.Errorf("keyword with no unique word: got %q, want %q", got, want)
	}
}

func TestEntity(t *testing.T) {
	tests := []struct{ claim, want string }{
		{"Omvar Teel played the harp at court.", "Omvar Teel"},
		{"The Lantern of Quell was adapted into a stage musical.", "The Lantern of Quell"},
		{"Loufo hosted a chess tournament in 1996.", "Loufo"},
		{"In 1990, Velm Orsk Press employs more than 4,000 people.", "Velm Orsk Press"},
		{"nothing capitalised here", ""},
	}
	for _, tt := range tests {
		t.Run(tt.claim, func(t *testing.T) {
			if got := entity(tt.claim); got != tt.want {
				t.Errorf("entity: got %q, want %q", got, tt.want)
			}
		})
	}
}

// actsWithoutAnswer lets x act on q for up to seven steps, step turning each action
// into the step the history records: the expert must never answer, and may fail only
// with ErrNoEvidence. It reports whether it failed so.
func actsWithoutAnswer(t *testing.T, x *Expert, q pipeline.Question, step func(action string) pipeline.Step) bool {
	t.Helper()
	var history []pipeline.Step
	for range 7 {
		m, err := x.Act(t.Context(), q, history)
		if err != nil {
			if !errors.Is(err, ErrNoEvidence) {
				t.Fatalf("Act: %v, want ErrNoEvidence", err)
			}
			return true
		}
		if strings.HasPrefix(m.Action, "Finish[") {
			t.Fatalf("%s: after %d steps the expert answered %s with no evidence", q.Task, len(history), m.Action)
		}
		history = append(history, step(m.Action))
	}
	return false
}

func TestNoEvidenceNoAnswer(t *testing.T) {
	q := pipeline.Question{
		Task: pipeline.TaskHotpotQA, Question: "On which river lies the birthplace of Omvar Teel?", Answer: "Aun River",
		SupportingFacts: []pipeline.Fact{{Title: "Omvar_Teel", Sentence: 5}, {Title: "Brisk", Sentence: 1}},
	}
	for _, tc := range []struct {
		name  string
		pages []env.Page
	}{
		{"no gold page", testPages()[2:]},
		{"one gold page missing", testPages()[:1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := envtest.NewMemory(tc.pages)
			x := New(c)
			opts := env.OptionsFor(pipeline.TaskHotpotQA, pipeline.Default().Env)
			opts.Gold = q.Answer
			w := env.New(c, opts)
			if !actsWithoutAnswer(t, x, q, func(action string) pipeline.Step {
				res, err := w.Step(t.Context(), action)
				if err != nil {
					t.Fatal(err)
				}
				return pipeline.Step{Action: res.Action.String(), Observation: res.Observation}
			}) {
				t.Fatal("the expert neither answered nor failed")
			}
		})
	}
	// A question with no supporting facts at all (a JSONL task file of id, question and
	// answer; a FEVER claim labelled SUPPORTS without its evidence) must not be answered
	// correctly out of the gold answer with no evidence found; NOT ENOUGH INFO needs none.
	t.Run("no supporting facts", func(t *testing.T) {
		x := New(envtest.NewMemory(testPages()))
		for _, q := range []pipeline.Question{
			{Task: pipeline.TaskHotpotQA, Question: q.Question, Answer: q.Answer},
			{Task: pipeline.TaskFEVER, Question: "Omvar Teel was born by the Aun River.", Answer: pipeline.LabelSupports},
		} {
			actsWithoutAnswer(t, x, q, func(action string) pipeline.Step {
				return pipeline.Step{Action: action, Observation: "Could not find it."}
			})
		}
		nei := pipeline.Question{Task: pipeline.TaskFEVER, Question: "Omvar Teel liked tea.", Answer: pipeline.LabelNEI}
		if _, err := x.Act(t.Context(), nei, nil); err != nil {
			t.Errorf("NOT ENOUGH INFO: %v", err)
		}
	})
	t.Run("step limit before the evidence", func(t *testing.T) {
		x := New(envtest.NewMemory(testPages()))
		// Six steps that showed nothing: the seventh and last may not answer.
		history := make([]pipeline.Step, 6)
		for i := range history {
			history[i] = pipeline.Step{Action: "Search[Nowhere]", Observation: "Could not find Nowhere."}
		}
		if m, err := x.Act(t.Context(), q, history); !errors.Is(err, ErrNoEvidence) {
			t.Errorf("got %s, %v; want ErrNoEvidence", m.Action, err)
		}
	})
}
