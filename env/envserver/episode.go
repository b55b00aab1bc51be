package envserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/fastjson"
	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// errEpisodeDone answers a step of an episode that ended: a client resets to start another.
var errEpisodeDone = errors.New("the episode is done: reset to start another")

// episode is the environment of one session (a WebSocket connection, or one HTTP
// request): the question it asks, its Wiki and its step count. It is not safe for
// concurrent use.
type episode struct {
	srv      *Server
	id       *string
	q        *pipeline.Question // nil before a reset
	wiki     *env.Wiki
	steps    int
	maxSteps int // 0: no limit
	done     bool
}

func (s *Server) newEpisode() *episode {
	return &episode{srv: s, wiki: env.New(s.opts.Corpus, s.opts.Env)}
}

// resetParams are the reset data this environment reads: OpenEnv's seed and
// episode_id, and question_id and max_steps. Other keys are ignored, as OpenEnv passes
// only the keyword arguments the environment's reset accepts.
type resetParams struct {
	seed       *int
	episodeID  *string
	questionID *string
	maxSteps   int
}

// parseReset reads reset data (a JSON object, or nothing) as OpenEnv's ResetRequest
// validates it; loc is where the data sits in the request ("body" over HTTP, "data"
// over /ws).
func parseReset(data json.RawMessage, loc string) (resetParams, error) {
	var p resetParams
	if len(data) == 0 || string(data) == "null" {
		return p, nil
	}
	var m map[string]json.RawMessage
	if err := fastjson.Unmarshal(data, &m); err != nil {
		return p, invalid("dict_type", "Input should be a valid dictionary", rawInput(data), loc)
	}
	var errs validationError
	if v, ok := m["seed"]; ok && string(v) != "null" {
		n, err := nonNegativeInt(v)
		if err != nil {
			errs = append(errs, fieldError{Type: "int_parsing", Loc: []any{loc, "seed"}, Msg: err.Error(), Input: rawInput(v)})
		} else {
			p.seed = &n
		}
	}
	if v, ok := m["episode_id"]; ok && string(v) != "null" {
		var s string
		if fastjson.Unmarshal(v, &s) != nil {
			errs = append(errs, fieldError{Type: "string_type", Loc: []any{loc, "episode_id"}, Msg: "Input should be a valid string", Input: rawInput(v)})
		} else if len([]rune(s)) > 255 {
			errs = append(errs, fieldError{Type: "string_too_long", Loc: []any{loc, "episode_id"}, Msg: "String should have at most 255 characters", Input: s})
		} else {
			p.episodeID = &s
		}
	}
	if v, ok := m["question_id"]; ok && string(v) != "null" {
		var s string
		if fastjson.Unmarshal(v, &s) != nil {
			// A numeric id is read as its text: task files give ids as strings.
			var n json.Number
			if fastjson.Unmarshal(v, &n) != nil {
				errs = append(errs, fieldError{Type: "string_type", Loc: []any{loc, "question_id"}, Msg: "Input should be a valid string", Input: rawInput(v)})
			}
			s = n.String()
		}
		p.questionID = &s
	}
	if v, ok := m["max_steps"]; ok && string(v) != "null" {
		n, err := nonNegativeInt(v)
		switch {
		case err != nil:
			errs = append(errs, fieldError{Type: "int_parsing", Loc: []any{loc, "max_steps"}, Msg: err.Error(), Input: rawInput(v)})
		case n == 0:
			errs = append(errs, fieldError{Type: "greater_than", Loc: []any{loc, "max_steps"}, Msg: "Input should be greater than 0", Input: n})
		default:
			p.maxSteps = n
		}
	}
	if len(errs) > 0 {
		return p, errs
	}
	return p, nil
}

// nonNegativeInt reads a JSON integer >= 0 (pydantic's int with ge=0: 3.0 is 3).
func nonNegativeInt(v json.RawMessage) (int, error) {
	var f float64
	if err := fastjson.Unmarshal(v, &f); err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
		//lint:ignore ST1005 pydantic's message word for word: AgentGym's clients show it as the server's 422 detail
		return 0, errors.New("Input should be a valid integer")
	}
	if f < 0 {
		//lint:ignore ST1005 pydantic's message word for word (as above)
		return 0, errors.New("Input should be greater than or equal to 0")
	}
	if f > math.MaxInt32 {
		return 0, errors.New("Input should be at most " + strconv.Itoa(math.MaxInt32))
	}
	return int(f), nil
}

// rawInput is a JSON value as the input of a validation error.
func rawInput(v json.RawMessage) any {
	var x any
	if fastjson.Unmarshal(v, &x) != nil {
		return string(v)
	}
	return x
}

// parseAction reads a step's action as ReActAction validates it: an object with the
// string field action, an optional metadata object, nothing else.
func parseAction(data json.RawMessage, loc ...any) (string, error) {
	var m map[string]json.RawMessage
	if len(data) == 0 || fastjson.Unmarshal(data, &m) != nil || m == nil {
		return "", invalid("model_type", "Input should be a valid dictionary or instance of ReActAction", rawInput(data), loc...)
	}
	var errs validationError
	v, ok := m["action"]
	var action string
	switch {
	case !ok:
		errs = append(errs, fieldError{Type: "missing", Loc: append(loc[:len(loc):len(loc)], "action"), Msg: "Field required", Input: rawInput(data)})
	case fastjson.Unmarshal(v, &action) != nil:
		errs = append(errs, fieldError{Type: "string_type", Loc: append(loc[:len(loc):len(loc)], "action"), Msg: "Input should be a valid string", Input: rawInput(v)})
	}
	for k, v := range m {
		switch k {
		case "action":
		case "metadata":
			var md map[string]any
			if fastjson.Unmarshal(v, &md) != nil || md == nil {
				errs = append(errs, fieldError{Type: "dict_type", Loc: append(loc[:len(loc):len(loc)], "metadata"), Msg: "Input should be a valid dictionary", Input: rawInput(v)})
			}
		default:
			errs = append(errs, fieldError{Type: "extra_forbidden", Loc: append(loc[:len(loc):len(loc)], k), Msg: "Extra inputs are not permitted", Input: rawInput(v)})
		}
	}
	if len(errs) > 0 {
		return "", errs
	}
	return action, nil
}

// reset starts a new episode on the question p picks: question_id, else seed as the
// question's position in the task's question list, else the server's next question.
func (e *episode) reset(p resetParams, loc string) (Result, error) {
	q, err := e.srv.pick(p, loc)
	if err != nil {
		return Result{}, err
	}
	opts := e.srv.opts.Env
	opts.Gold = q.Answer
	e.q, e.wiki = q, env.New(e.srv.opts.Corpus, opts)
	e.id, e.steps, e.maxSteps, e.done = p.episodeID, 0, p.maxSteps, false
	if e.id == nil {
		id := q.ID
		e.id = &id
	}
	return Result{Observation: Observation{Text: questionLine(e.srv.opts.Env.Task, q.Question), QuestionID: q.ID, Question: q.Question}}, nil
}

// questionLine is the official wrapper's reset observation (wrappers.py): "Question: q"
// for HotpotQA, "Claim: c" for FEVER.
func questionLine(task, question string) string {
	if task == pipeline.TaskFEVER {
		return "Claim: " + question
	}
	return "Question: " + question
}

// step performs one action. On Finish the reward is the task's score (HotpotQA: exact
// match; FEVER: the label), as wrappers.py's reward, and the observation carries F1; at
// max_steps without Finish the episode ends with reward 0 and Truncated set.
func (e *episode) step(ctx context.Context, action string) (Result, error) {
	if e.done {
		return Result{}, errEpisodeDone
	}
	res, err := e.wiki.Step(ctx, action)
	if errors.Is(err, env.ErrDone) {
		return Result{}, errEpisodeDone
	}
	if err != nil {
		return Result{}, fmt.Errorf("step %d: %w", e.steps+1, err)
	}
	e.steps++
	obs := Observation{Text: res.Observation, Action: res.Action.String(), Step: e.steps}
	if e.q != nil {
		obs.QuestionID, obs.Question = e.q.ID, e.q.Question
	}
	reward := 0.0
	if res.Done {
		e.done = true
		answer := res.Answer
		obs.Answer = &answer
		f1 := 0.0
		if e.q != nil {
			var correct bool
			correct, _, f1 = score.Score(e.srv.opts.Env.Task, res.Action.Argument, e.q.Answer)
			if correct {
				reward = 1
			}
		}
		obs.F1 = &f1
	} else if e.maxSteps > 0 && e.steps >= e.maxSteps {
		e.done, obs.Truncated = true, true
	}
	return Result{Observation: obs, Reward: &reward, Done: e.done}, nil
}

// state is the episode's State.
func (e *episode) state() State {
	st := State{EpisodeID: e.id, StepCount: e.steps, Done: e.done}
	if e.q != nil {
		id := e.q.ID
		st.QuestionID = &id
	}
	if e.maxSteps > 0 {
		n := e.maxSteps
		st.MaxSteps = &n
	}
	return st
}
