package export

import (
	"errors"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

// backOff is a react-cot-sc episode that ReAct did not finish: seven fruitless searches,
// then CoT-SC's majority answer. spliced gives it the schema 1 shape, with the CoT answer
// appended to the steps as a Finish the agent never took.
func backOff(i int, spliced bool) pipeline.Episode {
	ep := episodetest.Synth(i)
	ep.Method, ep.Branch = pipeline.MethodReActCoTSC, pipeline.MethodCoTSC
	ep.ID = pipeline.EpisodeID(ep.Task, ep.QuestionID, ep.Method, ep.Attempt, false)
	ep.Steps = nil
	for k := range 7 {
		ep.Steps = append(ep.Steps, pipeline.Step{Thought: "Try another name.", Action: "Search[Nowhere " + string(rune('A'+k)) + "]",
			ActionType: pipeline.ActionSearch, Argument: "Nowhere", Observation: "Could not find Nowhere."})
	}
	ep.Samples = []pipeline.Sample{
		{Thought: "A wrong chain.", Answer: "elsewhere"},
		{Thought: "The winning chain.", Answer: ep.Prediction},
		{Thought: "Another chain to the same answer.", Answer: ep.Prediction},
	}
	if spliced {
		ep.Schema = 1
		ep.Steps = append(ep.Steps, pipeline.Step{Thought: "The winning chain.", Action: "Finish[" + ep.Prediction + "]",
			ActionType: pipeline.ActionFinish, Argument: ep.Prediction})
	}
	return ep
}

func TestInView(t *testing.T) {
	walked := episodetest.Synth(0)
	cotsc := episodetest.Synth(1)
	cotsc.Method, cotsc.Steps = pipeline.MethodCoTSC, cotsc.Steps[len(cotsc.Steps)-1:]
	cotsc.Samples = []pipeline.Sample{{Thought: cotsc.Steps[0].Thought, Answer: cotsc.Prediction}}
	reactWon := episodetest.Synth(2)
	reactWon.Method, reactWon.Branch = pipeline.MethodCoTSCReAct, pipeline.MethodReAct
	tests := []struct {
		name string
		ep   pipeline.Episode
		in   map[string]bool
	}{
		{"react", walked, map[string]bool{ViewReAct: true, ViewAct: true, ViewCoT: false, ViewStandard: true}},
		{"cot-sc-react answered by react", reactWon, map[string]bool{ViewReAct: true, ViewAct: true, ViewCoT: false, ViewStandard: true}},
		{"cot-sc", cotsc, map[string]bool{ViewReAct: false, ViewAct: false, ViewCoT: true, ViewStandard: true}},
		{"react-cot-sc back-off", backOff(3, false), map[string]bool{ViewReAct: false, ViewAct: false, ViewCoT: true, ViewStandard: true}},
		{"react-cot-sc back-off, schema 1 splice", backOff(4, true), map[string]bool{ViewReAct: false, ViewAct: false, ViewCoT: true, ViewStandard: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range Views {
				if got := InView(&tt.ep, v); got != tt.in[v] {
					t.Errorf("InView(%s) = %v, want %v", v, got, tt.in[v])
				}
				_, err := Render(tt.ep, v, RenderOptions{})
				if (err == nil) != tt.in[v] {
					t.Errorf("Render(%s): error %v, want one exactly when the view cannot hold it", v, err)
				}
			}
		})
	}
}

// TestBackOffExport exports a mix of walked trajectories and react-cot-sc back-offs (in
// both record shapes): the react view holds only the walked ones, each ending in its own
// Finish; the back-offs are in the cot view as their winning chain; and a react-only
// export of them fails, naming the keys to change.
func TestBackOffExport(t *testing.T) {
	n := 12
	stream := func() iter.Seq2[pipeline.Episode, error] {
		return func(yield func(pipeline.Episode, error) bool) {
			for i := range n {
				ep := episodetest.Synth(i)
				if i%3 == 1 {
					ep = backOff(i, i%2 == 0)
				}
				if !yield(ep, nil) {
					return
				}
			}
		}
	}
	dir := t.TempDir()
	cfg := pipeline.ExportConfig{Formats: []string{"openai-chat", "completion", "openai-tools", "parquet"}, Views: []string{ViewReAct, ViewCoT}}
	res, err := Run(t.Context(), RunOptions{Config: cfg, Dir: dir, Kept: stream})
	if err != nil {
		t.Fatal(err)
	}
	backOffs := n / 3
	if res.ByView[ViewReAct] != n-backOffs || res.Outside[ViewReAct] != backOffs || res.ByView[ViewCoT] != backOffs || res.Outside[ViewCoT] != n-backOffs {
		t.Errorf("by view %v, outside %v: want react %d (outside %d), cot %d", res.ByView, res.Outside, n-backOffs, backOffs, backOffs)
	}
	for _, row := range readJSONLRows(t, filepath.Join(dir, "openai-chat.train.jsonl")) {
		msgs := row["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)["content"].(string)
		if strings.Contains(last, "The winning chain") || strings.Contains(last, "Nowhere") || len(msgs) > 1+2*7-1 {
			t.Errorf("react row ends in %q after %d turns: not a walked trajectory", last, len(msgs))
		}
		if !strings.Contains(last, "Action: Finish[") {
			t.Errorf("react row ends in %q, not in the agent's Finish", last)
		}
	}
	cot := readJSONLRows(t, filepath.Join(dir, "openai-chat.cot.train.jsonl"))
	if len(cot) == 0 {
		t.Fatal("no cot rows in the train split")
	}
	for _, row := range cot {
		msgs := row["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)["content"].(string)
		if !strings.HasPrefix(last, "Thought: The winning chain.\nAnswer: ") {
			t.Errorf("cot row ends in %q, want the winning chain and its answer", last)
		}
	}
	card, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(card), "| react | 8 | 4 |") || !strings.Contains(string(card), "| cot | 4 | 8 |") {
		t.Errorf("card has no view counts:\n%s", card)
	}

	cfg.Views = []string{ViewReAct}
	_, err = Run(t.Context(), RunOptions{Config: cfg, Dir: t.TempDir(), Kept: stream})
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "filter.answered_by") || !strings.Contains(err.Error(), "export.views") {
		t.Errorf("react-only export of back-offs: got %v, want a ValidationError naming export.views and filter.answered_by", err)
	}
}
