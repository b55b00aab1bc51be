package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/reactgen/reactgen/internal/origin"
	"github.com/reactgen/reactgen/internal/redact"
	"github.com/reactgen/reactgen/internal/retry"
)

// ErrBudget is returned by a budgeted client once a limit of its Budget is reached; the
// request was not sent (the error is also ErrNotSent).
var ErrBudget = errors.New("llm budget exhausted")

// ErrNotSent marks the error of a request that never left this process: refused by a
// spent budget (ErrBudget) or by go-openai before it sent anything (a model it refuses on
// the endpoint, a parameter it refuses for a reasoning model). Such a request is no
// request: it is not counted as one (pipeline.Call.NotSent).
var ErrNotSent = errors.New("request not sent")

// notSent is err marked with ErrNotSent; its text is err's.
type notSent struct{ err error }

func (e notSent) Error() string   { return e.err.Error() }
func (e notSent) Unwrap() []error { return []error{e.err, ErrNotSent} }

// markNotSent marks err as the error of a request that was not sent.
func markNotSent(err error) error {
	if err == nil || errors.Is(err, ErrNotSent) {
		return err
	}
	return notSent{err}
}

// ErrUnusable is returned by WithBreaker once the first requests of a run have all failed
// and none ever succeeded: the server, model or key is wrong. It wraps the last error.
var ErrUnusable = errors.New("model server unusable")

// ErrToolsUnsupported is returned for a request with tools that the server refused
// because of them: a 4xx (or a 500 or 501, as llama.cpp without --jinja answers) whose
// message is about tools, such as vLLM's "auto" tool choice requires
// --enable-auto-tool-choice, Ollama's "does not support tools" or OpenAI's "tools is not
// supported with this model". It wraps the server's *APIError. Retrying does not help.
var ErrToolsUnsupported = errors.New("the model server refused the request's tools")

// toolsError is ErrToolsUnsupported with the server's answer.
type toolsError struct{ err error }

func (e *toolsError) Error() string   { return ErrToolsUnsupported.Error() + ": " + e.err.Error() }
func (e *toolsError) Unwrap() []error { return []error{ErrToolsUnsupported, e.err} }

// refusesTools reports whether err is a server's refusal of a request's tools.
func refusesTools(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch {
	case ae.Status == http.StatusTooManyRequests, ae.Status == http.StatusUnauthorized, ae.Status == http.StatusForbidden:
		return false
	case ae.Status >= 400 && ae.Status < 500, ae.Status == http.StatusInternalServerError, ae.Status == http.StatusNotImplemented:
		return strings.Contains(strings.ToLower(ae.Message), "tool")
	}
	return false
}

// APIError is an answer from the model server that is not a completion: an HTTP error
// status with OpenAI's error JSON, or a body that is not JSON at all (an HTML page from a
// proxy, a truncated document). It never holds the API key.
type APIError struct {
	Status     int    // HTTP status; 200 for an unreadable 200 body
	Code       string // OpenAI's error code, e.g. model_not_found, invalid_api_key
	Type       string // OpenAI's error type; "invalid_response" for HTML or invalid JSON
	Message    string
	RetryAfter time.Duration // from the Retry-After header; 0 when absent
	Body       string        // the start of the response body
}

// typeInvalidResponse marks an APIError whose body could not be read as OpenAI's JSON.
const typeInvalidResponse = "invalid_response"

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model server status %d", e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// IsRetryable reports whether sending the same request again may succeed: rate limits
// (429), 408, 409, server errors (5xx), unreadable bodies (HTML or invalid JSON) outside
// 4xx, timeouts, and connections refused, reset, closed mid-body or closed while idle. Client errors (400,
// 401, 403, 404 such as model_not_found), ErrBudget, ErrUnusable, ErrRetriesExhausted
// (retrying again would not help), ErrToolsUnsupported, ErrResponseTooLarge, a redirect to
// another host (origin.ErrRedirect) and a
// cancelled context are not.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, ErrBudget) || errors.Is(err, ErrUnusable) || errors.Is(err, context.Canceled) ||
		errors.Is(err, ErrRetriesExhausted) || errors.Is(err, ErrToolsUnsupported) || errors.Is(err, ErrResponseTooLarge) ||
		errors.Is(err, origin.ErrRedirect) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		switch {
		case retry.TransientStatus(ae.Status):
			return true
		case ae.Status >= 400:
			return false
		default: // 0 or 2xx with a body that could not be read
			return true
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	// net/http's error for a request written to a kept-alive connection that the server
	// closed (it retries that itself only for idempotent requests, and these are POSTs)
	// has no exported value to compare with.
	if strings.Contains(err.Error(), "server closed idle connection") {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// redactedError carries an error whose text had the API key removed; it still unwraps to
// the original so that errors.Is and errors.As see through it.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr removes the secrets (and the user information of any URL) from err's text,
// keeping the chain.
func redactErr(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := redact.URL(scrubSecrets(err.Error(), secrets))
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}
