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
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// FreeAddr is a loopback host:port that nothing listens on when it returns: the address
// of a server that is down, or one a child process is told to listen on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
