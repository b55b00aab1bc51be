package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/reactgen/reactgen/internal/llm/openaiclient"
	"github.com/reactgen/reactgen/internal/retry"
	"github.com/reactgen/reactgen/pipeline"
)

// OpenAIOptions configures the OpenAI-compatible adapter. Its String method redacts the
// key, so printing the options is safe.
type OpenAIOptions struct {
	// BaseURL includes the /v1 suffix, e.g. https://api.openai.com/v1 or
	// http://localhost:8000/v1 (vLLM); see docs/servers.md. Empty means OpenAI's.
	BaseURL string
	APIKey  string // sent as "Authorization: Bearer ..."; may be empty for local servers
	// KeyEnv names the environment variable APIKey was read from, so that a 401 can say
	// which variable to fix; empty names none.
	KeyEnv string
	// BaseURLKey is the config key that set BaseURL, named when a server redirects to
	// another host (refused, see package origin); empty means llm.base_url.
	BaseURLKey string
	Headers    map[string]string // extra headers sent with every request; checked by NewOpenAI
	Timeout    time.Duration     // per request (one attempt); 0 means none beyond ctx
	// HTTPClient is used for the requests (its Transport is wrapped, the value is not
	// changed); nil means a client of its own.
	HTTPClient *http.Client
}

// String describes the options with the key redacted.
func (o OpenAIOptions) String() string {
	key := ""
	if o.APIKey != "" {
		key = "[redacted]"
	}
	names := make([]string, 0, len(o.Headers))
	for k := range o.Headers {
		names = append(names, k)
	}
	return fmt.Sprintf("OpenAIOptions{BaseURL:%s APIKey:%s Headers:%v Timeout:%s}", pipeline.RedactURL(o.BaseURL), key, names, o.Timeout)
}

// GoString is String, so that %#v redacts the key too.
func (o OpenAIOptions) GoString() string { return o.String() }

// OpenAI is a Client for any server that speaks OpenAI's chat or legacy completions API.
// A Request with Messages goes to /chat/completions, one with Prompt to /completions.
//
// go-openai omits a zero temperature from the JSON it sends, which servers then read as
// their default (1.0 on OpenAI, often 0.7 or 0.8 elsewhere): greedy decoding would
// silently sample. The adapter's transport therefore adds "temperature": 0 to every
// request body that lacks it (except for reasoning models, which reject any value but 1).
type OpenAI struct {
	client  *openai.Client
	baseURL string // for messages: the user information of the URL redacted
	key     string
	secrets []string // the key, the configured header values and the URL's user information
	keyEnv  string
	timeout time.Duration
}

var _ Client = (*OpenAI)(nil)

// NewOpenAI builds the adapter. It sends nothing.
func NewOpenAI(opts OpenAIOptions) (*OpenAI, error) {
	client, _, base, err := openaiclient.New(openaiclient.Options{Name: "llm", BaseURL: opts.BaseURL,
		BaseURLKey: cmp.Or(opts.BaseURLKey, "llm.base_url"), APIKey: opts.APIKey, Headers: opts.Headers, HTTPClient: opts.HTTPClient,
		Check: func(base string) error {
			if strings.HasSuffix(base, "/chat/completions") || strings.HasSuffix(base, "/completions") {
				return fmt.Errorf("llm base url %q: give the API root (ending in /v1), not an endpoint", pipeline.RedactURL(base))
			}
			if opts.Timeout < 0 {
				return fmt.Errorf("llm timeout %s: must not be negative", opts.Timeout)
			}
			return nil
		},
		Transport: func(pinned http.RoundTripper, headers http.Header) http.RoundTripper {
			return &wire{base: pinned, headers: headers}
		}})
	if err != nil {
		return nil, err
	}
	return &OpenAI{client: client, baseURL: pipeline.RedactURL(base), key: opts.APIKey, keyEnv: opts.KeyEnv,
		secrets: secretsOf(opts.APIKey, base, opts.Headers), timeout: opts.Timeout}, nil
}

// minSecret is the shortest header value treated as a secret in what a server sends
// back: a shorter one ("1", "json") is no credential, and hiding it would garble text.
const minSecret = 8

// secretsOf lists what must never be written or printed: the key, every configured
// header value of minSecret bytes or more, and the user and password of the base URL.
func secretsOf(key, base string, headers map[string]string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= minSecret && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if key != "" {
		out = append(out, key)
	}
	for _, v := range headers {
		add(v)
		if _, cred, ok := strings.Cut(v, " "); ok { // "Basic dXNlcjpwYXNz", "Bearer ..."
			add(cred)
		}
	}
	for _, s := range pipeline.URLSecrets(base) {
		add(s)
	}
	return out
}

// String describes the client without its key.
func (o *OpenAI) String() string { return "llm.OpenAI{" + o.baseURL + "}" }

// GoString is String, so that %#v redacts the key too.
func (o *OpenAI) GoString() string { return o.String() }

// Format prints the client the same way for every verb, so no verb reaches the key.
func (o *OpenAI) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, o.String()) }

// isReasoningModel reports models that accept neither max_tokens nor a temperature other
// than 1 (OpenAI's o-series and gpt-5).
func isReasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// Complete sends req to the chat or completions endpoint.
func (o *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	if (req.Prompt == "") == (len(req.Messages) == 0) {
		return Response{}, errors.New("llm request: exactly one of prompt and messages must be set")
	}
	start := time.Now()
	// A chat reply may carry its reasoning in a field go-openai does not read, and token
	// ids and exact log-probabilities are read from the body too: keep all of it then.
	seen := &capture{keepTemperatureOut: isReasoningModel(req.Model), limit: MaxResponseBytes(req.N, req.MaxTokens),
		keepAll: len(req.Messages) > 0 || req.Logprobs || req.TokenIDs, tokenIDs: req.TokenIDs}
	actx := context.WithValue(ctx, captureKey{}, seen)
	if o.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(actx, o.timeout)
		defer cancel()
	}
	var resp Response
	var err error
	if len(req.Messages) > 0 {
		resp, err = o.chat(actx, req)
	} else {
		resp, err = o.completion(actx, req)
	}
	if err != nil {
		err = o.hint(o.mapError(ctx, seen, err), req)
		if len(req.Tools) > 0 && refusesTools(err) {
			err = &toolsError{err: err}
		}
		seen.mu.Lock()
		sent := seen.sent
		seen.mu.Unlock()
		if !sent {
			err = markNotSent(err) // go-openai refused it, or the context ended first
		}
		return Response{}, err
	}
	if ae := o.malformed(seen, resp, len(req.Messages) > 0); ae != nil {
		return Response{}, ae
	}
	seen.mu.Lock()
	all := seen.all
	seen.all = nil
	seen.mu.Unlock()
	readExtras(all, &resp, req)
	// A server that ignores max_tokens must not fill the run with megabytes: the text is
	// cut at a generous bound for the requested tokens and reported as cut; a reply with
	// more tool calls than any step makes is refused.
	if err := boundReply(&resp, req.MaxTokens); err != nil {
		return Response{}, redact(fmt.Errorf("llm request to %s: %w", o.baseURL, err), o.secrets...)
	}
	o.scrubResponse(&resp)
	if resp.Model == "" {
		resp.Model = req.Model
	}
	resp.Latency = time.Since(start)
	return resp, nil
}

func (o *OpenAI) chat(ctx context.Context, req Request) (Response, error) {
	r, err := o.client.CreateChatCompletion(ctx, chatRequest(req))
	if err != nil {
		return Response{}, err
	}
	return chatResponse(r), nil
}

// chatRequest is req as go-openai sends it to the chat endpoint, online or in a batch.
func chatRequest(req Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, tc := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, openai.ToolCall{
				ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
			})
		}
	}
	cr := openai.ChatCompletionRequest{
		Model: req.Model, Messages: msgs, Temperature: float32(req.Temperature), TopP: float32(req.TopP),
		Stop: req.Stop, Seed: req.Seed, N: req.N, LogProbs: req.Logprobs,
	}
	for _, t := range req.Tools {
		cr.Tools = append(cr.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters,
		}})
	}
	if isReasoningModel(req.Model) {
		cr.MaxCompletionTokens = req.MaxTokens
	} else {
		//lint:ignore SA1019 max_tokens is what OpenAI-compatible servers (vLLM, llama.cpp, TGI) read; max_completion_tokens goes to reasoning models above
		cr.MaxTokens = req.MaxTokens
	}
	return cr
}

// chatResponse reads a chat completion: each choice's content, finish reason, tool calls
// and reasoning.
func chatResponse(r openai.ChatCompletionResponse) Response {
	out := Response{Model: r.Model, Usage: usage(r.Usage)}
	for _, c := range r.Choices {
		ch := Choice{Text: c.Message.Content, FinishReason: string(c.FinishReason), Reasoning: c.Message.ReasoningContent}
		for _, tc := range c.Message.ToolCalls {
			ch.ToolCalls = append(ch.ToolCalls, ToolCall{
				ID: tc.ID, Type: string(tc.Type), Function: FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
			})
		}
		out.Choices = append(out.Choices, ch)
	}
	return out
}

func (o *OpenAI) completion(ctx context.Context, req Request) (Response, error) {
	r, err := o.client.CreateCompletion(ctx, completionRequest(req))
	if err != nil {
		if errors.Is(err, openai.ErrCompletionUnsupportedModel) {
			return Response{}, fmt.Errorf("model %s has no legacy completions endpoint (use generate.format chat): %w", req.Model, err)
		}
		return Response{}, err
	}
	out := Response{Model: r.Model}
	if r.Usage != nil { // a server may leave usage out
		out.Usage = usage(*r.Usage)
	}
	for _, c := range r.Choices {
		out.Choices = append(out.Choices, Choice{Text: c.Text, FinishReason: c.FinishReason})
	}
	return out, nil
}

// completionRequest is req as go-openai sends it to the completions endpoint, online or
// in a batch. Logprobs asks for logprobs 1: go-openai leaves a 0 out of the body, and 1
// returns the sampled token's log-probability (beside the one most likely token).
func completionRequest(req Request) openai.CompletionRequest {
	cr := openai.CompletionRequest{
		Model: req.Model, Prompt: req.Prompt, Temperature: float32(req.Temperature), TopP: float32(req.TopP),
		MaxTokens: req.MaxTokens, Stop: req.Stop, Seed: req.Seed, N: req.N,
	}
	if req.Logprobs {
		cr.LogProbs = 1
	}
	return cr
}

// usage reads a response's usage, with the prompt tokens served from the server's prompt
// cache when it reports them.
func usage(u openai.Usage) Usage {
	out := Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedPromptTokens = min(max(d.CachedTokens, 0), u.PromptTokens)
	}
	return out
}

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
		return redact(fmt.Errorf("llm request to %s: %w (the most reactgen reads of a response to this request)", o.baseURL, err), o.secrets...)
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
		return redact(fmt.Errorf("llm request to %s: timed out after %s: %w", o.baseURL, o.timeout, err), o.secrets...)
	}
	if status != 0 && readErr != nil {
		return redact(fmt.Errorf("llm request to %s: connection closed mid-response (status %d): %w", o.baseURL, status, err), o.secrets...)
	}
	return redact(fmt.Errorf("llm request to %s: %w", o.baseURL, err), o.secrets...)
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

// captureKey carries a *capture through the request context to the transport.
type captureKey struct{}

// capture is what the transport saw of one response: go-openai drops the headers and,
// for a 2xx, the body of a response it fails to decode.
type capture struct {
	keepTemperatureOut bool
	limit              int64 // the most bytes read of the response body (0: no bound)
	keepAll            bool  // keep the whole body in all, for readExtras
	tokenIDs           bool  // send return_token_ids: true (vLLM)

	mu      sync.Mutex
	status  int
	header  http.Header
	body    []byte
	all     []byte // the whole body, with keepAll
	readErr error
	sent    bool // the transport was asked to send the request
}

const captureMax = 8 << 10

func (c *capture) result() (int, http.Header, []byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.header
	if h == nil {
		h = http.Header{}
	}
	return c.status, h, c.body, c.readErr
}

// wire is the adapter's transport: it adds the configured headers, sends temperature 0
// explicitly, and records the response for error reporting.
type wire struct {
	base    http.RoundTripper
	headers http.Header
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	seen, _ := req.Context().Value(captureKey{}).(*capture)
	if seen != nil {
		seen.mu.Lock()
		seen.sent = true
		seen.mu.Unlock()
	}
	// A shallow copy leaves the caller's request as it was; its header map is copied only
	// when there are headers to add.
	cp := *req
	req = &cp
	if len(w.headers) > 0 {
		req.Header = req.Header.Clone()
		for k, v := range w.headers {
			req.Header[k] = v
		}
	}
	// Only completion requests get a temperature: a file upload or a batch does not.
	completion := strings.HasSuffix(req.URL.Path, "/completions")
	addTemperature := seen == nil || !seen.keepTemperatureOut
	addTokenIDs := seen != nil && seen.tokenIDs
	if req.Body != nil && req.Method == http.MethodPost && completion && (addTemperature || addTokenIDs) {
		// Read with room in front for the temperature key, so that adding it copies
		// nothing (the body is as large as the prompt).
		buf, room, err := readAll(req.Body, req.ContentLength, temperatureRoom)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		b := buf[room:]
		if addTemperature {
			b = withTemperatureIn(buf, room)
		}
		if addTokenIDs {
			b = withTokenIDs(b)
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.ContentLength = int64(len(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := w.base.RoundTrip(req)
	if err != nil || seen == nil {
		return resp, err
	}
	seen.mu.Lock()
	seen.status, seen.header = resp.StatusCode, resp.Header // read only, as go-openai does
	seen.mu.Unlock()
	body := resp.Body
	if seen.limit > 0 {
		body = &boundedBody{rc: body, left: seen.limit}
	}
	resp.Body = &teeBody{rc: body, seen: seen}
	return resp, nil
}

// ErrResponseTooLarge is a response body over MaxResponseBytes: a server that ignores
// max_tokens, sends an endless body or a compression bomb. Retrying does not help.
var ErrResponseTooLarge = errors.New("response body too large")

// MaxResponseBytes bounds the body of a response to a request for n choices (0 means
// 1) of at most maxTokens tokens each: 4 MiB for the envelope (and for a completion that
// ignores max_tokens, which is cut to MaxCompletionBytes), plus six times
// MaxCompletionBytes per choice (JSON may escape a byte as six). The body is counted as
// decompressed, so a gzip bomb stops at the same bound.
func MaxResponseBytes(n, maxTokens int) int64 {
	return 4<<20 + int64(max(n, 1))*6*int64(MaxCompletionBytes(maxTokens))
}

// boundedBody fails a read past left bytes with ErrResponseTooLarge.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
	read int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if int64(n) > b.left {
		b.left = -1
		return 0, fmt.Errorf("%w: over %s", ErrResponseTooLarge, pipeline.FormatBytes(b.read-1))
	}
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// readAll reads a body of n bytes (-1 or 0: unknown) in one allocation when n is known.
// readAll reads a body of n bytes (n <= 0: unknown) into buf[room:], leaving buf[:room]
// free for the caller to write in front of it; with n unknown room is 0.
func readAll(r io.Reader, n int64, room int) (buf []byte, at int, err error) {
	if n <= 0 || n > 64<<20 {
		buf, err = io.ReadAll(r)
		return buf, 0, err
	}
	buf = make([]byte, int64(room)+n)
	if _, err := io.ReadFull(r, buf[room:]); err != nil {
		return nil, 0, err
	}
	return buf, room, nil
}

// temperatureRoom is the most withTemperatureIn writes in front of a body.
const temperatureRoom = len(`{"temperature":0,`)

// withTemperature adds "temperature":0 to a JSON object that has no temperature key.
//
// When the bytes hold no "temperature" string at all, no key can be named so (inside a
// JSON string a quote is escaped), and the key is written after the opening brace
// without decoding the body, which is what happens to every greedy request. Otherwise
// the object is decoded to find out.
func withTemperature(b []byte) []byte { return withTemperatureIn(b, 0) }

// withTemperatureIn is withTemperature of buf[room:], where the caller owns buf: with
// room > 0 the key is written over the bytes in front of the body's first key (the room,
// the opening brace and any space), so that nothing is copied.
func withTemperatureIn(buf []byte, room int) []byte {
	b := buf[room:]
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return b
	}
	if !bytes.Contains(t, []byte(`"temperature"`)) {
		rest := bytes.TrimLeft(t[1:], " \t\r\n")
		head := `{"temperature":0,`
		if len(rest) == 0 || rest[0] == '}' {
			head = `{"temperature":0`
		}
		if at := len(buf) - len(rest) - len(head); room > 0 && at >= 0 {
			copy(buf[at:], head)
			return buf[at:]
		}
		out := make([]byte, 0, len(rest)+len(head))
		out = append(out, head...)
		return append(out, rest...)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	if _, ok := m["temperature"]; ok {
		return b
	}
	m["temperature"] = json.RawMessage("0")
	out, err := json.Marshal(m)
	if err != nil {
		return b
	}
	return out
}

// teeBody keeps the start of a response body and any read error.
type teeBody struct {
	rc   io.ReadCloser
	seen *capture
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	t.seen.mu.Lock()
	if room := captureMax - len(t.seen.body); room > 0 {
		t.seen.body = append(t.seen.body, p[:min(n, room)]...)
	}
	if t.seen.keepAll {
		t.seen.all = append(t.seen.all, p[:n]...)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		t.seen.readErr = err
	}
	t.seen.mu.Unlock()
	return n, err
}

func (t *teeBody) Close() error { return t.rc.Close() }

// MaxCompletionBytes bounds the text kept from one completion: 16 bytes per requested
// token (far above any tokenizer's average), or 64 KiB when no max_tokens was asked.
func MaxCompletionBytes(maxTokens int) int {
	if maxTokens <= 0 {
		return 64 << 10
	}
	return max(16*maxTokens, 1024)
}
