package export

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"

	"github.com/reactgen/reactgen/pipeline"
)

var fixtureWords = strings.Fields(`river castle engine violin harbor meadow lantern orbit
	novel painter bridge signal copper winter garden tower museum village album comet
	island mirror forest theater station canyon ribbon archive falcon glacier quartz`)

func words(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fixtureWords[r.IntN(len(fixtureWords))])
	}
	return b.String()
}

// synthEpisode builds a correct, finished episode of realistic size (about 2 KB, 3 to 7
// steps) from i alone, so tests and the benchmark can regenerate the same stream.
func synthEpisode(i int) pipeline.Episode {
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
		Schema: pipeline.SchemaVersion, RunID: "run-test", Task: task, QuestionID: qid,
		Question: question, Answer: answer, Method: "react", Policy: "test-model",
		Attempt: i % 2, Prediction: answer, Finished: true, Correct: true, EM: 1, F1: 1,
		StopReason: pipeline.StopFinished,
	}
	ep.ID = pipeline.EpisodeID(task, qid, "react", ep.Attempt, false)
	n := 3 + r.IntN(5)
	for s := range n - 1 {
		entity := words(r, 2)
		typ, act := pipeline.ActionSearch, "Search["+entity+"]"
		if s%3 == 2 {
			entity = fixtureWords[r.IntN(len(fixtureWords))] // the keyword
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

// episodes streams synthEpisode(0..n-1); mod, when set, changes each episode first.
func episodes(n int, mod func(i int, ep *pipeline.Episode)) func() iter.Seq2[pipeline.Episode, error] {
	return func() iter.Seq2[pipeline.Episode, error] {
		return func(yield func(pipeline.Episode, error) bool) {
			for i := range n {
				ep := synthEpisode(i)
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
