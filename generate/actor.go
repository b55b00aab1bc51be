// Package generate runs episodes: the ReAct agent loop and the paper's other prompting
// methods over an llm.Client and an env.Corpus (exemplars and prompt layouts in
// generate/prompt, the expert policy that plays from gold supporting facts in
// generate/expert), and the STaR-style bootstrap scheduler that writes finished episodes
// to the run's log. Stage is the generate stage of a run (a pipeline.Stage): it consumes
// the questions, the exemplars and its typed config sections, and produces
// episodes.jsonl.
//
// Imports: pipeline, env (and env/agentgym) and the internal/ libraries (llm, react,
// tool, dataset, score); never filter, export, ingest or index, which it reaches only
// through the stages and backends cmd/reactgen hands it.
package generate

import (
	"context"

	"github.com/reactgen/reactgen/pipeline"
)

// Move is what an actor decides at one step: a thought and an action in the paper's
// syntax (Search[...], Lookup[...], Finish[...]).
type Move struct {
	Thought string
	Action  string
	Calls   []pipeline.Call // LLM requests made to decide this move; none for the expert
	Bad     int             // bad calls (completions with no usable action)
	// ToolCall is the function call the action was read from (generate.format tools), or
	// the malformed call the environment is answering; nil for text.
	ToolCall *pipeline.ToolCall
}

// Actor decides the next move of a ReAct or Act episode.
//
// Act is called once per step with the question and the steps so far (observations
// included); it blocks on the model, is safe for concurrent use across episodes, and
// returns an error only when no move could be made (the episode then ends with
// pipeline.StopError or StopBudget).
type Actor interface {
	Act(ctx context.Context, q pipeline.Question, history []pipeline.Step) (Move, error)
}
