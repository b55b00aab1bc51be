// Package export turns kept episodes (pipeline.Episode, streamed from kept.jsonl, and for
// preference pairs the rejected ones from rejected.jsonl) into fine-tuning sets: chat and
// completion JSONL in the layouts of OpenAI, axolotl, LLaMA-Factory and AgentGym, the
// Arrow directory that Hugging Face datasets' load_from_disk reads, a single Arrow IPC
// file, Parquet shards laid out for the Hugging Face Hub, DPO preference pairs and a
// dataset card. Every format is derived from one rendered Example per episode and view;
// docs/formats.md describes each file. Stage is the export stage of a run (a
// pipeline.Stage): it fills the card from pipeline.Summarize and lists every file it
// wrote in the manifest.
//
// Imports: pipeline and the internal/ libraries; never another stage (the importer's
// manifest fields come through pipeline.Imported).
package export

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// Views: how a trajectory is rendered.
const (
	ViewReAct    = "react"    // thoughts, actions and observations, as generated
	ViewAct      = "act"      // thoughts removed: actions and observations only
	ViewCoT      = "cot"      // the chain of thought and the answer of a CoT or CoT-SC answer
	ViewStandard = "standard" // the question and the answer, nothing between
)

// InView reports whether ep has a rendering in view. The react and act views hold only
// trajectories the agent walked to its own Finish (pipeline.Episode.Walked): never an
// episode a CoT or CoT-SC answer stands for, such as a react-cot-sc episode that ReAct
// did not finish. The cot view holds the episodes answered by cot or cot-sc (their
// winning chain, pipeline.Episode.Chain); the standard view every episode but a game's,
// which has no answer to give without playing.
func InView(ep *pipeline.Episode, view string) bool {
	switch view {
	case ViewReAct, ViewAct:
		return ep.Walked()
	case ViewCoT:
		_, ok := ep.Chain()
		return ok
	case ViewStandard:
		return !pipeline.GameTask(ep.Task) // Validate requires its answer
	}
	return false
}

// notInView is the error for rendering an episode in a view that cannot hold it.
func notInView(ep *pipeline.Episode, view string) error {
	what := "no answer"
	switch {
	case pipeline.GameTask(ep.Task):
		what = "a game of " + ep.Task
	case ep.Finished:
		what = "the answer of " + ep.AnsweredBy()
		if ep.AnsweredBy() == pipeline.MethodReAct || ep.AnsweredBy() == pipeline.MethodAct {
			what += " without a Finish step"
		}
	}
	return fmt.Errorf("render episode %s: it holds %s, which the %s view cannot show (react and act: trajectories the agent walked to its own Finish or a game's end; cot: answers of cot and cot-sc; standard: any answer but a game's)",
		ep.ID, what, view)
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one chat turn. Trainable is the loss mask: true when a model fine-tuned on
// the example should learn to produce this turn.
type Message struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	Trainable bool   `json:"trainable"`
	// Reasoning is, on an assistant turn, the reasoning text the model returned for it
	// apart from its answer (pipeline.Step.Reasoning), under export.reasoning keep; the
	// formats with a place for it write it there (reasoning_content, or a template's
	// thought words). Inline puts it into Content instead; drop leaves it out.
	Reasoning string `json:"reasoning,omitempty"`
}

// Step is one Thought / Action / Observation triple as exported (pipeline.Step without the
// LLM calls).
type Step struct {
	Thought     string `json:"thought"`
	Action      string `json:"action"`
	ActionType  string `json:"action_type"`
	Argument    string `json:"argument"`
	Observation string `json:"observation"`
	// Reasoning is the step's reasoning text (pipeline.Step.Reasoning); empty under
	// export.reasoning drop and in the act view.
	Reasoning string `json:"reasoning,omitempty"`
	// Logprobs, PromptTokenIDs and CompletionTokenIDs are those of the call that decided
	// the step (its last; pipeline.Call), kept with llm.logprobs and llm.token_ids.
	Logprobs           []float64 `json:"logprobs,omitempty"`
	PromptTokenIDs     []int64   `json:"prompt_token_ids,omitempty"`
	CompletionTokenIDs []int64   `json:"completion_token_ids,omitempty"`
}

// Example is the rendered training example derived from one episode in one view. Every
// format writes its rows from an Example; the Arrow schema is derived from it (see
// columns in schema.go). Exporters must not modify an Example they are handed.
type Example struct {
	ID         string  `json:"id"`
	Task       string  `json:"task"`
	Method     string  `json:"method"`
	Policy     string  `json:"policy"`
	QuestionID string  `json:"question_id"`
	Question   string  `json:"question"`
	Answer     string  `json:"answer"`
	Prediction string  `json:"prediction"`
	Correct    bool    `json:"correct"`
	EM         float64 `json:"em"`
	F1         float64 `json:"f1"`
	// Reward is a game's reward (pipeline.Episode.Reward: WebShop's score, ALFWorld's
	// win); nil for the Wikipedia tasks, which have none.
	Reward       *float64  `json:"reward"`
	NSteps       int64     `json:"n_steps"`
	Steps        []Step    `json:"steps"`
	Messages     []Message `json:"messages"`
	Text         string    `json:"text"` // the paper's layout: question line, then the numbered trajectory
	Rationalized bool      `json:"rationalized"`
	Tokens       int64     `json:"n_tokens"` // ChatTokens of Messages with export.tokenizer
	// Tools and ToolMessages are the tool-calling rendering: the task's tool definitions
	// and the turns with the actions as function calls (tools.go).
	Tools        []tool.Def    `json:"tools"`
	ToolMessages []ToolMessage `json:"tool_messages"`
	RunID        string        `json:"run_id"`
	View         string        `json:"view"`
	Split        string        `json:"split"`

	spans  []span // per step, in the react and act views: where Render wrote it
	masked []int  // the 0-based steps the filter masked (pipeline.Episode.MaskedSteps), in the react and act views
	// src are the episode's steps, in the react and act views: what the interchange
	// formats carry beyond the rendered step (the calls' usage, cost and model).
	src []pipeline.Step
	// chatText and chatSpans are the example rendered by export.chat_template and the
	// byte spans of it that carry loss (chattext.go); empty without the key.
	chatText  string
	chatSpans [][2]int
	// interchange is interchangeSteps(ex), laid out once by the export for both adp and
	// atif when it writes both; nil otherwise.
	interchange []interchangeStep
}

// isMasked reports whether step k (0-based) of the example is masked: its assistant turn
// is in the example but carries no loss.
func (ex *Example) isMasked(k int) bool { return slices.Contains(ex.masked, k) }

// maskedOf returns the 0-based steps of ep that the filter masked.
func maskedOf(ep *pipeline.Episode) []int {
	if len(ep.MaskedSteps) == 0 {
		return nil
	}
	out := make([]int, 0, len(ep.MaskedSteps))
	for _, m := range ep.MaskedSteps {
		out = append(out, m.Step-1)
	}
	return out
}

// span is where one step's assistant part lies in an Example's Text ("Thought k: …\n
// Action k: …", without the newline after it) and which of its Messages is that step's
// assistant turn. The completion and alpaca formats cut their per-step rows with it.
type span struct{ start, end, msg int }

// RenderOptions are the parts of the export config that change a rendering.
type RenderOptions struct {
	System            string // system message; empty = none
	TrainObservations bool   // observation turns are trainable too
	// Reasoning is export.reasoning: keep (also ""), drop or inline (see Reasoning*).
	Reasoning string
}

// export.reasoning: where a step's reasoning text goes.
const (
	// ReasoningKeep puts it in the formats' own fields (reasoning_content on assistant
	// messages; Message.Reasoning, ToolMessage.Reasoning, Step.Reasoning) and nowhere in
	// the text.
	ReasoningKeep = "keep"
	// ReasoningDrop leaves it out of every format.
	ReasoningDrop = "drop"
	// ReasoningInline writes it into the trained text, as <think>…</think> before the
	// thought, for formats and trainers with no field for it.
	ReasoningInline = "inline"
)

// ReasoningModes are the values of export.reasoning.
var ReasoningModes = []string{ReasoningKeep, ReasoningDrop, ReasoningInline}

// InlineThink is reasoning as inline text ahead of an assistant turn: <think>, the
// reasoning, </think> on lines of their own and a blank line, the layout of the
// Qwen3 and DeepSeek-R1 chat templates (and LLaMA-Factory's default thought words).
func InlineThink(reasoning string) string {
	if reasoning == "" {
		return ""
	}
	return "<think>\n" + reasoning + "\n</think>\n\n"
}

// stepReasoning is the reasoning ep's step s carries into view: none in the act view.
func stepReasoning(s *pipeline.Step, view string, opts RenderOptions) string {
	if view == ViewAct || opts.Reasoning == ReasoningDrop {
		return ""
	}
	return s.Reasoning
}

// answerReasoning is the reasoning behind the answer of the cot and standard views: the
// winning CoT-SC sample's call's, or the one step's of a CoT or Standard episode.
func answerReasoning(ep *pipeline.Episode, view string, opts RenderOptions) string {
	if opts.Reasoning == ReasoningDrop {
		return ""
	}
	switch ep.AnsweredBy() {
	case pipeline.MethodCoTSC:
		if view != ViewCoT {
			return ""
		}
		for _, s := range ep.Samples {
			if s.Answer == ep.Prediction && s.Call != nil {
				return s.Call.Reasoning
			}
		}
	case pipeline.MethodCoT, pipeline.MethodStandard:
		if len(ep.Steps) == 1 {
			return ep.Steps[0].Reasoning
		}
	}
	return ""
}

// lastCall is the call that decided a step: its last.
func lastCall(s *pipeline.Step) *pipeline.Call {
	if len(s.Calls) == 0 {
		return nil
	}
	return &s.Calls[len(s.Calls)-1]
}

// QuestionLine is the first user turn: "Question: q" for HotpotQA, "Claim: c" for FEVER,
// a game's first observation as it is.
func QuestionLine(task, question string) string {
	if pipeline.GameTask(task) {
		return question // a game's first observation, as its server wrote it
	}
	if task == pipeline.TaskFEVER {
		return "Claim: " + question
	}
	return "Question: " + question
}

// Prompt returns the text a completion model is conditioned on: the question line and a
// newline (the paper fine-tuned on whole trajectories conditioned on the question).
func (ex *Example) Prompt() string { return QuestionLine(ex.Task, ex.Question) + "\n" }

// Completion returns the part of Text after the prompt: the numbered trajectory.
func (ex *Example) Completion() string { return strings.TrimPrefix(ex.Text, ex.Prompt()) }

// assistantTurn is an assistant message with its reasoning where export.reasoning puts
// it: its own field (keep), ahead of the content (inline), or nowhere (drop; the caller
// passes none).
func assistantTurn(content, reasoning string, trainable bool, opts RenderOptions) Message {
	if opts.Reasoning == ReasoningInline {
		return Message{Role: RoleAssistant, Content: InlineThink(reasoning) + content, Trainable: trainable}
	}
	return Message{Role: RoleAssistant, Content: content, Trainable: trainable, Reasoning: reasoning}
}

// withoutThinks returns a game episode without its think steps and their "OK."
// observations, as the act view shows it: the paper's act prompts hold actions only.
// Masked steps keep their marks, renumbered; a masked think step goes with it. Other
// episodes are returned as they are.
func withoutThinks(ep pipeline.Episode) pipeline.Episode {
	if !pipeline.GameTask(ep.Task) || !slices.ContainsFunc(ep.Steps, func(s pipeline.Step) bool { return s.ActionType == pipeline.ActionThink }) {
		return ep
	}
	steps := make([]pipeline.Step, 0, len(ep.Steps))
	number := make([]int, len(ep.Steps)) // 1-based step number in the act view, 0 for a think
	for i, s := range ep.Steps {
		if s.ActionType != pipeline.ActionThink {
			steps = append(steps, s)
			number[i] = len(steps)
		}
	}
	var masked []pipeline.MaskedStep
	for _, m := range ep.MaskedSteps {
		switch {
		case m.Step < 1 || m.Step > len(number):
			masked = append(masked, m) // not a step: Validate says so
		case number[m.Step-1] > 0:
			masked = append(masked, pipeline.MaskedStep{Step: number[m.Step-1], Code: m.Code})
		}
	}
	ep.Steps, ep.MaskedSteps = steps, masked
	return ep
}

// Render builds the example for ep in view (react, act or standard). It does not validate;
// Validate does. The split is left empty for the caller to set.
func Render(ep pipeline.Episode, view string, opts RenderOptions) (Example, error) {
	if slices.Contains(Views, view) && !InView(&ep, view) {
		return Example{}, notInView(&ep, view)
	}
	if view == ViewAct {
		ep = withoutThinks(ep)
	}
	ex := Example{
		ID: ep.ID, Task: ep.Task, Method: ep.Method, Policy: ep.Policy, QuestionID: ep.QuestionID,
		Question: ep.Question, Answer: ep.Answer, Prediction: ep.Prediction, Correct: ep.Correct,
		EM: ep.EM, F1: ep.F1, Reward: ep.Reward, Rationalized: ep.Rationalized, RunID: ep.RunID, View: view,
	}
	qline := QuestionLine(ep.Task, ep.Question)
	ex.Messages = make([]Message, 0, 2*len(ep.Steps)+2)
	if opts.System != "" {
		ex.Messages = append(ex.Messages, Message{Role: RoleSystem, Content: opts.System})
	}
	ex.Messages = append(ex.Messages, Message{Role: RoleUser, Content: qline})
	var text strings.Builder
	size := len(qline) + 1
	for _, s := range ep.Steps {
		size += len(s.Thought) + len(s.Action) + len(s.Observation) + 40
	}
	text.Grow(size)
	text.WriteString(qline)
	text.WriteByte('\n')

	switch view {
	case ViewReAct, ViewAct:
		ex.renderSteps(&ep, view, opts, &text)
	case ViewCoT, ViewStandard:
		ex.renderAnswer(&ep, view, opts, &text)
	default:
		return Example{}, fmt.Errorf("render episode %s: unknown view %q (want react, act, cot or standard)", ep.ID, view)
	}
	ex.NSteps = int64(len(ex.Steps))
	ex.Text = text.String()
	ex.Tools = toolsOf(ep.Task, view).defs
	ex.ToolMessages = renderTools(&ep, view, opts)
	return ex, nil
}

// renderSteps adds the trajectory of a react or act view to ex: a step and an assistant
// turn per step (with its span in text, the completion layout) and an observation turn
// after each but a last step that ended the episode.
func (ex *Example) renderSteps(ep *pipeline.Episode, view string, opts RenderOptions, text *strings.Builder) {
	ex.Steps = make([]Step, 0, len(ep.Steps))
	ex.spans = make([]span, 0, len(ep.Steps))
	ex.masked = maskedOf(ep)
	ex.src = ep.Steps
	for i, s := range ep.Steps {
		st := Step{Thought: s.Thought, Action: s.Action, ActionType: s.ActionType, Argument: s.Argument, Observation: s.Observation,
			Reasoning: stepReasoning(&ep.Steps[i], view, opts)}
		if c := lastCall(&ep.Steps[i]); c != nil {
			st.Logprobs, st.PromptTokenIDs, st.CompletionTokenIDs = c.Logprobs, c.PromptTokenIDs, c.CompletionTokenIDs
		}
		if view == ViewAct {
			st.Thought = ""
		}
		ex.Steps = append(ex.Steps, st)
		n := strconv.Itoa(i + 1)
		sp := span{start: text.Len(), msg: len(ex.Messages)}
		var turn string
		if opts.Reasoning == ReasoningInline {
			text.WriteString(InlineThink(st.Reasoning))
		}
		if st.Thought != "" {
			turn = "Thought: " + st.Thought + "\nAction: " + st.Action
			text.WriteString("Thought ")
			text.WriteString(n)
			text.WriteString(": ")
			text.WriteString(st.Thought)
			text.WriteByte('\n')
		} else {
			turn = "Action: " + st.Action
		}
		text.WriteString("Action ")
		text.WriteString(n)
		text.WriteString(": ")
		text.WriteString(st.Action)
		sp.end = text.Len()
		ex.spans = append(ex.spans, sp)
		ex.Messages = append(ex.Messages, assistantTurn(turn, st.Reasoning, !ex.isMasked(i), opts))
		if i == len(ep.Steps)-1 && ep.Ended() {
			break // the Finish step (a game's last action) has no observation turn
		}
		text.WriteString("\nObservation ")
		text.WriteString(n)
		text.WriteString(": ")
		text.WriteString(st.Observation)
		text.WriteByte('\n')
		ex.Messages = append(ex.Messages, Message{Role: RoleUser, Content: "Observation: " + st.Observation, Trainable: opts.TrainObservations})
	}
}

// renderAnswer adds the one assistant turn of a cot view (the chain and the answer) or a
// standard view (the answer) to ex.
func (ex *Example) renderAnswer(ep *pipeline.Episode, view string, opts RenderOptions, text *strings.Builder) {
	ex.Steps = []Step{}
	turn := "Answer: " + ep.Prediction
	if view == ViewCoT {
		if chain, _ := ep.Chain(); chain != "" {
			turn = "Thought: " + chain + "\n" + turn
		}
	}
	r := answerReasoning(ep, view, opts)
	if opts.Reasoning == ReasoningInline {
		text.WriteString(InlineThink(r))
	}
	text.WriteString(turn)
	ex.Messages = append(ex.Messages, assistantTurn(turn, r, true, opts))
}
