package export

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// The interchange formats: agent trajectories in the two layouts agent SFT corpora are
// pooled through. adp is the Agent Data Protocol's standardized trajectory
// (neulab/agent-data-protocol, schema 1.2.0), atif Harbor's Agent Trajectory Interchange
// Format (ATIF-v1.7). Both are written from the example's steps and the episode's own
// (its reasoning, its calls' usage and log-probabilities), and read back by
// ingest (reactgen import --format adp|atif). docs/formats.md maps each field.
const (
	ADPSchemaVersion  = "1.2.0"
	ATIFSchemaVersion = "ATIF-v1.7"
	// ADPMetadata is the dataset metadata ADP keeps beside a dataset's trajectories
	// (datasets/<name>/metadata.json): the tools its api_actions call.
	ADPMetadata = "adp.metadata.json"
	// atifAgentName names the agent system in ATIF's agent object; its version is the
	// episode record's schema, what determines the steps' meaning.
	atifAgentName = "reactgen"
)

// interchangeFormats are the formats that carry whole trajectories, not training turns:
// no loss mask, so an example with masked steps cannot be written to them.
var interchangeFormats = []string{"adp", "atif"}

// adpRow is one ADP standardized trajectory. Details carries reactgen's record as
// strings (ADP's details is a dict; strings hold in every version of it).
type adpRow struct {
	SchemaVersion string     `json:"schema_version"`
	ID            string     `json:"id"`
	Content       []any      `json:"content"`
	Details       adpDetails `json:"details"`
}

type adpDetails struct {
	Source     string `json:"source"`
	EpisodeID  string `json:"episode_id"`
	RunID      string `json:"run_id"`
	Task       string `json:"task"`
	QuestionID string `json:"question_id"`
	Question   string `json:"question"`
	Answer     string `json:"answer"`
	Prediction string `json:"prediction"`
	Correct    string `json:"correct"`
	EM         string `json:"em"`
	F1         string `json:"f1"`
	Reward     string `json:"reward,omitempty"` // a game's reward; none for Wikipedia
	Method     string `json:"method"`
	Policy     string `json:"policy"`
	View       string `json:"view"`
	Split      string `json:"split"`
}

// ADP content items, by class_.
type adpTextObservation struct {
	Class   string   `json:"class_"`
	Content string   `json:"content"`
	Source  string   `json:"source"`
	Reward  *float64 `json:"reward,omitempty"`
}

type adpAPIAction struct {
	Class            string          `json:"class_"`
	Function         string          `json:"function"`
	Kwargs           json.RawMessage `json:"kwargs"`
	Description      string          `json:"description,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	Reward           *float64        `json:"reward,omitempty"`
}

type adpMessageAction struct {
	Class            string   `json:"class_"`
	Content          string   `json:"content"`
	Description      string   `json:"description,omitempty"`
	ReasoningContent string   `json:"reasoning_content,omitempty"`
	Reward           *float64 `json:"reward,omitempty"`
}

// interchangeStep is one step as both formats write it: the thought, the action as a
// tool call (nil for an invalid action, whose text stays in Action), the observation
// (none after the closing Finish), and what the episode recorded of its calls.
type interchangeStep struct {
	Thought, Action, Reasoning string
	Call                       *ToolCall
	Observation                string
	HasObservation             bool
	Calls                      []pipeline.Call
}

// interchangeSteps lays out the example's trajectory: per step in the react and act
// views (the act view without thoughts or reasoning), and in the cot and standard views the
// one finish call, with the winning chain as its thought (cot). The reasoning is where
// export.reasoning leaves it (Step.Reasoning): in reasoning_content under keep and
// inline (both formats have the field), nowhere under drop.
func interchangeSteps(ex *Example) []interchangeStep {
	call := func(i int, actionType, arg string) *ToolCall {
		name, args, ok := tool.FromAction(actionType, arg)
		if pipeline.GameTask(ex.Task) {
			// A game's call is its action as sent, in the game's action set (its
			// search is WebShop's, not Wikipedia's).
			name, args, ok = "", "", false
			if i < len(ex.Steps) {
				name, args, ok = tool.ParseCommand(ex.Task, ex.Steps[i].Action)
			}
		}
		if !ok {
			return nil
		}
		return &ToolCall{ID: toolCallID(ex.ID, i), Name: name, Arguments: args}
	}
	if ex.View == ViewCoT || ex.View == ViewStandard {
		var st interchangeStep
		for _, m := range ex.ToolMessages {
			if m.Role == RoleAssistant {
				st.Thought, st.Reasoning = m.Content, m.Reasoning
			}
		}
		st.Action, st.Call = "Finish["+ex.Prediction+"]", call(0, pipeline.ActionFinish, ex.Prediction)
		return []interchangeStep{st}
	}
	out := make([]interchangeStep, len(ex.Steps))
	for i, s := range ex.Steps {
		st := interchangeStep{Thought: s.Thought, Action: s.Action, Call: call(i, s.ActionType, s.Argument), Reasoning: s.Reasoning,
			Observation: s.Observation, HasObservation: !(i == len(ex.Steps)-1 && s.ActionType == pipeline.ActionFinish)}
		if i < len(ex.src) {
			st.Calls = ex.src[i].Calls
		}
		out[i] = st
	}
	return out
}

// interchangeSteps is the example's interchange steps, laid out once by the export
// (Example.interchange) or now.
func (ex *Example) interchangeSteps() []interchangeStep {
	if ex.interchange != nil {
		return ex.interchange
	}
	return interchangeSteps(ex)
}

// adpLine writes the example as one ADP trajectory: the question as the user's
// text_observation, then per step an api_action (search, lookup or finish with its one
// argument, the thought as its description, the reasoning as reasoning_content) and the
// observation as the environment's text_observation. An invalid action, which calls no
// tool, is a message_action holding the action's text. A game's reward is the reward
// of the last item, what the environment answered the action that ended the game (and
// details' reward). ADP has no system turn (each agent's converter writes its own), so
// export.system is not carried.
func adpLine(ex *Example, _ lineOptions) []any {
	steps := ex.interchangeSteps()
	content := make([]any, 0, 2*len(steps)+1)
	content = append(content, adpTextObservation{Class: "text_observation", Content: QuestionLine(ex.Task, ex.Question), Source: "user"})
	for _, s := range steps {
		if s.Call != nil {
			content = append(content, adpAPIAction{Class: "api_action", Function: s.Call.Name, Kwargs: json.RawMessage(s.Call.Arguments),
				Description: s.Thought, ReasoningContent: s.Reasoning})
		} else {
			content = append(content, adpMessageAction{Class: "message_action", Content: s.Action, Description: s.Thought, ReasoningContent: s.Reasoning})
		}
		if s.HasObservation {
			content = append(content, adpTextObservation{Class: "text_observation", Content: s.Observation, Source: "environment"})
		}
	}
	details := adpDetails{
		Source: "reactgen", EpisodeID: ex.ID, RunID: ex.RunID, Task: ex.Task, QuestionID: ex.QuestionID, Question: ex.Question,
		Answer: ex.Answer, Prediction: ex.Prediction, Correct: strconv.FormatBool(ex.Correct),
		EM: strconv.FormatFloat(ex.EM, 'g', -1, 64), F1: strconv.FormatFloat(ex.F1, 'g', -1, 64),
		Method: ex.Method, Policy: ex.Policy, View: ex.View, Split: ex.Split,
	}
	if r := ex.Reward; r != nil {
		details.Reward = strconv.FormatFloat(*r, 'g', -1, 64)
		switch last := content[len(content)-1].(type) {
		case adpTextObservation:
			last.Reward = r
			content[len(content)-1] = last
		case adpAPIAction:
			last.Reward = r
			content[len(content)-1] = last
		case adpMessageAction:
			last.Reward = r
			content[len(content)-1] = last
		}
	}
	return []any{adpRow{SchemaVersion: ADPSchemaVersion, ID: ex.ID + viewSuffix(ex.View), Content: content, Details: details}}
}

// adpMetadata is ADP's dataset metadata (metadata.json): the tools its trajectories'
// api_actions call, as OpenAI function specs.
type adpMetadata struct {
	CustomTools    []tool.Def `json:"custom_tools"`
	CodeEnabled    []string   `json:"code_enabled"`
	BrowserEnabled bool       `json:"browser_enabled"`
}

// adpMetadataOf lists the tools of the exported tasks, each name once: with HotpotQA and
// FEVER in one export, HotpotQA's finish (a free answer, which every FEVER label is).
func adpMetadataOf(tasks []string) adpMetadata {
	slices.SortFunc(tasks, func(a, b string) int {
		if a == pipeline.TaskHotpotQA {
			return -1
		}
		if b == pipeline.TaskHotpotQA {
			return 1
		}
		return 0
	})
	md := adpMetadata{CustomTools: []tool.Def{}, CodeEnabled: []string{}}
	seen := map[string]bool{}
	for _, task := range tasks {
		for _, d := range tool.Defs(task) {
			if !seen[d.Function.Name] {
				seen[d.Function.Name] = true
				md.CustomTools = append(md.CustomTools, d)
			}
		}
	}
	return md
}

// atifRow is one ATIF-v1.7 trajectory.
type atifRow struct {
	SchemaVersion string            `json:"schema_version"`
	SessionID     string            `json:"session_id,omitempty"`
	TrajectoryID  string            `json:"trajectory_id"`
	Agent         atifAgent         `json:"agent"`
	Steps         []atifStep        `json:"steps"`
	FinalMetrics  *atifFinalMetrics `json:"final_metrics,omitempty"`
	Extra         atifExtra         `json:"extra"`
}

type atifAgent struct {
	Name            string     `json:"name"`
	Version         string     `json:"version"`
	ModelName       string     `json:"model_name,omitempty"`
	ToolDefinitions []tool.Def `json:"tool_definitions"`
}

type atifStep struct {
	StepID           int              `json:"step_id"`
	Source           string           `json:"source"`
	ModelName        string           `json:"model_name,omitempty"`
	Message          string           `json:"message"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []atifToolCall   `json:"tool_calls,omitempty"`
	Observation      *atifObservation `json:"observation,omitempty"`
	Metrics          *atifMetrics     `json:"metrics,omitempty"`
	LLMCallCount     *int             `json:"llm_call_count,omitempty"`
}

type atifToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
}

type atifObservation struct {
	Results []atifResult `json:"results"`
}

type atifResult struct {
	SourceCallID string `json:"source_call_id,omitempty"`
	Content      string `json:"content"`
}

type atifMetrics struct {
	PromptTokens       int       `json:"prompt_tokens"`
	CompletionTokens   int       `json:"completion_tokens"`
	CachedTokens       int       `json:"cached_tokens,omitempty"`
	CostUSD            float64   `json:"cost_usd,omitempty"`
	PromptTokenIDs     []int64   `json:"prompt_token_ids,omitempty"`
	CompletionTokenIDs []int64   `json:"completion_token_ids,omitempty"`
	Logprobs           []float64 `json:"logprobs,omitempty"`
}

type atifFinalMetrics struct {
	TotalPromptTokens     int     `json:"total_prompt_tokens"`
	TotalCompletionTokens int     `json:"total_completion_tokens"`
	TotalCachedTokens     int     `json:"total_cached_tokens,omitempty"`
	TotalCostUSD          float64 `json:"total_cost_usd,omitempty"`
	TotalSteps            int     `json:"total_steps"`
}

// atifExtra is reactgen's record of the episode, in the trajectory's extra object.
type atifExtra struct {
	Source     string  `json:"source"`
	EpisodeID  string  `json:"episode_id"`
	Task       string  `json:"task"`
	QuestionID string  `json:"question_id"`
	Question   string  `json:"question"`
	Answer     string  `json:"answer"`
	Prediction string  `json:"prediction"`
	Correct    bool    `json:"correct"`
	EM         float64 `json:"em"`
	F1         float64 `json:"f1"`
	// Reward is a game's reward (ATIF has no reward field of its own); none for Wikipedia.
	Reward *float64 `json:"reward,omitempty"`
	Method string   `json:"method"`
	Policy string   `json:"policy"`
	View   string   `json:"view"`
	Split  string   `json:"split"`
}

// atifStepMetrics sums what a step's calls used (a step retried after a bad reply made
// several requests; a CoT-SC sample past the first made none of its own), and takes the
// log-probabilities and token ids of the completion the step was read from, its last
// call's. ok is false for a step with no call (an imported or expert one).
func atifStepMetrics(calls []pipeline.Call) (m atifMetrics, requests int, model string, ok bool) {
	for _, c := range calls {
		if c.Choice > 0 {
			continue
		}
		requests++
		m.PromptTokens += c.Usage.PromptTokens
		m.CompletionTokens += c.Usage.CompletionTokens
		m.CachedTokens += c.Usage.CachedTokens
		m.CostUSD += c.Usage.CostUSD
		if c.Model != "" {
			model = c.Model
		}
	}
	if n := len(calls); n > 0 {
		c := calls[n-1] // the call that decided the step (lastCall)
		m.Logprobs, m.PromptTokenIDs, m.CompletionTokenIDs = c.Logprobs, c.PromptTokenIDs, c.CompletionTokenIDs
	}
	return m, requests, model, requests > 0
}

// atifLine writes the example as one ATIF trajectory: the system message (when set) and
// the question as system and user steps, then one agent step per ReAct step: the thought
// as its message, the reasoning as reasoning_content, the action as its one tool call
// with the observation as the result answering it (same step, source_call_id), and its
// calls' usage, cost, log-probabilities and token ids as metrics. An invalid action calls
// no tool: its message ends "Action: <text>" and its observation has no source_call_id.
func atifLine(ex *Example, o lineOptions) []any {
	steps := ex.interchangeSteps()
	out := make([]atifStep, 0, len(steps)+2)
	add := func(s atifStep) {
		s.StepID = len(out) + 1
		out = append(out, s)
	}
	if o.System != "" {
		add(atifStep{Source: "system", Message: o.System})
	}
	add(atifStep{Source: "user", Message: QuestionLine(ex.Task, ex.Question)})
	var final atifFinalMetrics
	metered := false
	for _, s := range steps {
		st := atifStep{Source: "agent", Message: s.Thought, ReasoningContent: s.Reasoning}
		var result atifResult
		if s.Call != nil {
			st.ToolCalls = []atifToolCall{{ToolCallID: s.Call.ID, FunctionName: s.Call.Name, Arguments: json.RawMessage(s.Call.Arguments)}}
			result.SourceCallID = s.Call.ID
		} else {
			st.Message = "Action: " + s.Action
			if s.Thought != "" {
				st.Message = s.Thought + "\n" + st.Message
			}
		}
		if s.HasObservation {
			result.Content = s.Observation
			st.Observation = &atifObservation{Results: []atifResult{result}}
		}
		if m, n, model, ok := atifStepMetrics(s.Calls); ok {
			st.Metrics, st.LLMCallCount, st.ModelName = &m, &n, model
			final.TotalPromptTokens += m.PromptTokens
			final.TotalCompletionTokens += m.CompletionTokens
			final.TotalCachedTokens += m.CachedTokens
			final.TotalCostUSD += m.CostUSD
			metered = true
		}
		add(st)
	}
	row := atifRow{SchemaVersion: ATIFSchemaVersion, SessionID: ex.RunID, TrajectoryID: ex.ID + viewSuffix(ex.View),
		Agent: atifAgent{Name: atifAgentName, Version: fmt.Sprintf("episode-schema-%d", pipeline.SchemaVersion),
			ModelName: ex.Policy, ToolDefinitions: ex.Tools},
		Steps: out,
		Extra: atifExtra{Source: "reactgen", EpisodeID: ex.ID, Task: ex.Task, QuestionID: ex.QuestionID, Question: ex.Question,
			Answer: ex.Answer, Prediction: ex.Prediction, Correct: ex.Correct, EM: ex.EM, F1: ex.F1, Reward: ex.Reward, Method: ex.Method,
			Policy: ex.Policy, View: ex.View, Split: ex.Split},
	}
	if metered {
		final.TotalSteps = len(out)
		row.FinalMetrics = &final
	}
	return []any{row}
}

// writeADPMetadata writes ADPMetadata for the tasks exported.
func writeADPMetadata(stage string, tasks map[string]bool) (File, error) {
	data, err := json.MarshalIndent(adpMetadataOf(slices.Sorted(maps.Keys(tasks))), "", "  ")
	if err != nil {
		return File{}, err
	}
	size, sum, err := writeWhole(filepath.Join(stage, ADPMetadata), append(data, '\n'))
	if err != nil {
		return File{}, err
	}
	return File{Path: ADPMetadata, Format: "adp-metadata", Bytes: size, SHA256: sum}, nil
}
