package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/reactgen/reactgen/internal/retry"
)

// notFoundHint follows a 404 from the chat endpoint that is not about the model: the
// path was wrong.
const notFoundHint = " (no such endpoint: check llm.base_url, which usually ends in /v1)"

// hint adds to an *APIError what the user can do about it, which depends on the request:
// a 404 from the completions endpoint most often means a server that serves only chat,
// an unknown model is named with the key that sets it, and a refused key with the
// variable it was read from.
func (o *OpenAI) hint(err error, req Request) error {
	var ae *APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case ae.Status == http.StatusNotFound && unknownModel(ae):
		ae.Message += fmt.Sprintf(" (the server does not serve model %q: check llm.model; GET %s/models lists the models it serves)", req.Model, o.baseURL)
	case ae.Status == http.StatusNotFound && req.Prompt != "":
		ae.Message += fmt.Sprintf(" (the server has no legacy completions endpoint %s/completions: if it serves chat, set generate.format: chat; otherwise check llm.base_url, which usually ends in /v1)", o.baseURL)
	case ae.Status == http.StatusNotFound:
		ae.Message += notFoundHint
	case ae.Status == http.StatusUnauthorized && o.keyEnv != "" && o.key == "":
		ae.Message += fmt.Sprintf(" (the API key is read from the environment variable %s, which is empty: export %s=...)", o.keyEnv, o.keyEnv)
	case ae.Status == http.StatusUnauthorized && o.keyEnv != "":
		ae.Message += fmt.Sprintf(" (the server refused the API key in the environment variable %s)", o.keyEnv)
	}
	return err
}

// unknownModel recognises a 404 about the model: OpenAI's model_not_found, vLLM's "The
// model `x` does not exist." (code 404), Ollama's "model \"x\" not found".
func unknownModel(ae *APIError) bool {
	if ae.Code == "model_not_found" {
		return true
	}
	m := strings.ToLower(ae.Message)
	return strings.Contains(m, "model") && (strings.Contains(m, "does not exist") || strings.Contains(m, "not found"))
}

// malformed checks a reply that decoded without error for what go-openai lets through
// as an empty completion (see emptyReply). Such a reply is an *APIError of type
// invalid_response, which the retry decorator retries and the meter counts as failed,
// never a completion that is cached and acted on. The body is read as the transport
// captured it; a body longer than the capture is checked for choices only.
func (o *OpenAI) malformed(seen *capture, resp Response, chat bool) *APIError {
	status, _, body, readErr := seen.result()
	if readErr != nil || len(body) >= captureMax {
		body = nil
	}
	what := emptyReply(body, resp, chat)
	if what == "" {
		return nil
	}
	return &APIError{Status: status, Type: typeInvalidResponse, Body: snippet(o.scrub(string(body)), 2048),
		Message: fmt.Sprintf("server returned a reply with %s (status %d): %s", what, status, snippet(o.scrub(string(body)), 120))}
}

// emptyReply names what a decoded reply lacks, or is empty when it holds a completion:
// a body of null or {}, no choices, a null choice, and a choice without its text
// (completions) or message content (chat), or with it null, a message with tool calls
// excepted, and one with only reasoning. body is the raw reply; nil checks resp's choices only.
func emptyReply(body []byte, resp Response, chat bool) string {
	if len(resp.Choices) == 0 {
		return "no choices"
	}
	// A choice whose text (or message content) decoded non-empty was neither null nor
	// held a null or missing text: when every choice has one, the body need not be
	// decoded a second time (3% of a call's CPU in BenchmarkCallCPU).
	full := true
	for _, c := range resp.Choices {
		full = full && c.Text != ""
	}
	if full {
		return ""
	}
	var shape struct {
		Choices []*struct {
			Text    *string `json:"text"`
			Message *struct {
				Content          *string         `json:"content"`
				ToolCalls        json.RawMessage `json:"tool_calls"`
				Reasoning        *string         `json:"reasoning"`
				ReasoningContent *string         `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if body == nil || json.Unmarshal(body, &shape) != nil {
		return "" // go-openai read it; a shape this check does not know is not refused
	}
	for i, c := range shape.Choices {
		switch {
		case c == nil:
			return fmt.Sprintf("choice %d null", i)
		case chat && c.Message == nil:
			return fmt.Sprintf("choice %d holding no message", i)
		case chat && c.Message.Content == nil && (len(c.Message.ToolCalls) == 0 || string(c.Message.ToolCalls) == "null") &&
			!nonEmpty(c.Message.Reasoning) && !nonEmpty(c.Message.ReasoningContent):
			// A reasoning model cut short while it thought sends its reasoning and no
			// content: a completion, not a malformed reply.
			return fmt.Sprintf("choice %d's message content null", i)
		case !chat && c.Text == nil:
			return fmt.Sprintf("choice %d holding no text", i)
		}
	}
	return ""
}

func nonEmpty(s *string) bool { return s != nil && *s != "" }

var titleRE = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

// mapError turns go-openai's and the transport's errors into an *APIError or a wrapped
// transport error, with the key removed from every text.
func (o *OpenAI) mapError(parent context.Context, seen *capture, err error) error {
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("llm request to %s: %w", o.baseURL, perr)
	}
	if errors.Is(err, ErrResponseTooLarge) {
		return redactErr(fmt.Errorf("llm request to %s: %w (the most reactgen reads of a response to this request)", o.baseURL, err), o.secrets...)
	}
	status, header, body, readErr := seen.result()
	var oe *openai.APIError
	var re *openai.RequestError
	switch {
	case errors.As(err, &re):
		// First: go-openai wraps a half-decoded *openai.APIError (status 0) in a
		// RequestError when the body's error field is not an object.
		if len(re.Body) > 0 {
			body = re.Body
		}
		ae, ok := o.looseError(re.HTTPStatusCode, body)
		if !ok {
			ae = o.unreadable(re.HTTPStatusCode, header, body)
		}
		ae.RetryAfter = retry.ParseAfter(header.Get("Retry-After"), time.Now())
		return ae
	case errors.As(err, &oe):
		ae := &APIError{
			Status: oe.HTTPStatusCode, Type: oe.Type, Message: o.scrub(oe.Message),
			RetryAfter: retry.ParseAfter(header.Get("Retry-After"), time.Now()), Body: snippet(o.scrub(string(body)), 2048),
		}
		switch code := oe.Code.(type) {
		case string:
			ae.Code = code
		case int: // go-openai decodes "code": null as 0
			if code != 0 {
				ae.Code = fmt.Sprint(code)
			}
		}
		return ae
	case status != 0 && readErr == nil && isDecodeError(err):
		// The whole body arrived but it is not a completion.
		return o.unreadable(status, header, body)
	}
	if errors.Is(err, context.DeadlineExceeded) && o.timeout > 0 {
		return redactErr(fmt.Errorf("llm request to %s: timed out after %s: %w", o.baseURL, o.timeout, err), o.secrets...)
	}
	if status != 0 && readErr != nil {
		return redactErr(fmt.Errorf("llm request to %s: connection closed mid-response (status %d): %w", o.baseURL, status, err), o.secrets...)
	}
	return redactErr(fmt.Errorf("llm request to %s: %w", o.baseURL, err), o.secrets...)
}

// looseError reads the error bodies of servers that do not use OpenAI's nesting: vLLM's
// flat {"object":"error","message":...,"type":...,"code":404}, TGI's
// {"error":"...","error_type":"..."} and FastAPI's {"detail":"..."}.
func (o *OpenAI) looseError(status int, body []byte) (*APIError, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil, false
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			var v string
			if json.Unmarshal(m[k], &v) == nil && v != "" {
				return v
			}
		}
		return ""
	}
	msg := str("message", "error", "detail")
	if msg == "" {
		return nil, false
	}
	ae := &APIError{Status: status, Type: str("type", "error_type"), Message: o.scrub(msg), Body: snippet(o.scrub(string(body)), 2048)}
	if code := str("code"); code != "" {
		ae.Code = code
	}
	return ae, true
}

func isDecodeError(err error) bool {
	var se *json.SyntaxError
	var ue *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// unreadable describes a body that is not OpenAI's JSON.
func (o *OpenAI) unreadable(status int, header http.Header, body []byte) *APIError {
	ae := &APIError{Status: status, Type: typeInvalidResponse, Body: snippet(o.scrub(string(body)), 2048)}
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	trimmed := bytes.TrimSpace(body)
	switch {
	case ct == "text/html" || bytes.HasPrefix(trimmed, []byte("<")):
		what := "<no title>"
		if m := titleRE.FindSubmatch(body); m != nil {
			what = "<title>" + strings.TrimSpace(string(m[1])) + "</title>"
		}
		ae.Message = fmt.Sprintf("server returned an HTML page (status %d), not JSON: %s", status, what)
	case len(trimmed) == 0:
		ae.Message = fmt.Sprintf("server returned an empty body (status %d), not JSON", status)
	default:
		ae.Message = fmt.Sprintf("server returned invalid JSON (status %d): %s", status, snippet(o.scrub(string(body)), 120))
	}
	ae.Message = o.scrub(ae.Message)
	return ae
}

func (o *OpenAI) scrub(s string) string { return scrubSecrets(s, o.secrets) }

// scrubResponse removes the secrets from what a server answered, before anything (the
// response cache, the episode log) stores it: a server may echo a header back.
func (o *OpenAI) scrubResponse(resp *Response) { scrubResponse(resp, o.secrets) }

func snippet(b string, n int) string {
	s := strings.ToValidUTF8(b, "?")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
