package generate

import (
	"context"
	"fmt"
	"strings"

	"github.com/reactgen/reactgen/env/agentgym"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// GameEnv is one game of a text game task (alfworld, webshop) on an environment server.
// Start is called once, before any Step; Step is not called concurrently and returns
// the server's observation verbatim; Close releases the game's environment.
type GameEnv interface {
	Start(ctx context.Context) (agentgym.Start, error)
	Step(ctx context.Context, action string) (agentgym.Result, error)
	Close(ctx context.Context)
}

// agentgymGame is a GameEnv on an AgentGym server: game n of the client's task.
type agentgymGame struct {
	c     *agentgym.Client
	game  int
	guard *envGuard
	s     *agentgym.Session
}

// NewAgentGymGame returns the GameEnv of question q, whose id is the game's AgentGym
// number (agentgym.GameID), on client c for task.
func NewAgentGymGame(c *agentgym.Client, task string, q pipeline.Question) (GameEnv, error) {
	n, err := agentgym.ParseGameID(task, q.ID)
	if err != nil {
		return nil, err
	}
	return &agentgymGame{c: c, game: n}, nil
}

func (g *agentgymGame) Start(ctx context.Context) (agentgym.Start, error) {
	if err := g.guard.down(); err != nil {
		return agentgym.Start{}, err
	}
	s, st, err := g.c.Open(ctx, g.game)
	if err = g.record(ctx, err); err != nil {
		return agentgym.Start{}, err
	}
	g.s = s
	return st, nil
}

func (g *agentgymGame) Step(ctx context.Context, action string) (agentgym.Result, error) {
	if err := g.guard.down(); err != nil {
		return agentgym.Result{}, err
	}
	r, err := g.s.Step(ctx, action)
	return r, g.record(ctx, err)
}

// record counts a reset's or step's outcome with the run's guard, when there is one.
func (g *agentgymGame) record(ctx context.Context, err error) error {
	if g.guard == nil {
		return err
	}
	return g.guard.record(ctx, err)
}

func (g *agentgymGame) Close(ctx context.Context) {
	if g.s != nil {
		g.s.Release(ctx)
	}
}

// gameGuarded is g with its resets and steps counted by guard (nil: none).
func gameGuarded(g GameEnv, guard *envGuard) GameEnv {
	if ag, ok := g.(*agentgymGame); ok && guard != nil && guard.limit > 0 {
		ag.guard = guard
	}
	return g
}

// gameLoop plays one game as the paper's notebooks play it: the game's first observation
// becomes the episode's question (and its task type the question type), then the model
// acts until the environment says done or the notebook's action limit (generate.max_steps;
// 49 for ALFWorld, 14 for WebShop). Each action is recorded as it was sent to the server;
// a think action is answered "OK." (ALFWorld sends it to the server, which answers
// "Nothing happens.", as alfworld.ipynb does; WebShop.ipynb never sends it). When the
// environment says done, its reward is the episode's and reward 1 makes it correct.
func (r *Runner) gameLoop(ctx context.Context, ep *pipeline.Episode, q pipeline.Question, s sampler) error {
	g := r.o.NewGame(q)
	defer g.Close(context.WithoutCancel(ctx))
	st, err := g.Start(ctx)
	if err != nil {
		return fmt.Errorf("environment reset: %w", err)
	}
	ep.Question, ep.QuestionType = st.Observation, st.TaskType
	prefix, err := r.game.Prefix(st.TaskType)
	if err != nil {
		return err
	}
	thoughts := r.o.Config.Method == prompt.MethodReAct
	limit := r.o.Config.MaxStepsFor(r.o.Task)
	for range limit {
		turns := make([]prompt.Turn, len(ep.Steps))
		for i, st := range ep.Steps {
			turns[i] = prompt.Turn{Action: st.Action, Observation: st.Observation}
			if c := st.ToolCall; c != nil {
				turns[i].Call = &llm.ToolCall{ID: c.ID, Type: "function", Function: llm.FunctionCall{Name: c.Name, Arguments: c.Arguments}}
			}
		}
		pr := r.game.Step(prefix, st.Observation, turns)
		req := s.request(pr, r.temperature(s.attempt), s.seed, s.attempt)
		call, resp, err := send(ctx, r.o.Client, req, pr, r.o.Config.KeepPrompts)
		if err != nil {
			ep.Steps = append(ep.Steps, pipeline.Step{ActionType: pipeline.ActionInvalid, Calls: []pipeline.Call{call}})
			return err
		}
		step := pipeline.Step{Calls: []pipeline.Call{call}}
		if r.game.Format() == prompt.FormatTools {
			first := resp.Choices[0]
			for _, tc := range first.ToolCalls {
				step.Calls[0].ToolCalls = append(step.Calls[0].ToolCalls, pipeline.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
			step.Thought = thoughtOf(first)
			step.Action, step.ToolCall = r.gameCall(first, thoughts)
			if step.ToolCall == nil || len(first.ToolCalls) != 1 {
				step.Calls[0].Bad = true
				ep.BadCalls++
			}
		} else {
			step.Action = r.game.Action(resp.Choices[0].Text)
		}
		step.ActionType, step.Argument = gameAction(r.o.Task, step.Action)
		if step.ActionType == pipeline.ActionInvalid && step.ToolCall != nil {
			step.Calls[0].Bad = true
			ep.BadCalls++
		}
		var res agentgym.Result
		think := r.game.Think(step.Action)
		if !(think && r.o.Task == pipeline.TaskWebShop) {
			res, err = g.Step(ctx, step.Action)
		}
		step.Observation = res.Observation
		if think {
			step.Observation = "OK."
		}
		ep.Steps = append(ep.Steps, step)
		if err != nil {
			return fmt.Errorf("environment step %d: %w", len(ep.Steps), err)
		}
		if res.Done {
			reward := res.Reward
			ep.Reward, ep.Prediction, ep.Finished, ep.StopReason = &reward, step.Action, true, pipeline.StopFinished
			return nil
		}
	}
	zero := 0.0
	ep.Reward, ep.StopReason = &zero, pipeline.StopMaxSteps // the notebooks score a game not done as 0
	return nil
}

// gameCall reads the action of a tools reply: the command its one call stands for, and
// the call; a reply without exactly one well-formed call of the action set is answered
// by the environment as its text (the calls written as name(arguments)).
func (r *Runner) gameCall(c llm.Choice, thoughts bool) (string, *pipeline.ToolCall) {
	if len(c.ToolCalls) != 1 {
		return malformed(c), nil
	}
	tc := c.ToolCalls[0]
	raw := &pipeline.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
	text, err := tool.CommandText(r.o.Task, tc.Function.Name, tc.Function.Arguments, thoughts)
	if err != nil {
		return malformed(c), raw
	}
	return text, raw
}

// gameAction types a game action by the function of the task's action set it matches
// (think, take, search, click, …), with its argument: the text after the command's
// first word; an action no function matches is invalid.
func gameAction(task, action string) (typ, arg string) {
	name, _, ok := tool.ParseCommand(task, action)
	if !ok {
		return pipeline.ActionInvalid, ""
	}
	switch task {
	case pipeline.TaskWebShop:
		if i, j := strings.Index(action, "["), strings.LastIndex(action, "]"); i >= 0 && j > i {
			arg = action[i+1 : j]
		}
	default:
		_, arg, _ = strings.Cut(action, " ")
		if name == "think" {
			arg = strings.TrimSpace(strings.TrimPrefix(action, "think:"))
		} else if name == "goto" {
			arg = strings.TrimPrefix(action, "go to ")
		}
	}
	return name, arg
}
