package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/reactgen/reactgen/internal/llm/openaiclient"
	"github.com/reactgen/reactgen/internal/redact"
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
	return fmt.Sprintf("OpenAIOptions{BaseURL:%s APIKey:%s Headers:%v Timeout:%s}", redact.URL(o.BaseURL), key, names, o.Timeout)
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
				return fmt.Errorf("llm base url %q: give the API root (ending in /v1), not an endpoint", redact.URL(base))
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
	return &OpenAI{client: client, baseURL: redact.URL(base), key: opts.APIKey, keyEnv: opts.KeyEnv,
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
	for _, s := range redact.URLSecrets(base) {
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
		keepAll: len(req.Messages) > 0 || req.Logprobs || req.TokenIDs, tokenIDs: req.TokenIDs,
		noTemperature: float32(req.Temperature) == 0 && len(req.Tools) == 0}
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
		return Response{}, redactErr(fmt.Errorf("llm request to %s: %w", o.baseURL, err), o.secrets...)
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
