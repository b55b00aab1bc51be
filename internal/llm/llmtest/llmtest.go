// Package llmtest is a fake OpenAI-compatible server for tests. It consumes requests in
// OpenAI's wire format on /v1/chat/completions and /v1/completions (and, through the
// Files and Batches endpoints, batches of them; see batch.go), hands each one to a
// Handler as a decoded Req, and produces the Handler's Reply in the real wire format (ids,
// object, created, model, choices, usage), or one of the faults real servers show: rate
// limits, 5xx, timeouts, reset connections, HTML error pages, invalid JSON, unknown models
// and bad keys. It listens on 127.0.0.1 only and records every request it saw.
package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
)

// Fault is a failure the server shows instead of a normal reply.
type Fault int

// The faults. FaultNone is a normal reply.
const (
	FaultNone          Fault = iota
	Fault429                 // 429 rate_limit_exceeded, with Reply.RetryAfter as Retry-After when set
	Fault500                 // 500 server_error
	Fault503                 // 503 overloaded
	FaultTimeout             // sleep until the client gives up (ctx ends) or Reply.Delay (default 2 minutes)
	FaultReset               // 200 headers and half the body, then the connection is closed
	FaultHTML                // an HTML error page, content-type text/html; status Reply.Status or 502
	FaultInvalidJSON         // content-type application/json but a truncated body; status Reply.Status or 200
	FaultEmpty               // a normal completion whose text is empty
	FaultModelNotFound       // 404 model_not_found in OpenAI's error JSON
	FaultUnauthorized        // 401 invalid_api_key
	// FaultVLLMModelNotFound is vLLM's answer for a model it does not serve: 404 with
	// {"error": {"message": "The model `x` does not exist.", "type": "NotFoundError",
	// "param": "model", "code": 404}}, the code a number.
	FaultVLLMModelNotFound
)

var faultNames = map[Fault]string{
	FaultNone: "none", Fault429: "429", Fault500: "500", Fault503: "503", FaultTimeout: "timeout",
	FaultReset: "reset", FaultHTML: "html", FaultInvalidJSON: "invalid-json", FaultEmpty: "empty",
	FaultModelNotFound: "model-not-found", FaultUnauthorized: "unauthorized", FaultVLLMModelNotFound: "vllm-model-not-found",
}

// String names the fault for test names.
func (f Fault) String() string {
	if s, ok := faultNames[f]; ok {
		return s
	}
	return fmt.Sprintf("fault(%d)", int(f))
}

// Faults lists every fault except FaultNone, for table tests.
var Faults = []Fault{
	Fault429, Fault500, Fault503, FaultTimeout, FaultReset, FaultHTML, FaultInvalidJSON,
	FaultEmpty, FaultModelNotFound, FaultUnauthorized, FaultVLLMModelNotFound,
}

// Req is one decoded request.
type Req struct {
	Endpoint    string // "chat" or "completions"
	Model       string
	Prompt      string        // completions: the prompt (the first, if a list was sent)
	Messages    []llm.Message // chat
	Stop        []string
	Temperature float64
	TopP        float64
	N           int
	Seed        *int
	MaxTokens   int
	Tools       []llm.Tool // chat: the functions the model may call
	Header      http.Header
	Logprobs    bool // logprobs asked: true (chat) or a number (completions)
	TokenIDs    bool // return_token_ids: true (vLLM)
}

// Reply is what a Handler answers. The zero Reply is one empty choice with
// finish_reason "stop".
type Reply struct {
	Texts            []string // one per choice; padded cyclically up to the request's n
	FinishReason     string   // default "stop"; a stop sequence found in a text forces "stop"
	PromptTokens     int      // default: an estimate (prompt chars / 4)
	CachedTokens     int      // reported as usage.prompt_tokens_details.cached_tokens when set
	CompletionTokens int      // default: an estimate (completion chars / 4)
	Delay            time.Duration
	Fault            Fault
	RetryAfter       string // Retry-After header value (seconds or an HTTP date), with Fault429
	Status           int    // overrides the HTTP status (with Body, FaultHTML or FaultInvalidJSON)
	Body             string // when set (and no fault), sent verbatim as the response body
	// ToolCalls are the function calls of every choice (chat), sent with finish_reason
	// "tool_calls" unless FinishReason says otherwise and, when Texts are empty, content
	// null, as OpenAI sends them. A call without an ID gets one (call_fake_N).
	ToolCalls []llm.ToolCall
	// Reasoning is sent, when set, as the message's reasoning_content (chat), or under the
	// name ReasoningField gives: "reasoning", as vLLM sends it since January 2026.
	Reasoning      string
	ReasoningField string
	// Logprobs, TokenIDs and PromptTokenIDs override what the server answers a request
	// that asks for log-probabilities (Req.Logprobs) or token ids (Req.TokenIDs); unset,
	// they are derived from the texts: one fake token per 4 runes (FakeTokens).
	Logprobs       []float64
	TokenIDs       []int64
	PromptTokenIDs []int64
}

// Handler answers one request. It is called concurrently; ctx ends when the client goes away.
type Handler func(ctx context.Context, r Req) Reply

// Recorded is one request as the server received it.
type Recorded struct {
	Endpoint string         // "chat" or "completions"
	Req      Req            // decoded
	Body     map[string]any // the JSON body as sent: a key absent here was not sent
	Raw      []byte         // the body bytes
	Header   http.Header
}

// Server is a running fake. Its URL includes /v1.
type Server struct {
	URL  string
	srv  *httptest.Server
	h    Handler
	n    atomic.Int64
	mu   sync.Mutex
	log  []Recorded
	next atomic.Int64
	// calls numbers the tool calls that a Reply left without an id.
	calls atomic.Int64
	// noLog, set by DropLog, keeps the log empty.
	noLog atomic.Bool
	// nMode, set by IgnoreN or RejectN, is how the server treats n > 1.
	nMode atomic.Int32
	batch batches // the Files and Batches API (batch.go)
	// rejectTools, set by RejectTools, refuses every request with tools.
	rejectTools atomic.Bool
	// chatOnly, set by ChatOnly, makes /v1/completions an unknown path.
	chatOnly atomic.Bool
}

// ChatOnly makes the server one without the legacy completions endpoint, as many
// OpenAI-compatible servers and proxies are: /v1/completions answers 404 with OpenAI's
// "Invalid URL" error, as an unknown path does.
func (s *Server) ChatOnly() { s.chatOnly.Store(true) }

// RejectTools makes the server refuse every request with tools with the 400 that vLLM
// sends when it was started without tool calling.
func (s *Server) RejectTools() { s.rejectTools.Store(true) }

// How a Server treats n > 1 (see IgnoreN and RejectN).
const (
	nHonour int32 = iota
	nIgnore
	nReject
)

// IgnoreN makes the server answer every request as if n were not sent (as Ollama does):
// the handler sees N 0 and its texts are the choices. The log keeps the n that was sent.
func (s *Server) IgnoreN() { s.nMode.Store(nIgnore) }

// RejectN makes the server refuse n > 1 with a 400 that names the parameter, as OpenAI
// does for a value it does not allow.
func (s *Server) RejectN() { s.nMode.Store(nReject) }

// DropLog stops recording requests: Log returns only those that arrived before. A
// long benchmark or a memory measurement calls it so that the fake does not hold every
// request body.
func (s *Server) DropLog() { s.noLog.Store(true) }

// NewServer starts a fake on 127.0.0.1, closed by t.Cleanup.
func NewServer(t testing.TB, h Handler) *Server {
	t.Helper()
	s := &Server{h: h, batch: batches{files: map[string][]byte{}, byID: map[string]*batchRecord{}, pollsToFinish: 3}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// Kill stops the server as a crash would: the connections in flight are cut, and new
// ones are refused. The URL stays unusable.
func (s *Server) Kill() {
	s.srv.CloseClientConnections()
	s.srv.Listener.Close()
}

// Requests returns how many requests arrived, faults included.
func (s *Server) Requests() int64 { return s.n.Load() }

// Log returns a copy of every request received, in arrival order.
func (s *Server) Log() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.log {
		s.decodeBody(i)
	}
	return append([]Recorded(nil), s.log...)
}

// Last returns the last request received; ok is false when none came.
func (s *Server) Last() (Recorded, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.log) == 0 {
		return Recorded{}, false
	}
	s.decodeBody(len(s.log) - 1)
	return s.log[len(s.log)-1], true
}

// decodeBody fills the generic Body of log entry i. It is decoded when the log is read,
// not when the request arrives, so that a busy server does not decode every body twice.
// s.mu is held.
func (s *Server) decodeBody(i int) {
	if r := &s.log[i]; r.Body == nil {
		_ = json.Unmarshal(r.Raw, &r.Body)
	}
}

// wireRequest is the union of both endpoints' request bodies.
type wireRequest struct {
	Model       string          `json:"model"`
	Prompt      json.RawMessage `json:"prompt"`
	Messages    []llm.Message   `json:"messages"`
	Stop        json.RawMessage `json:"stop"`
	Temperature float64         `json:"temperature"`
	TopP        float64         `json:"top_p"`
	N           int             `json:"n"`
	Seed        *int            `json:"seed"`
	MaxTokens   int             `json:"max_tokens"`
	Tools       []llm.Tool      `json:"tools"`
	Logprobs    json.RawMessage `json:"logprobs"`
	TokenIDs    bool            `json:"return_token_ids"`
}

// decodeRequest reads a request body into a Req (without Endpoint and Header) with
// encoding/json, as OpenAI's servers read it: a body that is not a JSON object of these
// fields is an error. (A hand-written decoder here measured no gain on the scheduler
// benchmark it was written for: BENCHMARKS.md, "Codecs".)
func decodeRequest(raw []byte) (Req, error) {
	var wr wireRequest
	if err := json.Unmarshal(raw, &wr); err != nil {
		return Req{}, err
	}
	r := Req{
		Model: wr.Model, Messages: wr.Messages, Stop: stringOrList(wr.Stop),
		Temperature: wr.Temperature, TopP: wr.TopP, N: wr.N, Seed: wr.Seed, MaxTokens: wr.MaxTokens, Tools: wr.Tools,
		TokenIDs: wr.TokenIDs,
	}
	if lp := string(wr.Logprobs); lp != "" && lp != "null" && lp != "false" {
		r.Logprobs = true
	}
	if p := stringOrList(wr.Prompt); len(p) > 0 {
		r.Prompt = p[0]
	}
	return r, nil
}

// stringOrList decodes a JSON string or list of strings.
func stringOrList(raw json.RawMessage) []string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	return nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.serveBatch(w, r) {
		return
	}
	var endpoint string
	switch r.URL.Path {
	case "/v1/chat/completions":
		endpoint = "chat"
	case "/v1/completions":
		endpoint = "completions"
		if s.chatOnly.Load() {
			writeError(w, http.StatusNotFound, "Invalid URL ("+r.Method+" "+r.URL.Path+")", "invalid_request_error", "")
			return
		}
	default:
		writeError(w, http.StatusNotFound, "Invalid URL ("+r.Method+" "+r.URL.Path+")", "invalid_request_error", "")
		return
	}
	s.n.Add(1)
	raw, err := readBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "could not read body", "invalid_request_error", "")
		return
	}
	req, err := decodeRequest(raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.", "invalid_request_error", "")
		return
	}
	req.Endpoint = endpoint
	req.Header = r.Header // the server makes a new map for every request
	if !s.noLog.Load() {
		s.mu.Lock()
		s.log = append(s.log, Recorded{Endpoint: endpoint, Req: req, Raw: raw, Header: req.Header})
		s.mu.Unlock()
	}

	if req.N > 1 && s.nMode.Load() == nReject {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("%d is greater than the maximum of 1 - 'n'", req.N), "type": "invalid_request_error",
			"param": "n", "code": nil}})
		return
	}
	if len(req.Tools) > 0 && s.rejectTools.Load() {
		writeJSON(w, http.StatusBadRequest, map[string]any{"object": "error",
			"message": `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`,
			"type":    "BadRequestError", "param": nil, "code": http.StatusBadRequest})
		return
	}
	if s.nMode.Load() == nIgnore {
		req.N = 0
	}
	ctx := r.Context()
	rep := s.h(ctx, req)
	if rep.Delay > 0 && rep.Fault != FaultTimeout {
		if !sleep(ctx, rep.Delay) {
			return
		}
	}
	s.reply(ctx, w, req, rep)
}

// readBody reads the request body in one allocation when its length is known.
func readBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= 64<<20 {
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(r.Body)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func writeError(w http.ResponseWriter, status int, msg, typ, code string) {
	body := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		body["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

const htmlPage = `<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>fake-proxy</center>
</body>
</html>
`

func (s *Server) reply(ctx context.Context, w http.ResponseWriter, req Req, rep Reply) {
	switch rep.Fault {
	case Fault429:
		if rep.RetryAfter != "" {
			w.Header().Set("Retry-After", rep.RetryAfter)
		}
		writeError(w, http.StatusTooManyRequests, "Rate limit reached for requests on the fake server. Please try again later.", "requests", "rate_limit_exceeded")
		return
	case Fault500:
		writeError(w, http.StatusInternalServerError, "The server had an error while processing your request.", "server_error", "")
		return
	case Fault503:
		writeError(w, http.StatusServiceUnavailable, "The engine is currently overloaded, please try again later.", "server_error", "")
		return
	case FaultTimeout:
		d := rep.Delay
		if d <= 0 {
			d = 2 * time.Minute
		}
		if !sleep(ctx, d) {
			return
		}
		writeError(w, http.StatusGatewayTimeout, "the fake server timed out", "server_error", "timeout")
		return
	case FaultHTML:
		st := rep.Status
		if st == 0 {
			st = http.StatusBadGateway
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(st)
		_, _ = io.WriteString(w, htmlPage)
		return
	case FaultInvalidJSON:
		st := rep.Status
		if st == 0 {
			st = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		_, _ = io.WriteString(w, `{"id":"cmpl-broken","object":"text_completion","choices":[{"text":"Thought: I`)
		return
	case FaultModelNotFound:
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist", req.Model), "invalid_request_error", "model_not_found")
		return
	case FaultVLLMModelNotFound:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("The model `%s` does not exist.", req.Model), "type": "NotFoundError", "param": "model", "code": 404}})
		return
	case FaultUnauthorized:
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided. You can find your API key in your account settings.", "invalid_request_error", "invalid_api_key")
		return
	case FaultEmpty:
		rep.Texts = []string{""}
	}
	if rep.Body != "" {
		st := rep.Status
		if st == 0 {
			st = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		_, _ = io.WriteString(w, rep.Body)
		return
	}
	if rep.Status >= 400 {
		writeError(w, rep.Status, http.StatusText(rep.Status), "server_error", "")
		return
	}
	body := s.completion(req, rep)
	b, _ := json.Marshal(body)
	if rep.Fault == FaultReset {
		s.reset(w, b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// reset writes a full set of headers and half the body, then drops the connection.
func (s *Server) reset(w http.ResponseWriter, body []byte) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("llmtest: response writer cannot hijack")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	_, _ = buf.Write(body[:len(body)/2])
	_ = buf.Flush()
}

// Cut applies stop sequences the way servers do: the text ends before the earliest stop
// sequence, which is not included. found reports whether one occurred.
func Cut(text string, stop []string) (string, bool) {
	best := -1
	for _, s := range stop {
		if s == "" {
			continue
		}
		if i := strings.Index(text, s); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return text, false
	}
	return text[:best], true
}

func estimate(s string) int { return estimateLen(len(s)) }

func estimateLen(n int) int { return (n + 3) / 4 }

// The reply's wire types, in the field order OpenAI writes them. Structs, not maps:
// encoding/json writes a struct without sorting keys or boxing values, which keeps the
// fake cheap when hundreds of requests are in flight.
type (
	wireCompletion struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []wireChoice `json:"choices"`
		Usage   wireUsage    `json:"usage"`
		// PromptTokenIDs: vLLM's, on a chat reply to return_token_ids.
		PromptTokenIDs []int64 `json:"prompt_token_ids,omitempty"`
	}
	wireChoice struct {
		Index        int          `json:"index"`
		Message      *wireMessage `json:"message,omitempty"` // chat
		Text         *string      `json:"text,omitempty"`    // completions
		Logprobs     any          `json:"logprobs"`          // nil, *wireChatLogprobs or *wireTextLogprobs
		FinishReason string       `json:"finish_reason"`
		// vLLM's, to return_token_ids: token_ids on every choice, prompt_token_ids on a
		// completion's choice.
		TokenIDs       []int64 `json:"token_ids,omitempty"`
		PromptTokenIDs []int64 `json:"prompt_token_ids,omitempty"`
	}
	wireMessage struct {
		Role             string         `json:"role"`
		Content          *string        `json:"content"` // null: a reply of tool calls only
		Reasoning        string         `json:"reasoning,omitempty"`
		ReasoningContent string         `json:"reasoning_content,omitempty"`
		ToolCalls        []llm.ToolCall `json:"tool_calls,omitempty"`
	}
	// wireChatLogprobs is a chat choice's logprobs: one entry per token.
	wireChatLogprobs struct {
		Content []wireTokenLogprob `json:"content"`
		Refusal *string            `json:"refusal"`
	}
	wireTokenLogprob struct {
		Token       string  `json:"token"`
		Logprob     float64 `json:"logprob"`
		Bytes       []int   `json:"bytes"`
		TopLogprobs []any   `json:"top_logprobs"`
	}
	// wireTextLogprobs is a completion choice's logprobs, in the legacy layout.
	wireTextLogprobs struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
	wireUsage struct {
		PromptTokens        int                `json:"prompt_tokens"`
		CompletionTokens    int                `json:"completion_tokens"`
		TotalTokens         int                `json:"total_tokens"`
		PromptTokensDetails *wirePromptDetails `json:"prompt_tokens_details,omitempty"`
	}
	wirePromptDetails struct {
		CachedTokens int `json:"cached_tokens"`
	}
)

func (s *Server) completion(req Req, rep Reply) wireCompletion {
	texts := rep.Texts
	if len(texts) == 0 {
		texts = []string{""}
	}
	n := max(req.N, 1, len(texts))
	promptTokens := rep.PromptTokens
	if promptTokens == 0 {
		chars := len(req.Prompt)
		for _, m := range req.Messages {
			chars += len(m.Content)
		}
		promptTokens = estimateLen(chars)
	}
	completionTokens := 0
	choices := make([]wireChoice, n)
	for i := range n {
		text, stopped := Cut(texts[i%len(texts)], req.Stop)
		completionTokens += estimate(text)
		finish := rep.FinishReason
		if finish == "" || stopped {
			finish = "stop"
		}
		c := wireChoice{Index: i, FinishReason: finish}
		if req.Endpoint == "chat" {
			m := &wireMessage{Role: "assistant", Content: &text}
			if rep.ReasoningField == "reasoning" {
				m.Reasoning = rep.Reasoning
			} else {
				m.ReasoningContent = rep.Reasoning
			}
			for _, tc := range rep.ToolCalls {
				if tc.ID == "" {
					tc.ID = "call_fake_" + strconv.FormatInt(s.calls.Add(1), 10)
				}
				if tc.Type == "" {
					tc.Type = "function"
				}
				completionTokens += estimate(tc.Function.Name) + estimate(tc.Function.Arguments)
				m.ToolCalls = append(m.ToolCalls, tc)
			}
			if len(m.ToolCalls) > 0 {
				if rep.FinishReason == "" {
					c.FinishReason = "tool_calls"
				}
				if text == "" {
					m.Content = nil
				}
			}
			c.Message = m
		} else {
			c.Text = &text
		}
		tokens := FakeTokens(text)
		if req.Logprobs {
			c.Logprobs = fakeLogprobs(req.Endpoint == "chat", tokens, rep.Logprobs)
		}
		if req.TokenIDs {
			c.TokenIDs = rep.TokenIDs
			if c.TokenIDs == nil {
				c.TokenIDs = FakeTokenIDs(tokens)
			}
			if req.Endpoint != "chat" {
				c.PromptTokenIDs = promptIDs(req, rep)
			}
		}
		choices[i] = c
	}
	if rep.CompletionTokens != 0 {
		completionTokens = rep.CompletionTokens
	}
	u := wireUsage{PromptTokens: promptTokens, CompletionTokens: completionTokens, TotalTokens: promptTokens + completionTokens}
	if rep.CachedTokens > 0 {
		u.PromptTokensDetails = &wirePromptDetails{CachedTokens: rep.CachedTokens}
	}
	id := s.next.Add(1)
	object, prefix := "text_completion", "cmpl-fake-"
	if req.Endpoint == "chat" {
		object, prefix = "chat.completion", "chatcmpl-fake-"
	}
	out := wireCompletion{
		ID: prefix + strconv.FormatInt(id, 10), Object: object, Created: time.Now().Unix(), Model: req.Model,
		Choices: choices,
		Usage:   u,
	}
	if req.TokenIDs && req.Endpoint == "chat" {
		out.PromptTokenIDs = promptIDs(req, rep)
	}
	return out
}

// FakeTokens splits a text into the fake server's tokens: 4 runes each.
func FakeTokens(text string) []string {
	var out []string
	r := []rune(text)
	for i := 0; i < len(r); i += 4 {
		out = append(out, string(r[i:min(i+4, len(r))]))
	}
	return out
}

// FakeTokenIDs are the fake server's ids of tokens: an FNV-1a hash of each, below 151,936.
func FakeTokenIDs(tokens []string) []int64 {
	out := make([]int64, len(tokens))
	for i, t := range tokens {
		h := fnv.New32a()
		_, _ = h.Write([]byte(t))
		out[i] = int64(h.Sum32() % 151936)
	}
	return out
}

// FakeLogprob is the fake server's log-probability of the i-th token of a completion.
func FakeLogprob(i int) float64 { return -float64(i%7)/8 - 1.0/1024 }

// fakeLogprobs is a choice's logprobs object for tokens, with the given values or
// FakeLogprob's.
func fakeLogprobs(chat bool, tokens []string, values []float64) any {
	lp := func(i int) float64 {
		if values != nil {
			return values[i%len(values)]
		}
		return FakeLogprob(i)
	}
	if chat {
		out := &wireChatLogprobs{Content: []wireTokenLogprob{}}
		for i, t := range tokens {
			b := make([]int, len(t))
			for j := range len(t) {
				b[j] = int(t[j])
			}
			out.Content = append(out.Content, wireTokenLogprob{Token: t, Logprob: lp(i), Bytes: b, TopLogprobs: []any{}})
		}
		return out
	}
	out := &wireTextLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	off := 0
	for i, t := range tokens {
		out.Tokens = append(out.Tokens, t)
		out.TokenLogprobs = append(out.TokenLogprobs, lp(i))
		out.TopLogprobs = append(out.TopLogprobs, map[string]float64{t: lp(i)})
		out.TextOffset = append(out.TextOffset, off)
		off += len(t)
	}
	return out
}

// promptIDs are the prompt's token ids: the reply's, or the fake tokens of the prompt
// (the messages' contents joined).
func promptIDs(req Req, rep Reply) []int64 {
	if rep.PromptTokenIDs != nil {
		return rep.PromptTokenIDs
	}
	text := req.Prompt
	for _, m := range req.Messages {
		text += m.Content
	}
	return FakeTokenIDs(FakeTokens(text))
}

// Text is a Handler that always answers text.
func Text(text string) Handler {
	return func(context.Context, Req) Reply { return Reply{Texts: []string{text}} }
}

// Script answers with replies in order; the last one repeats.
func Script(replies ...Reply) Handler {
	var i atomic.Int64
	return func(context.Context, Req) Reply {
		if len(replies) == 0 {
			return Reply{}
		}
		k := int(i.Add(1) - 1)
		return replies[min(k, len(replies)-1)]
	}
}

// Faulty fails the first n requests with fault, then hands requests to then.
func Faulty(n int, fault Fault, then Handler) Handler {
	var i atomic.Int64
	return func(ctx context.Context, r Req) Reply {
		if int(i.Add(1)) <= n {
			return Reply{Fault: fault}
		}
		return then(ctx, r)
	}
}
