package generate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/react"
	"github.com/reactgen/reactgen/pipeline"
)

// complete sends one request and records it as a Call. text is the first choice.
func complete(ctx context.Context, c llm.Client, req llm.Request, pr prompt.Request, keep bool) (pipeline.Call, string, error) {
	call, resp, err := send(ctx, c, req, pr, keep)
	if err != nil {
		return call, "", err
	}
	return call, resp.Choices[0].Text, nil
}

// send sends one request and records it as a Call holding the first choice. On success
// resp has at least one choice.
func send(ctx context.Context, c llm.Client, req llm.Request, pr prompt.Request, keep bool) (pipeline.Call, llm.Response, error) {
	call := pipeline.Call{Model: req.Model, PromptHash: pr.Hash()}
	if keep {
		call.Prompt = pr.Text()
	}
	start := time.Now()
	resp, err := c.Complete(ctx, req)
	if err != nil {
		call.LatencyMS = time.Since(start).Milliseconds()
		call.Error, call.NotSent = err.Error(), errors.Is(err, llm.ErrNotSent)
		return call, resp, fmt.Errorf("llm request: %w", err)
	}
	lat := resp.Latency
	if lat == 0 {
		lat = time.Since(start)
	}
	if len(resp.Choices) == 0 {
		resp.Choices = []llm.Choice{{}}
	}
	call.Completion, call.FinishReason = resp.Choices[0].Text, resp.Choices[0].FinishReason
	call.Reasoning, call.Logprobs, call.CompletionTokenIDs = resp.Choices[0].Reasoning, resp.Choices[0].Logprobs, resp.Choices[0].TokenIDs
	call.PromptTokenIDs = resp.PromptTokenIDs
	if resp.Model != "" {
		call.Model = resp.Model
	}
	call.LatencyMS, call.Retries, call.Cached = lat.Milliseconds(), resp.Retries, resp.Cached
	call.Usage = pipeline.Usage{
		PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens,
		TotalTokens: resp.Usage.TotalTokens, CostUSD: resp.CostUSD,
		CachedTokens: resp.Usage.CachedPromptTokens, CacheSavingUSD: resp.CacheSavingUSD,
		UnpricedCalls: resp.UnpricedCalls(),
	}
	return call, resp, nil
}

// stepReasoning is the reasoning text of a step: that of each call that decided it (a
// re-ask's after the first's), a blank line between. A reasoning that became the step's
// thought (a tool reply with no content; see thoughtOf) is not repeated.
func stepReasoning(calls []pipeline.Call, thought string) string {
	var parts []string
	for _, c := range calls {
		if r := strings.TrimSpace(c.Reasoning); r != "" && r != thought && !slices.Contains(parts, r) {
			parts = append(parts, r)
		}
	}
	return strings.Join(parts, "\n\n")
}

// LLMActor is the model's policy for ReAct and Act: it renders the step's prompt, asks
// the model, and reads the thought and action from the completion. A completion without
// an action is asked once more for the action alone, and counted as a bad call.
//
// With a notebook layout (prompt.Layout.Notebook) a ReAct completion is read as the
// paper's notebooks read it (react.Notebook: the re-ask shows the completion's first line
// as the thought), and the history shows each action as the model wrote it, so that
// every request is the one the notebooks would send. The actor then remembers its
// episode's actions and serves one episode; otherwise it is safe for concurrent use
// when Client is.
type LLMActor struct {
	Client      llm.Client
	Layout      *prompt.Layout // for react or act
	Model       string
	Temperature float64
	TopP        float64
	MaxTokens   int
	Stop        []string // extra stop sequences, after the layout's
	Seed        int64
	Attempt     int
	KeepPrompts bool
	Logprobs    bool // llm.logprobs
	TokenIDs    bool // llm.token_ids

	written []string // notebook layouts: the actions of this episode as the model wrote them
}

var _ Actor = (*LLMActor)(nil)

// Act decides the next move.
func (a *LLMActor) Act(ctx context.Context, q pipeline.Question, history []pipeline.Step) (Move, error) {
	turns := make([]prompt.Turn, len(history))
	for i, st := range history {
		turns[i] = prompt.Turn{Thought: st.Thought, Action: st.Action, Observation: st.Observation}
		if i < len(a.written) {
			turns[i].Action = a.written[i]
		}
	}
	var mv Move
	pr := a.Layout.Step(q.Question, turns)
	call, text, err := complete(ctx, a.Client, a.request(pr), pr, a.KeepPrompts)
	mv.Calls = append(mv.Calls, call)
	if err != nil {
		return mv, err
	}
	if a.Layout.Notebook() && a.Layout.Kind() == prompt.KindReAct {
		mv, err = a.notebookMove(ctx, q, turns, mv, text)
		a.written = append(a.written[:min(len(history), len(a.written))], mv.Action)
		return mv, err
	}
	p := react.Step(text, len(history)+1)
	mv.Thought = p.Thought
	if p.HasAction {
		mv.Action = p.Action
		return mv, nil
	}
	mv.Calls[0].Bad = true
	mv.Bad++
	if !a.Layout.CanReask() {
		// A trained chat model gets no instruction it was not trained on: the
		// environment answers the text as written with its invalid-action observation.
		mv.Action = strings.TrimSpace(text)
		if mv.Action == "" {
			mv.Action = "(no action)"
		}
		return mv, nil
	}
	pr = a.Layout.Reask(q.Question, turns, p.Thought)
	call, text, err = complete(ctx, a.Client, a.request(pr), pr, a.KeepPrompts)
	mv.Calls = append(mv.Calls, call)
	if err != nil {
		return mv, err
	}
	if action, ok := react.ActionOnly(text); ok {
		mv.Action = action
	} else {
		// The environment answers what is left with its invalid-action observation.
		mv.Action = strings.TrimSpace(text)
		if mv.Action == "" {
			mv.Action = "(no action)"
		}
	}
	return mv, nil
}

// notebookMove finishes a step the notebooks' way: the thought and action as the
// completion has them, or, when it holds no "Action i: ", its first line as the thought
// and the re-ask reply, stripped, as the action.
func (a *LLMActor) notebookMove(ctx context.Context, q pipeline.Question, turns []prompt.Turn, mv Move, text string) (Move, error) {
	thought, action, ok := react.Notebook(text, len(turns)+1)
	mv.Thought = thought
	if ok {
		mv.Action = action
		return mv, nil
	}
	mv.Calls[0].Bad = true
	mv.Bad++
	pr := a.Layout.Reask(q.Question, turns, thought)
	call, reply, err := complete(ctx, a.Client, a.request(pr), pr, a.KeepPrompts)
	mv.Calls = append(mv.Calls, call)
	if err != nil {
		return mv, err
	}
	mv.Action = react.NotebookAction(reply)
	if mv.Action == "" {
		// The notebooks fail on an empty action; the environment answers this one.
		mv.Action = "(no action)"
	}
	return mv, nil
}

func (a *LLMActor) request(pr prompt.Request) llm.Request {
	sd := int(a.Seed)
	return llm.Request{
		Model: a.Model, Prompt: pr.Prompt, Messages: pr.Messages, Temperature: a.Temperature, TopP: a.TopP,
		MaxTokens: a.MaxTokens, Stop: append(append([]string(nil), pr.Stop...), a.Stop...), Seed: &sd, Attempt: a.Attempt,
		Tools: pr.Tools, Logprobs: a.Logprobs, TokenIDs: a.TokenIDs,
	}
}

// actor returns the episode's actor.
func (r *Runner) actor(q pipeline.Question, s sampler) Actor {
	if r.o.NewActor != nil {
		return r.o.NewActor(q, s.attempt, s.seed)
	}
	if r.o.Config.Format == prompt.FormatTools {
		return &ToolActor{
			Client: r.o.Client, Layout: r.agent, Model: r.o.LLM.Model, Temperature: r.temperature(s.attempt),
			TopP: r.o.LLM.TopP, MaxTokens: r.o.LLM.RequestMaxTokens, Stop: r.o.LLM.Stop, Seed: s.seed,
			Attempt: s.attempt, KeepPrompts: r.o.Config.KeepPrompts, Logprobs: r.o.LLM.Logprobs, TokenIDs: r.o.LLM.TokenIDs,
		}
	}
	return &LLMActor{
		Client: r.o.Client, Layout: r.agent, Model: r.o.LLM.Model, Temperature: r.temperature(s.attempt),
		TopP: r.o.LLM.TopP, MaxTokens: r.o.LLM.RequestMaxTokens, Stop: r.o.LLM.Stop, Seed: s.seed,
		Attempt: s.attempt, KeepPrompts: r.o.Config.KeepPrompts, Logprobs: r.o.LLM.Logprobs, TokenIDs: r.o.LLM.TokenIDs,
	}
}

// agentLoop runs a ReAct or Act episode: the actor moves, the environment answers, until
// Finish, the step limit or a loop. Steps are appended to ep.Steps.
func (r *Runner) agentLoop(ctx context.Context, ep *pipeline.Episode, q pipeline.Question, s sampler) error {
	w := r.o.NewEnv(q)
	act := r.actor(q, s)
	limit := r.o.Config.MaxStepsFor(r.o.Task)
	for range limit {
		mv, err := act.Act(ctx, q, ep.Steps)
		ep.BadCalls += mv.Bad
		if err != nil {
			if len(mv.Calls) > 0 {
				ep.Steps = append(ep.Steps, pipeline.Step{Thought: mv.Thought, ActionType: pipeline.ActionInvalid, Calls: mv.Calls, ToolCall: mv.ToolCall,
					Reasoning: stepReasoning(mv.Calls, mv.Thought)})
			}
			return err
		}
		res, err := w.Step(ctx, mv.Action)
		st := pipeline.Step{
			Thought: mv.Thought, Action: res.Action.String(), ActionType: res.Action.Type,
			Argument: res.Action.Argument, Observation: res.Observation, Calls: mv.Calls, ToolCall: mv.ToolCall,
			Reasoning: stepReasoning(mv.Calls, mv.Thought),
		}
		if st.Action == "" {
			st.Action, st.ActionType = strings.TrimSpace(mv.Action), pipeline.ActionInvalid
		}
		ep.Steps = append(ep.Steps, st)
		if err != nil {
			return fmt.Errorf("environment step %d: %w", len(ep.Steps), err)
		}
		if res.Done {
			ep.Prediction, ep.Finished, ep.StopReason = res.Answer, true, pipeline.StopFinished
			return nil
		}
		if n := len(ep.Steps); n >= 3 && ep.Steps[n-1].Action == ep.Steps[n-2].Action && ep.Steps[n-2].Action == ep.Steps[n-3].Action {
			ep.StopReason = pipeline.StopLoop
			return nil
		}
	}
	ep.StopReason = pipeline.StopMaxSteps
	return nil
}

// selfConsistency runs CoT-SC: generate.samples chains at generate.sample_temperature,
// then a majority vote over normalised answers; a tie goes to the answer reached first in
// sample order. The samples are appended to ep.Samples and the winner's answer becomes
// ep.Prediction; it returns the winning sample (the first that gave the winning answer,
// so that pipeline.Episode.Chain finds it again) and its vote count, or -1 and 0 when no
// sample gave an answer. It adds no step: the answer of CoT-SC alone is a step of its
// own (see Runner.run), a hybrid's CoT-SC answer is no step of its agent's trajectory.
//
// The samples are asked for in one request with n set, so that the prompt is sent and
// billed once. A server that does not honour n (llm.ErrNUnsupported, learnt once per
// client) gets one request per sample instead, sent concurrently, each with its own seed
// and cache entry.
func (r *Runner) selfConsistency(ctx context.Context, ep *pipeline.Episode, q pipeline.Question, s sampler) (winner, votes int, err error) {
	n := max(r.o.Config.Samples, 1)
	pr := r.cot.Answer(q.Question)
	var samples []pipeline.Sample
	if n > 1 {
		samples, err = r.samplesAtOnce(ctx, pr, s, n)
	}
	if n == 1 || errors.Is(err, llm.ErrNUnsupported) {
		samples, err = r.samplesApart(ctx, pr, s, n)
	}
	ep.Samples = append(ep.Samples, samples...)
	for _, sm := range samples {
		if sm.Call != nil && sm.Call.Bad {
			ep.BadCalls++
		}
	}
	if err != nil {
		return -1, 0, err
	}
	tally := map[string]int{}
	best, bestN := -1, 0
	for i, sm := range samples {
		if sm.Answer == "" {
			continue
		}
		k := r.normAnswer(sm.Answer)
		tally[k]++
		if tally[k] > bestN {
			best, bestN = i, tally[k]
		}
	}
	if best < 0 {
		ep.StopReason = pipeline.StopMaxSteps
		return -1, 0, nil
	}
	// best is the sample at which the winning answer first reached its final count; report
	// the first sample that gave it.
	win := r.normAnswer(samples[best].Answer)
	for i, sm := range samples {
		if sm.Answer != "" && r.normAnswer(sm.Answer) == win {
			best = i
			break
		}
	}
	ep.Prediction, ep.Finished, ep.StopReason = samples[best].Answer, true, pipeline.StopFinished
	return len(ep.Samples) - len(samples) + best, bestN, nil
}

// sample reads one CoT completion into a Sample holding call.
func (r *Runner) sample(call pipeline.Call, text string) pipeline.Sample {
	th, ans, ok := r.readAnswer(r.cot, text)
	if !ok {
		call.Bad = true
	}
	return pipeline.Sample{Thought: th, Answer: ans, Call: &call}
}

// samplesAtOnce asks for n samples in one request. The first sample's call carries the
// request's usage, latency and retries; the others are its further choices (Call.Choice)
// and carry only their completions. An llm.ErrNUnsupported error returns no samples.
func (r *Runner) samplesAtOnce(ctx context.Context, pr prompt.Request, s sampler, n int) ([]pipeline.Sample, error) {
	req := s.request(pr, r.o.Config.SampleTemperature, s.seed, s.attempt*n)
	req.N = n
	call, resp, err := send(ctx, r.o.Client, req, pr, r.o.Config.KeepPrompts)
	if errors.Is(err, llm.ErrNUnsupported) {
		return nil, err
	}
	if err != nil {
		return []pipeline.Sample{{Call: &call}}, err
	}
	if len(resp.Choices) < n { // a client without WithChoices, on a server that ignores n
		return nil, fmt.Errorf("%w: asked for %d choices, got %d", llm.ErrNUnsupported, n, len(resp.Choices))
	}
	samples := make([]pipeline.Sample, n)
	for i := range n {
		c := call
		if i > 0 {
			ch := resp.Choices[i]
			c = pipeline.Call{Model: call.Model, PromptHash: call.PromptHash, Completion: ch.Text,
				FinishReason: ch.FinishReason, Cached: call.Cached, Choice: i,
				Reasoning: ch.Reasoning, Logprobs: ch.Logprobs, CompletionTokenIDs: ch.TokenIDs}
		}
		samples[i] = r.sample(c, resp.Choices[i].Text)
	}
	return samples, nil
}

// samplesApart sends one request per sample, concurrently, each with its own seed and
// Attempt (and so its own cache entry); a budget stops between samples.
func (r *Runner) samplesApart(ctx context.Context, pr prompt.Request, s sampler, n int) ([]pipeline.Sample, error) {
	samples := make([]pipeline.Sample, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := s.request(pr, r.o.Config.SampleTemperature, s.seed+int64(i), s.attempt*n+i)
			call, text, err := complete(ctx, r.o.Client, req, pr, r.o.Config.KeepPrompts)
			if err != nil {
				samples[i], errs[i] = pipeline.Sample{Call: &call}, err
				return
			}
			samples[i] = r.sample(call, text)
		})
	}
	wg.Wait()
	return samples, errors.Join(errs...)
}

var _ Environment = (*env.Wiki)(nil)
