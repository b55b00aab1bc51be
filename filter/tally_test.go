package filter

import (
	"fmt"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestTallyCountsWhatTheFilterKeeps: over a stream with wrong answers, repeated
// trajectories and several attempts per question, the Tally's count is the number of
// episodes the chain keeps, for every dedupe cap and policy and without dedupe; and a
// question is solved exactly when a further episode of it could not be kept.
func TestTallyCountsWhatTheFilterKeeps(t *testing.T) {
	var eps []pipeline.Episode
	for i := range 60 {
		q := fmt.Sprint("q", i%9)
		ep := episodetest.Episode(fmt.Sprintf("e%02d", i), q, fmt.Sprintf("Search[%d]", i%4), "Finish[Aldbrook]")
		switch {
		case i%7 == 3:
			ep.Prediction = "Millbrook" // wrong
		case i%11 == 5:
			ep.StopReason = pipeline.StopError // retried on resume: never counted
		}
		eps = append(eps, ep)
	}
	for _, rules := range [][]string{{"finished", "correct"}, {"finished", "correct", "dedupe"}} {
		for _, cap := range []int{0, 1, 2} {
			for _, policy := range []string{"first", "shortest", "diverse"} {
				name := fmt.Sprint(rules, " cap ", cap, " ", policy)
				cfg := pipeline.FilterConfig{Rules: rules, MaxPerQuestion: cap, DedupePolicy: policy}
				chain, err := New(cfg, pipeline.TaskHotpotQA, Options{})
				if err != nil {
					t.Fatal(err)
				}
				st, err := chain.Run(t.Context(), episodetest.Seq(eps), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				tc, _ := New(cfg, pipeline.TaskHotpotQA, Options{})
				tally := tc.Tally()
				perQ := map[string]int{}
				for i := range eps {
					if tally.Add(&eps[i]) {
						perQ[eps[i].QuestionID]++
					}
				}
				if tally.Kept() != st.Kept {
					t.Errorf("%s: tally %d, the filter keeps %d", name, tally.Kept(), st.Kept)
				}
				for q, n := range perQ {
					want := n > 0
					if len(rules) == 3 && cap > 0 {
						want = n >= cap
					}
					if tally.Solved(q) != want {
						t.Errorf("%s: %s holds %d, solved %v", name, q, n, tally.Solved(q))
					}
				}
			}
		}
	}
}
