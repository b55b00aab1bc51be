package generate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/react"
	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// Environment is one episode's environment. *env.Wiki implements it. Step is not called
// concurrently; an invalid action is answered with an observation, not an error.
type Environment interface {
	Step(ctx context.Context, raw string) (env.Result, error)
}

// ActorFactory makes the actor of one episode. hinted is the question as the actor is to
// see it (with the rationalization hint when there is one); seed and attempt are the
// episode's. A nil factory means the LLM actor.
type ActorFactory func(hinted pipeline.Question, attempt int, seed int64) Actor

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	Config  pipeline.GenerateConfig
	LLM     pipeline.LLMConfig
	Task    string
	RunID   string
	Prompts prompt.Set // as loaded by prompt.Load; derived per method here
	// CoTPrompts, when set (generate.cot_exemplars), are the exemplars of the CoT prompts
	// (methods cot and cot-sc, and the CoT half of react-cot-sc and cot-sc-react) in
	// place of those derived from Prompts: the paper's CoT file beside its ReAct file.
	// generate.instruction does not apply to them.
	CoTPrompts *prompt.Set
	Client     llm.Client                            // not needed by the expert policy with methods act and react
	NewEnv     func(q pipeline.Question) Environment // one episode's environment, for q (its answer is the paper reward's gold)
	NewActor   ActorFactory                          // nil = LLMActor (generate.policy llm)
	// System is export.system: with generate.prompting trained, the system message the
	// model was trained with (empty = none).
	System string
	// Round is the STaR round the episodes belong to (star.previous); 0 outside rounds.
	Round int
	// NewGame and GamePrompts serve a game task (alfworld, webshop) in place of NewEnv
	// and Prompts: one question's game on its environment server, and the paper's prompt
	// file's entries (prompt.LoadGameEntries).
	NewGame     func(q pipeline.Question) GameEnv
	GamePrompts map[string]string
}

// Runner runs single episodes by one prompting method. It is safe for concurrent use.
type Runner struct {
	o      RunnerOptions
	policy string
	agent  *prompt.Layout // react or act
	cot    *prompt.Layout
	answer *prompt.Layout // standard
	game   *prompt.GameLayout
}

// NewRunner checks the options and builds the method's prompt layouts.
func NewRunner(o RunnerOptions) (*Runner, error) {
	r := &Runner{o: o, policy: o.LLM.Model}
	if o.Config.Policy == "expert" {
		r.policy = "expert"
	}
	if o.Config.Format == "" {
		o.Config.Format = prompt.FormatChat
		r.o.Config.Format = prompt.FormatChat
	}
	if o.Task == "" {
		return nil, errors.New("generate: task is required")
	}
	if pipeline.GameTask(o.Task) {
		var err error
		if r.game, err = prompt.NewGameLayout(o.Task, o.Config.Method, o.Config.Format, o.GamePrompts); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		if o.NewGame == nil || o.Client == nil {
			return nil, errors.New("generate: a game task needs its environment server (NewGame) and an LLM client")
		}
		return r, nil
	}
	build := func(method string) (*prompt.Layout, error) {
		if o.Config.Prompting == prompt.PromptingTrained {
			return prompt.NewTrained(o.Task, prompt.MethodKind(method), o.Config.Format, o.Config.TrainedFormat, o.System)
		}
		src, instruction := o.Prompts, o.Config.Instruction
		if o.CoTPrompts != nil && prompt.MethodKind(method) == prompt.KindCoT {
			src, instruction = *o.CoTPrompts, ""
		}
		s, err := src.For(method)
		if err != nil {
			return nil, fmt.Errorf("exemplars for method %s: %w", method, err)
		}
		s = s.Truncate(o.Config.NumExemplars)
		format := o.Config.Format
		if format == prompt.FormatTools {
			if prompt.MethodKind(method) == prompt.KindCoT || prompt.MethodKind(method) == prompt.KindStandard {
				// The hybrids' CoT half has no actions, so no tools: it is sent in chat.
				format = prompt.FormatChat
			} else if instruction == "" {
				instruction = prompt.ToolInstruction(o.Task)
			}
		}
		if instruction != "" {
			s = s.WithInstruction(instruction)
		}
		return prompt.NewLayout(s, format)
	}
	var err error
	switch m := o.Config.Method; m {
	case prompt.MethodStandard:
		r.answer, err = build(m)
	case prompt.MethodCoT, prompt.MethodCoTSC:
		r.cot, err = build(m)
	case prompt.MethodAct, prompt.MethodReAct:
		r.agent, err = build(m)
	case prompt.MethodReActCoTSC, prompt.MethodCoTSCReAct:
		if r.agent, err = build(prompt.MethodReAct); err == nil {
			r.cot, err = build(prompt.MethodCoT)
		}
	default:
		return nil, fmt.Errorf("generate: unknown method %q", m)
	}
	if err != nil {
		return nil, err
	}
	if o.NewEnv == nil && r.agent != nil {
		return nil, errors.New("generate: method " + o.Config.Method + " needs an environment (NewEnv)")
	}
	if o.Client == nil && (r.agent == nil || o.NewActor == nil || r.cot != nil) {
		return nil, errors.New("generate: method " + o.Config.Method + " needs an LLM client")
	}
	return r, nil
}

// Seed derives the seed of one (question, attempt) from the run's seed, so that runs are
// reproducible and attempts differ. It fits in 31 bits, which every server accepts.
func Seed(runSeed int64, questionID string, attempt int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s\x00%d", runSeed, questionID, attempt)
	return int64(h.Sum64() & (1<<31 - 1))
}

// temperature is the request temperature of an attempt: attempts after the first sample
// at generate.sample_temperature when llm.temperature is 0, so that they can differ.
func (r *Runner) temperature(attempt int) float64 {
	if attempt >= 1 && r.o.LLM.Temperature == 0 {
		return r.o.Config.SampleTemperature
	}
	return r.o.LLM.Temperature
}

// Episode runs one attempt at q and returns its record. It never fails: an error, an
// exhausted budget or a cancelled ctx end the episode with StopError, StopBudget or
// StopInterrupted and the message in Error.
func (r *Runner) Episode(ctx context.Context, q pipeline.Question, attempt int) pipeline.Episode {
	ep, _ := r.run(ctx, q, attempt, false)
	return ep
}

// Hint is the question text with the rationalization hint appended: reactgen's own
// wording, so the edge white space that a task file's question or answer may carry
// (the dataset keeps it for the notebooks' prompt) is left out of it.
func Hint(q pipeline.Question) string {
	return fmt.Sprintf("%s (Hint: the answer is %s.)", strings.TrimRightFunc(q.Question, unicode.IsSpace), strings.TrimSpace(q.Answer))
}

// run is Episode that also returns the error that ended the episode, for the scheduler.
func (r *Runner) run(ctx context.Context, q pipeline.Question, attempt int, rationalize bool) (pipeline.Episode, error) {
	start := time.Now()
	cfg := r.o.Config
	seed := Seed(cfg.Seed, q.ID, attempt)
	ep := pipeline.Episode{
		Schema: pipeline.SchemaVersion, ID: pipeline.EpisodeID(r.o.Task, q.ID, cfg.Method, attempt, rationalize),
		RunID: r.o.RunID, Task: r.o.Task, QuestionID: q.ID, Question: q.Question, Answer: q.Answer,
		QuestionType: q.Type, Method: cfg.Method, Policy: r.policy, Format: cfg.Format, Attempt: attempt,
		Seed: seed, Rationalized: rationalize, Steps: []pipeline.Step{}, Round: r.o.Round,
	}
	ep.ID = pipeline.RoundID(ep.ID, r.o.Round)
	hinted := q
	if rationalize {
		hinted.Question = Hint(q)
	}
	err := r.method(ctx, &ep, hinted, sampler{r: r, seed: seed, attempt: attempt})
	if err != nil {
		ep.Finished, ep.Prediction = false, ""
		ep.StopReason, ep.Error = stopReason(ctx, err), err.Error()
	}
	switch {
	case ep.Finished && r.game != nil:
		// A game is won, or bought exactly, at reward 1 (the notebooks' success).
		if ep.Correct = *ep.Reward == 1; ep.Correct {
			ep.EM = 1
		}
	case ep.Finished:
		ep.Correct, ep.EM, ep.F1 = score.Score(r.o.Task, ep.Prediction, ep.Answer)
	}
	countCalls(&ep)
	ep.LatencyMS = time.Since(start).Milliseconds()
	return ep, err
}

// method runs generate.method's prompting of question q (hinted when rationalized) into
// ep.
func (r *Runner) method(ctx context.Context, ep *pipeline.Episode, hinted pipeline.Question, s sampler) error {
	var err error
	switch r.o.Config.Method {
	case prompt.MethodStandard:
		err = r.single(ctx, ep, hinted, s, r.answer)
	case prompt.MethodCoT:
		err = r.single(ctx, ep, hinted, s, r.cot)
	case prompt.MethodCoTSC:
		var win int
		win, _, err = r.selfConsistency(ctx, ep, hinted, s)
		if win >= 0 { // CoT-SC alone: the winning chain is the episode's one step
			sm := ep.Samples[win]
			st := pipeline.Step{Thought: sm.Thought, Action: "Finish[" + sm.Answer + "]",
				ActionType: pipeline.ActionFinish, Argument: sm.Answer}
			if sm.Call != nil {
				st.Reasoning = stepReasoning([]pipeline.Call{*sm.Call}, sm.Thought)
			}
			ep.Steps = append(ep.Steps, st)
		}
	case prompt.MethodAct, prompt.MethodReAct:
		if r.game != nil {
			err = r.gameLoop(ctx, ep, hinted, s)
		} else {
			err = r.agentLoop(ctx, ep, hinted, s)
		}
	case prompt.MethodReActCoTSC:
		// The steps stay the trajectory ReAct walked; when CoT-SC answers, its answer
		// stands in Prediction and its chain in Samples (Episode.Chain), never as a step.
		ep.Branch = prompt.MethodReAct
		err = r.agentLoop(ctx, ep, hinted, s)
		if err == nil && !ep.Finished {
			ep.Branch = prompt.MethodCoTSC
			_, _, err = r.selfConsistency(ctx, ep, hinted, s)
		}
	case prompt.MethodCoTSCReAct:
		ep.Branch = prompt.MethodCoTSC
		var votes int
		_, votes, err = r.selfConsistency(ctx, ep, hinted, s)
		if err == nil && 2*votes < r.o.Config.Samples {
			ep.Branch = prompt.MethodReAct
			ep.Prediction, ep.Finished, ep.StopReason = "", false, ""
			err = r.agentLoop(ctx, ep, hinted, s)
		}
	}
	return err
}

// countCalls sets the episode's request count and usage from the calls it records.
func countCalls(ep *pipeline.Episode) {
	for _, st := range ep.Steps {
		for _, c := range st.Calls {
			if c.NotSent {
				continue // no request left reactgen
			}
			ep.LLMCalls++
			ep.Usage = ep.Usage.Add(c.Usage)
		}
	}
	for _, sm := range ep.Samples {
		if sm.Call != nil && sm.Call.Choice == 0 && !sm.Call.NotSent { // further choices share their request
			ep.LLMCalls++
			ep.Usage = ep.Usage.Add(sm.Call.Usage)
		}
	}
}

func stopReason(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, llm.ErrBudget):
		return pipeline.StopBudget
	case ctx.Err() != nil, errors.Is(err, context.Canceled):
		return pipeline.StopInterrupted
	}
	return pipeline.StopError
}

// sampler holds what an episode's requests share.
type sampler struct {
	r       *Runner
	seed    int64
	attempt int
}

// request builds the llm.Request of one rendered prompt.
func (s sampler) request(pr prompt.Request, temperature float64, seed int64, attempt int) llm.Request {
	o := s.r.o.LLM
	sd := int(seed)
	return llm.Request{
		Model: o.Model, Prompt: pr.Prompt, Messages: pr.Messages, Temperature: temperature, TopP: o.TopP,
		MaxTokens: o.RequestMaxTokens, Stop: append(append([]string(nil), pr.Stop...), o.Stop...),
		Seed: &sd, Attempt: attempt, Tools: pr.Tools, Logprobs: o.Logprobs, TokenIDs: o.TokenIDs,
	}
}

// single runs a CoT or Standard episode: one request, one answer.
func (r *Runner) single(ctx context.Context, ep *pipeline.Episode, q pipeline.Question, s sampler, l *prompt.Layout) error {
	pr := l.Answer(q.Question)
	call, text, err := complete(ctx, r.o.Client, s.request(pr, r.temperature(s.attempt), s.seed, s.attempt), pr, r.o.Config.KeepPrompts)
	if err != nil {
		ep.Steps = append(ep.Steps, pipeline.Step{ActionType: pipeline.ActionInvalid, Calls: []pipeline.Call{call}, Reasoning: stepReasoning([]pipeline.Call{call}, "")})
		return err
	}
	thought, answer, ok := r.readAnswer(l, text)
	st := pipeline.Step{Thought: thought, Reasoning: stepReasoning([]pipeline.Call{call}, thought)}
	if !ok {
		call.Bad = true
		ep.BadCalls++
		st.ActionType, st.Action, st.Calls = pipeline.ActionInvalid, strings.TrimSpace(text), []pipeline.Call{call}
		ep.Steps = append(ep.Steps, st)
		ep.StopReason = pipeline.StopMaxSteps // the one step it had ended without an answer
		return nil
	}
	st.Action, st.ActionType, st.Argument, st.Calls = "Finish["+answer+"]", pipeline.ActionFinish, answer, []pipeline.Call{call}
	ep.Steps = append(ep.Steps, st)
	ep.Prediction, ep.Finished, ep.StopReason = answer, true, pipeline.StopFinished
	return nil
}

// readAnswer splits a CoT or Standard completion into its reasoning and answer.
func (r *Runner) readAnswer(l *prompt.Layout, text string) (thought, answer string, ok bool) {
	t := strings.TrimSpace(text)
	if l.Kind() == prompt.KindStandard {
		if a, ok := react.Answer(t); ok {
			answer = a
		} else {
			answer, _, _ = strings.Cut(t, "\n")
			answer = strings.TrimSpace(answer)
		}
	} else {
		a, found := react.Answer(t)
		if !found {
			return t, "", false
		}
		answer = a
		if i := strings.LastIndex(strings.ToLower(t), "answer:"); i >= 0 {
			t = t[:i]
		}
		thought = react.Step(t, 1).Thought
	}
	if r.o.Task == pipeline.TaskFEVER {
		answer = answerLabel(answer)
	}
	return thought, answer, answer != ""
}

// answerLabel maps the answer of a CoT or Standard completion onto a FEVER label. The
// official rule (score.Label) comes first. Past it, and only on this path, the other
// spellings the answer-only instructions themselves use are read as the label they name:
// SUPPORTED and REFUTED (reactgen's AnswerInstruction) and NOT ENOUGH INFORMATION (the
// paper's cotqa_simple3 instruction). The whole normalised answer must be one of them, so
// "not supported", "unsupported" or "supported in part" stay as written and score as
// wrong. A ReAct Finish gets no such reading: the environment applies score.Label alone,
// as the paper's environment does.
func answerLabel(a string) string {
	if l, ok := score.Label(a); ok {
		return l
	}
	switch score.NormalizeAnswer(a) {
	case "supported":
		return pipeline.LabelSupports
	case "refuted":
		return pipeline.LabelRefutes
	case "not enough information":
		return pipeline.LabelNEI
	}
	return a
}

// normAnswer is the form that self-consistency votes on: the form Score compares.
func (r *Runner) normAnswer(a string) string { return score.NormalizeAnswer(a) }
