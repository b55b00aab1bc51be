package filter

import (
	"slices"
	"strings"
	"sync"

	"github.com/reactgen/reactgen/internal/fastjson"
	"github.com/reactgen/reactgen/pipeline"
)

// leanEpisode is the part of an episode record that the rules, the candidates and the
// statistics read when no rule reads text (max_tokens, decontaminate and the mask code
// error_observation read the question and the observations): the chain decodes a log's
// lines into it, skipping the observations, the calls and the usage that are most of a
// line (docs/bench-export.md, "Filter: a lean decode"). Its tags are Episode's; a rule
// that reads another field must add it here (TestLeanDecodeJudgesAsFull holds every
// rule's verdicts to the whole record's).
type leanEpisode struct {
	ID           string                `json:"id"`
	Task         string                `json:"task"`
	QuestionID   string                `json:"question_id"`
	Answer       string                `json:"answer"`
	QuestionType string                `json:"question_type"`
	Method       string                `json:"method"`
	Branch       string                `json:"branch"`
	Steps        []leanStep            `json:"steps"`
	Prediction   string                `json:"prediction"`
	Finished     bool                  `json:"finished"`
	Correct      bool                  `json:"correct"`
	StopReason   string                `json:"stop_reason"`
	BadCalls     int                   `json:"bad_calls"`
	Reward       *float64              `json:"reward"`
	MaskedSteps  []pipeline.MaskedStep `json:"masked_steps"`
}

type leanStep struct {
	Thought    string `json:"thought"`
	Action     string `json:"action"`
	ActionType string `json:"action_type"`
	Argument   string `json:"argument"`
}

// leanPool holds decoded records for decodeLean, whose steps' arrays are reused from one
// line to the next (converted into the episode's own steps).
var leanPool = sync.Pool{New: func() any { return new(leanEpisode) }}

// readsText reports whether the chain reads the question or the observations, which
// decodeLean leaves out.
func (c *Chain) readsText() bool {
	for _, r := range c.rules {
		switch r.(type) {
		case maxTokensRule, *decontaminate:
			return true
		}
	}
	return slices.Contains(c.mask, MaskErrorObservation)
}

// decoder is how the chain decodes a log's lines: decodeLean, or the whole record when a
// rule reads text.
func (c *Chain) decoder() pipeline.LineDecoder {
	if c.readsText() {
		return pipeline.DecodeEpisode
	}
	return decodeLean
}

// decodeLean decodes the fields of line that leanEpisode holds into ep. The identifiers
// a candidate keeps get strings of their own (the decoder's strings share one copy of
// the line, which a candidate would otherwise keep whole). A line the fast decoder
// rejects is decoded whole by pipeline.DecodeEpisode, whose error names what is wrong
// (or whose record is the line's, for what only encoding/json reads). Fields it skips
// are not checked beyond their JSON syntax: a value of the wrong type there reaches
// kept.jsonl, where the export's reading names it.
func decodeLean(line []byte, ep *pipeline.Episode) error {
	l := leanPool.Get().(*leanEpisode)
	defer leanPool.Put(l)
	*l = leanEpisode{Steps: l.Steps[:0]} // the steps' array is reused: the decoder fills it
	if err := fastjson.Unmarshal(line, l); err != nil {
		return pipeline.DecodeEpisode(line, ep) // the whole record, or the error it has
	}
	*ep = pipeline.Episode{
		ID: strings.Clone(l.ID), Task: l.Task, QuestionID: strings.Clone(l.QuestionID), Answer: l.Answer,
		QuestionType: strings.Clone(l.QuestionType), Method: l.Method, Branch: l.Branch, Prediction: l.Prediction,
		Finished: l.Finished, Correct: l.Correct, StopReason: l.StopReason, BadCalls: l.BadCalls,
		Reward: l.Reward, MaskedSteps: l.MaskedSteps,
	}
	if len(l.Steps) > 0 {
		ep.Steps = make([]pipeline.Step, len(l.Steps))
		for i, s := range l.Steps {
			ep.Steps[i] = pipeline.Step{Thought: s.Thought, Action: s.Action, ActionType: s.ActionType, Argument: s.Argument}
		}
	}
	return nil
}
