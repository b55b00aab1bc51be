package llm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// The batch endpoints, as a batch input line's url and a batch's endpoint name them.
const (
	batchChat        = "/v1/chat/completions"
	batchCompletions = "/v1/completions"
)

// batchInputLine is one line of a Batch API input file (and of `vllm run-batch`'s).
type batchInputLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// batchLine encodes req as an input line with custom_id id: the body go-openai would
// send online for it, temperature 0 included (see OpenAI).
func batchLine(id string, req Request) (endpoint string, line []byte, err error) {
	if (req.Prompt == "") == (len(req.Messages) == 0) {
		return "", nil, fmt.Errorf("llm request: exactly one of prompt and messages must be set")
	}
	var body []byte
	if len(req.Messages) > 0 {
		endpoint = batchChat
		body, err = json.Marshal(chatRequest(req))
	} else {
		endpoint = batchCompletions
		body, err = json.Marshal(completionRequest(req))
	}
	if err != nil {
		return "", nil, fmt.Errorf("encode batch line: %w", err)
	}
	if !isReasoningModel(req.Model) {
		body = withTemperature(body)
	}
	if req.TokenIDs {
		body = withTokenIDs(body)
	}
	line, err = json.Marshal(batchInputLine{CustomID: id, Method: http.MethodPost, URL: endpoint, Body: body})
	return endpoint, line, err
}

// batchOutputLine is one line of a batch's output or error file.
type batchOutputLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// lineResult is what one output line says of its request: a response, or an error that
// is retryable (the line goes into a later wave) or not.
type lineResult struct {
	resp Response
	err  error
}

// decodeOutput turns one output line into its result.
func decodeOutput(l batchOutputLine, endpoint string) lineResult {
	if l.Response == nil || l.Response.StatusCode != http.StatusOK {
		ae := &APIError{Status: http.StatusInternalServerError, Type: "batch_line_error"}
		if l.Response != nil {
			ae.Status = l.Response.StatusCode
			var eb struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    any    `json:"code"`
				} `json:"error"`
			}
			if json.Unmarshal(l.Response.Body, &eb) == nil {
				ae.Message, ae.Type = eb.Error.Message, cmpOr(eb.Error.Type, ae.Type)
				if s, ok := eb.Error.Code.(string); ok {
					ae.Code = s
				}
			}
		}
		if l.Error != nil {
			ae.Code, ae.Message = cmpOr(ae.Code, l.Error.Code), cmpOr(ae.Message, l.Error.Message)
			if l.Response == nil && !retryableLineCode(l.Error.Code) {
				ae.Status = http.StatusBadRequest
			}
		}
		if ae.Message == "" {
			ae.Message = "the batch line failed"
		}
		return lineResult{err: ae}
	}
	var resp Response
	if endpoint == batchChat {
		var r openai.ChatCompletionResponse
		if err := json.Unmarshal(l.Response.Body, &r); err != nil {
			return lineResult{err: &APIError{Status: http.StatusOK, Type: typeInvalidResponse, Message: "batch line body: " + err.Error()}}
		}
		resp = chatResponse(r)
		readExtras(l.Response.Body, &resp, Request{Messages: []Message{{}}, Logprobs: true, TokenIDs: true}) // Batcher.finish keeps what was asked
	} else {
		var r openai.CompletionResponse
		if err := json.Unmarshal(l.Response.Body, &r); err != nil {
			return lineResult{err: &APIError{Status: http.StatusOK, Type: typeInvalidResponse, Message: "batch line body: " + err.Error()}}
		}
		resp = Response{Model: r.Model}
		if r.Usage != nil {
			resp.Usage = usage(*r.Usage)
		}
		for _, c := range r.Choices {
			resp.Choices = append(resp.Choices, Choice{Text: c.Text, FinishReason: c.FinishReason})
		}
		readExtras(l.Response.Body, &resp, Request{Logprobs: true, TokenIDs: true})
	}
	if what := emptyReply(l.Response.Body, resp, endpoint == batchChat); what != "" {
		// Not an empty completion: a line the server answered without one.
		return lineResult{err: &APIError{Status: http.StatusOK, Type: typeInvalidResponse,
			Message: "batch line holds a reply with " + what}}
	}
	return lineResult{resp: resp}
}

// retryableLineCode reports the error codes of lines that a later batch may complete:
// the batch expired or was cancelled before the line ran, or the server failed.
func retryableLineCode(code string) bool {
	switch strings.ToLower(code) {
	case "batch_expired", "batch_cancelled", "server_error", "rate_limit_exceeded", "timeout", "":
		return true
	}
	return false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
