package envserver

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The wire shapes of OpenEnv's env server (meta-pytorch/OpenEnv,
// src/openenv/core/env_server/types.py, http_server.py and serialization.py), written
// here from those models.

// OpenEnv's WebSocket error codes (types.py, WSErrorCode).
const (
	CodeInvalidJSON     = "INVALID_JSON"
	CodeUnknownType     = "UNKNOWN_TYPE"
	CodeValidationError = "VALIDATION_ERROR"
	CodeExecutionError  = "EXECUTION_ERROR"
	CodeCapacityReached = "CAPACITY_REACHED"
	CodeFactoryError    = "FACTORY_ERROR"
	CodeSessionError    = "SESSION_ERROR"
)

// Result is serialize_observation's dict: the body of an HTTP /reset or /step reply
// (ResetResponse, StepResponse) and the data of a WebSocket observation reply. OpenEnv
// leaves the observation's reward, done and metadata out of Observation and sends
// reward and done beside it.
type Result struct {
	Observation Observation `json:"observation"`
	Reward      *float64    `json:"reward"`
	Done        bool        `json:"done"`
}

// Observation is the environment's observation model (ReActObservation in /schema)
// without the base model's done, reward and metadata.
type Observation struct {
	// Text is what the paper's environment answers: the wrapper's "Question: ..." or
	// "Claim: ..." after a reset, the observation of the action after a step.
	Text string `json:"text"`
	// Action is the action as the environment parsed it (Search[X], Lookup[X],
	// Finish[X], or the text of an invalid one); empty after a reset.
	Action     string `json:"action"`
	QuestionID string `json:"question_id"`
	Question   string `json:"question"`
	// Answer is the Finish argument (for FEVER the canonical label when it names one);
	// null until Finish.
	Answer *string `json:"answer"`
	// F1 is the answer's token F1 against the gold answer (FEVER: equal to the reward,
	// as wrappers.py reports it); null until Finish.
	F1   *float64 `json:"f1"`
	Step int      `json:"step"`
	// Truncated is true when the episode ended at the reset's max_steps without Finish.
	Truncated bool `json:"truncated"`
}

// State is OpenEnv's State model (episode_id, step_count) with this environment's
// extra fields.
type State struct {
	EpisodeID  *string `json:"episode_id"`
	StepCount  int     `json:"step_count"`
	QuestionID *string `json:"question_id"`
	Done       bool    `json:"done"`
	MaxSteps   *int    `json:"max_steps"`
}

// health is HealthResponse.
type health struct {
	Status string `json:"status"`
}

// metadata is EnvironmentMetadata.
type metadata struct {
	Name             string  `json:"name"`
	Description      string  `json:"description"`
	ReadmeContent    *string `json:"readme_content"`
	Version          *string `json:"version"`
	Author           *string `json:"author"`
	DocumentationURL *string `json:"documentation_url"`
}

// wsMessage is an incoming WebSocket message before its type is known
// (WSResetMessage, WSStepMessage, WSStateMessage, WSCloseMessage).
type wsMessage map[string]json.RawMessage

// wsReply is WSObservationResponse, WSStateResponse and WSErrorResponse.
type wsReply struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

// wsError is the data of a WSErrorResponse.
type wsError struct {
	Message string `json:"message"`
	Code    string `json:"code"`
	// Errors lists the validation errors of a VALIDATION_ERROR, as pydantic's errors().
	Errors []fieldError `json:"errors,omitempty"`
	// ActiveSessions and MaxSessions come with CAPACITY_REACHED.
	ActiveSessions *int `json:"active_sessions,omitempty"`
	MaxSessions    *int `json:"max_sessions,omitempty"`
}

// fieldError is one entry of pydantic's ValidationError.errors(), the items of
// FastAPI's 422 "detail" list.
type fieldError struct {
	Type  string `json:"type"`
	Loc   []any  `json:"loc"`
	Msg   string `json:"msg"`
	Input any    `json:"input"`
}

// validationError is a request that does not fit a model: FastAPI answers it 422 with
// {"detail": errors}, the WebSocket handler with VALIDATION_ERROR.
type validationError []fieldError

func (v validationError) Error() string {
	parts := make([]string, len(v))
	for i, e := range v {
		loc := make([]string, len(e.Loc))
		for j, l := range e.Loc {
			loc[j] = fmt.Sprint(l)
		}
		parts[i] = strings.Join(loc, ".") + ": " + e.Msg
	}
	return strings.Join(parts, "; ")
}

func invalid(typ, msg string, input any, loc ...any) validationError {
	return validationError{{Type: typ, Loc: loc, Msg: msg, Input: input}}
}

// The JSON schemas /schema returns, as pydantic's model_json_schema() writes them for
// the models this environment would declare in Python:
//
//	class ReActAction(Action):
//	    action: str   # one action in the paper's syntax
//	class ReActObservation(Observation): text, action, question_id, question,
//	    answer, f1, step, truncated
//	class State: episode_id, step_count (extra fields allowed)
const (
	actionSchema = `{"additionalProperties":false,"description":"One action in the ReAct paper's syntax: Search[entity], Lookup[keyword] or Finish[answer].","properties":{"metadata":{"additionalProperties":true,"description":"Additional metadata for the action","title":"Metadata","type":"object"},"action":{"description":"The action as the agent wrote it, e.g. Search[Marrow Lake]","title":"Action","type":"string"}},"required":["action"],"title":"ReActAction","type":"object"}`

	observationSchema = `{"additionalProperties":false,"description":"What the paper's Wikipedia environment answers.","properties":{"done":{"default":false,"description":"Whether the episode has terminated","title":"Done","type":"boolean"},"reward":{"anyOf":[{"type":"boolean"},{"type":"integer"},{"type":"number"},{"type":"null"}],"default":null,"description":"Reward signal from the last action","title":"Reward"},"metadata":{"additionalProperties":true,"description":"Additional metadata for the observation","title":"Metadata","type":"object"},"text":{"default":"","description":"The observation text: Question: ... or Claim: ... after a reset, the environment's answer after a step","title":"Text","type":"string"},"action":{"default":"","description":"The action as the environment parsed it","title":"Action","type":"string"},"question_id":{"default":"","title":"Question Id","type":"string"},"question":{"default":"","title":"Question","type":"string"},"answer":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"description":"The Finish answer (FEVER: the canonical label)","title":"Answer"},"f1":{"anyOf":[{"type":"number"},{"type":"null"}],"default":null,"description":"Token F1 of the answer against the gold answer, after Finish","title":"F1"},"step":{"default":0,"title":"Step","type":"integer"},"truncated":{"default":false,"description":"The episode ended at max_steps without Finish","title":"Truncated","type":"boolean"}},"title":"ReActObservation","type":"object"}`

	stateSchema = `{"additionalProperties":true,"description":"Base class for environment state.\n\nRepresents internal environment state, separate from observations.","properties":{"episode_id":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"description":"Unique identifier for the current episode","title":"Episode Id"},"step_count":{"default":0,"description":"Number of steps taken in the current episode","minimum":0,"title":"Step Count","type":"integer"}},"title":"State","type":"object"}`
)

// schemaResponse is SchemaResponse.
var schemaResponse = fmt.Sprintf(`{"action":%s,"observation":%s,"state":%s}`, actionSchema, observationSchema, stateSchema)
