// Package pipeline owns the records that flow between reactgen's stages (questions,
// episodes, verdicts), the typed configuration, the run directory with its lock,
// manifest and episode log, and the run itself. A Stage is a value with a Name and a
// Run(ctx, *Run) method; Execute opens the run directory a Spec describes, takes its
// lock, checks that a resume would not mix results (the result keys), runs the stages in
// StageOrder recording each one's start, end, counts and outcome in the manifest, writes
// it and releases the lock. Summarize is the run summary that `reactgen stats` and the
// dataset card print and that report scores for eval and compare. The concrete stages
// live in their own packages (generate, filter, export, index, ingest) and depend on
// pipeline, never on each other; pipeline never imports an LLM client, an environment
// or a file format.
//
// Imports: only the leaf libraries internal/fastjson, internal/safefile,
// internal/atomicfile, internal/redact and internal/origin; every other package may
// import pipeline. Generic file safety (opening inputs, atomic writes, directory swaps)
// and secret redaction are those leaf libraries', not pipeline's.
package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// SchemaVersion is the version of the Episode record as written to episodes.jsonl,
// kept.jsonl and rejected.jsonl. It changes whenever a field changes meaning or is removed.
// Version 2: the steps of a combined method's episode are only its agent's (a CoT-SC
// answer is no longer appended to them as a Finish step; see Episode.Chain).
const SchemaVersion = 2

// Task names.
const (
	TaskHotpotQA = "hotpotqa"
	TaskFEVER    = "fever"
	// The text games of the paper, played on AgentGym's environment servers
	// (env/agentgym): a question is a game, its id the game's AgentGym number.
	TaskALFWorld = "alfworld"
	TaskWebShop  = "webshop"
)

// GameTask reports whether task is a text game played on an AgentGym server, whose
// episodes end when the environment says done and carry its reward.
func GameTask(task string) bool { return task == TaskALFWorld || task == TaskWebShop }

// FEVER labels, as the dataset spells them.
const (
	LabelSupports = "SUPPORTS"
	LabelRefutes  = "REFUTES"
	LabelNEI      = "NOT ENOUGH INFO"
)

// Stop reasons: why an episode ended.
const (
	StopFinished    = "finished"    // the agent called Finish
	StopMaxSteps    = "max_steps"   // the step limit was reached without Finish
	StopLoop        = "loop"        // the same action three times in a row
	StopError       = "error"       // a request or environment error after retries
	StopBudget      = "budget"      // the run's LLM budget ran out mid-episode
	StopInterrupted = "interrupted" // the run was stopped while the episode was in flight
)

// Action types, as recorded in Step.ActionType.
const (
	ActionSearch  = "search"
	ActionLookup  = "lookup"
	ActionFinish  = "finish"
	ActionInvalid = "invalid"
	// ActionThink is a game's reasoning action (ALFWorld's "think: …", WebShop's
	// "think[…]"), answered "OK."; a game's other actions are typed by the function of
	// its action set they match (take, put, search, click, …; see internal/tool).
	ActionThink = "think"
)

// Fact names one supporting sentence: a page title and the sentence's index on that page
// (HotpotQA's supporting_facts, FEVER's evidence).
type Fact struct {
	Title    string `json:"title"`
	Sentence int    `json:"sentence"`
}

// Paragraph is one page excerpt as HotpotQA's context field carries it.
type Paragraph struct {
	Title     string   `json:"title"`
	Sentences []string `json:"sentences"`
}

// Question is one task item: a HotpotQA question or a FEVER claim. For FEVER, Answer holds
// the label.
type Question struct {
	ID              string      `json:"id"`
	Task            string      `json:"task"`
	Question        string      `json:"question"`
	Answer          string      `json:"answer"`
	Type            string      `json:"type,omitempty"`  // HotpotQA: bridge or comparison; FEVER: the label
	Level           string      `json:"level,omitempty"` // HotpotQA: easy, medium, hard
	SupportingFacts []Fact      `json:"supporting_facts,omitempty"`
	Context         []Paragraph `json:"context,omitempty"`
}

// Usage counts tokens and money.
type Usage struct {
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	TotalTokens      int     `json:"total_tokens"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
	// CachedTokens are the prompt tokens the server read from its prompt cache (part of
	// PromptTokens), priced at llm.prices' cached_prompt.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// CacheSavingUSD is what prompt caching saved: without it, CostUSD + CacheSavingUSD.
	CacheSavingUSD float64 `json:"cache_saving_usd,omitempty"`
	// UnpricedCalls counts the calls whose model had no price (in llm.prices or
	// DefaultPrices): their cost is unknown, not 0, and CostUSD leaves them out.
	UnpricedCalls int `json:"unpriced_calls,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
		CostUSD:          u.CostUSD + v.CostUSD,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		CacheSavingUSD:   u.CacheSavingUSD + v.CacheSavingUSD,
		UnpricedCalls:    u.UnpricedCalls + v.UnpricedCalls,
	}
}

// CostWithoutCacheUSD is what the tokens would have cost with no prompt caching.
func (u Usage) CostWithoutCacheUSD() float64 { return u.CostUSD + u.CacheSavingUSD }

// Call records one LLM request made for an episode.
type Call struct {
	Model        string `json:"model,omitempty"`
	PromptHash   string `json:"prompt_hash"`      // sha256 of the full request prompt
	Prompt       string `json:"prompt,omitempty"` // only with generate.keep_prompts
	Completion   string `json:"completion"`
	FinishReason string `json:"finish_reason,omitempty"`
	Usage        Usage  `json:"usage"`
	LatencyMS    int64  `json:"latency_ms"`
	Retries      int    `json:"retries,omitempty"`
	Cached       bool   `json:"cached,omitempty"`
	Bad          bool   `json:"bad,omitempty"` // the completion held no usable action
	Error        string `json:"error,omitempty"`
	// NotSent is set when the request never left reactgen (a spent budget, a model or a
	// parameter the client library refuses): it failed with Error and is not counted in
	// the episode's llm_calls.
	NotSent bool `json:"not_sent,omitempty"`
	// Choice is this completion's index among the choices of one request with n > 1
	// (CoT-SC's samples). A call with Choice > 0 made no request of its own: the request,
	// its usage, latency and retries are the Choice 0 call's.
	Choice int `json:"choice,omitempty"`
	// ToolCalls are the function calls of the reply (generate.format tools), as the model
	// sent them, well-formed or not.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Reasoning is the reasoning text of this completion (see Step.Reasoning).
	Reasoning string `json:"reasoning,omitempty"`
	// Logprobs are the log-probabilities of the completion's tokens, in order, as the
	// server returned them (only with llm.logprobs: true).
	Logprobs []float64 `json:"logprobs,omitempty"`
	// PromptTokenIDs and CompletionTokenIDs are the token ids of the prompt and the
	// completion, where the server returns them (vLLM; only with llm.logprobs: true).
	PromptTokenIDs     []int64 `json:"prompt_token_ids,omitempty"`
	CompletionTokenIDs []int64 `json:"completion_token_ids,omitempty"`
}

// Step is one Thought / Action / Observation triple. A CoT episode has one step whose
// action is Finish; a Standard episode has one step with no thought.
type Step struct {
	Thought     string `json:"thought"`
	Action      string `json:"action"`      // normalised, e.g. Search[Ada Lovelace]
	ActionType  string `json:"action_type"` // search, lookup, finish, invalid
	Argument    string `json:"argument"`
	Observation string `json:"observation"`
	Calls       []Call `json:"calls,omitempty"` // the request(s) that produced this step
	// Reasoning is the reasoning text a reasoning model returned for this step apart from
	// its answer (the reply's reasoning or reasoning_content field, or a leading
	// <think>…</think> block when llm.think_tags reads it), kept apart from Thought,
	// which is the ReAct thought the model wrote in its answer. Empty when the model
	// returned none.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCall is the function call a tool-calling model made for this step, as it made
	// it; Action is what was read from it. Nil for text formats and imported episodes.
	ToolCall *ToolCall `json:"tool_call,omitempty"`
}

// ToolCall is one function call as the model sent it (generate.format tools).
type ToolCall struct {
	ID        string `json:"id,omitempty"` // the call id the server gave
	Name      string `json:"name"`         // search, lookup or finish (or what the model wrote)
	Arguments string `json:"arguments"`    // the arguments' JSON text, verbatim
}

// Sample is one sampled chain of thought in a self-consistency method.
type Sample struct {
	Thought string `json:"thought"`
	Answer  string `json:"answer"`
	Call    *Call  `json:"call,omitempty"`
}

// Episode is one attempt at one question by one method: the record that flows through
// every stage. Its JSON tags are the JSONL schema (see docs/episode.md).
type Episode struct {
	Schema       int      `json:"schema"`
	ID           string   `json:"id"`
	RunID        string   `json:"run_id"`
	Task         string   `json:"task"`
	QuestionID   string   `json:"question_id"`
	Question     string   `json:"question"`
	Answer       string   `json:"answer"` // the gold answer or label
	QuestionType string   `json:"question_type,omitempty"`
	Method       string   `json:"method"`
	Branch       string   `json:"branch,omitempty"` // for combined methods: the method that produced the answer (AnsweredBy)
	Policy       string   `json:"policy"`           // the model name, or "expert"
	Format       string   `json:"format,omitempty"` // completion or chat
	Attempt      int      `json:"attempt"`
	Seed         int64    `json:"seed"`
	Steps        []Step   `json:"steps"`
	Samples      []Sample `json:"samples,omitempty"`
	Prediction   string   `json:"prediction"`
	Finished     bool     `json:"finished"`
	Correct      bool     `json:"correct"`
	EM           float64  `json:"em"`
	F1           float64  `json:"f1"`
	StopReason   string   `json:"stop_reason"`
	LLMCalls     int      `json:"llm_calls"`
	BadCalls     int      `json:"bad_calls"`
	Usage        Usage    `json:"usage"`
	LatencyMS    int64    `json:"latency_ms"`
	Rationalized bool     `json:"rationalized,omitempty"`
	Round        int      `json:"round,omitempty"` // STaR round that produced it (1, 2, ...); 0 outside STaR rounds
	Error        string   `json:"error,omitempty"`
	// Reward is a game's reward as its environment gave it when the episode ended
	// (ALFWorld: 1 for a win, else 0; WebShop: the purchase's score, 0 to 1); nil for the
	// Wikipedia tasks. A game episode is correct when its reward is 1.
	Reward *float64 `json:"reward,omitempty"`
	// MaskedSteps are the steps the filter marked bad (filter.mask_steps) in a kept record:
	// the episode is kept, and the export trains on none of these steps (weight 0).
	MaskedSteps []MaskedStep `json:"masked_steps,omitempty"`
}

// MaskedStep is one step of a kept episode that the filter marked bad: Step is its
// 1-based number, Code why (filter.mask_steps: invalid_action, repeated_search,
// error_observation). A masked step stays in the trajectory; no loss is put on it.
type MaskedStep struct {
	Step int    `json:"step"`
	Code string `json:"code"`
}

// Methods, as Episode.Method and Episode.Branch name them.
const (
	MethodStandard   = "standard"
	MethodCoT        = "cot"
	MethodCoTSC      = "cot-sc"
	MethodAct        = "act"
	MethodReAct      = "react"
	MethodReActCoTSC = "react-cot-sc"
	MethodCoTSCReAct = "cot-sc-react"
)

// AnsweredBy is the method whose answer the episode's prediction is: for the combined
// methods (react-cot-sc, cot-sc-react) the branch that answered, react or cot-sc; for
// every other method the method itself (imported trajectories are react).
func (e *Episode) AnsweredBy() string {
	if e.Branch != "" {
		return e.Branch
	}
	return e.Method
}

// Walked reports whether the episode's answer is the Finish of a trajectory its agent
// walked: it was answered by react or act, and its last step is a Finish (for a game,
// the step after which the environment said done).
func (e *Episode) Walked() bool {
	switch e.AnsweredBy() {
	case MethodReAct, MethodAct:
	default:
		return false
	}
	return e.Ended()
}

// Ended reports whether the episode's last step ended it: a Finish, or, in a game, the
// action after which the environment said done. That step's observation is no turn of
// the exported trajectory.
func (e *Episode) Ended() bool {
	n := len(e.Steps)
	if n == 0 {
		return false
	}
	if GameTask(e.Task) {
		return e.Finished
	}
	return e.Steps[n-1].ActionType == ActionFinish
}

// Chain returns the chain of thought whose answer the prediction is, for an episode
// answered by cot or cot-sc: the first CoT-SC sample whose answer is the prediction (the
// sample generate's vote picks), or a CoT episode's one step. ok is false for an episode
// answered otherwise or without an answer.
func (e *Episode) Chain() (thought string, ok bool) {
	if !e.Finished || e.Prediction == "" {
		return "", false
	}
	switch e.AnsweredBy() {
	case MethodCoTSC:
		for _, s := range e.Samples {
			if s.Answer == e.Prediction {
				return s.Thought, true
			}
		}
	case MethodCoT:
		if len(e.Steps) == 1 && e.Steps[0].ActionType == ActionFinish {
			return e.Steps[0].Thought, true
		}
	}
	return "", false
}

// Retryable reports whether a resumed run should try this episode again: it did not
// reach an outcome because of an error, the budget or an interruption.
func (e *Episode) Retryable() bool {
	switch e.StopReason {
	case StopError, StopBudget, StopInterrupted:
		return true
	}
	return false
}

// Key identifies the (question, attempt) slot an episode fills within a run.
func (e *Episode) Key() string { return fmt.Sprintf("%s#%d", e.QuestionID, e.Attempt) }

// EpisodeID is the stable id of an episode: a hash of what determines it, so that a re-run
// or a resume produces the same ids.
func EpisodeID(task, questionID, method string, attempt int, rationalized bool) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d", task, questionID, method, attempt)
	if rationalized {
		h.Write([]byte("\x00rationalized"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Reject is one reason a filter rule gave for rejecting an episode.
type Reject struct {
	Rule   string `json:"rule"`
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`
}

// Rejected is a line of rejected.jsonl: the episode with its reasons. It decodes as an
// Episode too.
type Rejected struct {
	Episode
	Rejects []Reject `json:"rejects"`
}

// Codes returns the reject codes joined for display, e.g. "correct/wrong_answer".
func (r *Rejected) Codes() string {
	parts := make([]string, len(r.Rejects))
	for i, x := range r.Rejects {
		parts[i] = x.Rule + "/" + x.Code
	}
	return strings.Join(parts, ",")
}

// Sink receives finished episodes. Write blocks until the record is durable according to
// the run's fsync policy, is safe for concurrent use, and never keeps ep after it returns.
type Sink interface {
	Write(ctx context.Context, ep Episode) error
}
