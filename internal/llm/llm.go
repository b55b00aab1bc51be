// Package llm is reactgen's model client: a small Client interface, the OpenAI-compatible
// adapter built on go-openai (chat and legacy completions), and the decorators that wrap
// any Client (retries, rate limits, concurrency, budget, on-disk response cache). It
// consumes a Request (chat messages or a completion prompt, with its sampling settings
// and tools) and produces a Response (its choices, token usage, cost and latency), or a
// typed error (*APIError) a caller can act on. The adapter's go-openai client is built by
// llm/openaiclient, the one construction finetune's client shares (origin pinning,
// header checks, base URL handling).
package llm

import (
	"context"
	"encoding/json"
	"time"
)

// Message is one chat turn. Its JSON is OpenAI's wire form of a message.
type Message struct {
	Role    string `json:"role"` // system, user, assistant, tool
	Content string `json:"content"`
	// ToolCalls are the function calls of an assistant turn (generate.format tools).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is, in a tool turn, the id of the call whose result Content is.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is, in a tool turn, the function whose result it is: sent only where the
	// layout a model was trained on had it (hf-tools rows; generate.prompting trained).
	Name string `json:"name,omitempty"`
}

// ToolCall is one function call a model made, in OpenAI's wire form.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is a ToolCall's function: its name and its arguments, a JSON text as the
// model wrote it (not necessarily valid JSON).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one function the model may call, in OpenAI's wire form.
type Tool struct {
	Type     string      `json:"type"` // "function"
	Function FunctionDef `json:"function"`
}

// FunctionDef declares a function: its name, what it does and a JSON Schema of its
// arguments, sent as it is.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model request. Exactly one of Prompt (the completions endpoint) and
// Messages (the chat endpoint) is set.
type Request struct {
	Model       string    `json:"model"`
	Prompt      string    `json:"prompt,omitempty"`
	Messages    []Message `json:"messages,omitempty"`
	Temperature float64   `json:"temperature"`
	TopP        float64   `json:"top_p,omitempty"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Stop        []string  `json:"stop,omitempty"`
	Seed        *int      `json:"seed,omitempty"`
	N           int       `json:"n,omitempty"`
	// Tools are the functions the model may call (chat only). They are part of the
	// request, and so of the cache key.
	Tools []Tool `json:"tools,omitempty"`
	// Attempt distinguishes sampled requests that are otherwise identical, so that the
	// cache keeps one response per attempt. It is not sent to the server.
	Attempt int `json:"attempt,omitempty"`
	// Logprobs asks for the log-probability of every completion token (llm.logprobs):
	// logprobs true on the chat endpoint, logprobs 0 on the completions endpoint (the
	// sampled token's only). False sends nothing, so the request and its cache key are
	// what they were without the key.
	Logprobs bool `json:"logprobs,omitempty"`
	// TokenIDs asks a vLLM server for the prompt's and the completion's token ids
	// (llm.token_ids: its return_token_ids field, which OpenAI's API refuses).
	TokenIDs bool `json:"token_ids,omitempty"`
}

// Choice is one returned completion.
type Choice struct {
	Text         string
	FinishReason string
	// ToolCalls are the function calls of a chat reply to a request with Tools.
	ToolCalls []ToolCall `json:",omitempty"`
	// Reasoning is the reasoning text a server returns beside the content: the message's
	// reasoning (vLLM since January 2026, OpenRouter) or reasoning_content (DeepSeek,
	// SGLang, older vLLM), or a leading <think>…</think> block of the text when
	// WithThinkTags splits it off.
	Reasoning string `json:",omitempty"`
	// Logprobs are the log-probabilities of the completion's tokens, in order (only for a
	// request with Logprobs, from a server that returns them).
	Logprobs []float64 `json:",omitempty"`
	// TokenIDs are the completion's token ids (a request with TokenIDs, to vLLM).
	TokenIDs []int64 `json:",omitempty"`
}

// Usage counts the tokens of one response.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	// CachedPromptTokens are the prompt tokens the server read from its prompt cache
	// (usage.prompt_tokens_details.cached_tokens); they are part of PromptTokens.
	CachedPromptTokens int `json:",omitempty"`
}

// Response is a model's answer to one Request.
type Response struct {
	Choices []Choice
	Usage   Usage
	Model   string
	Latency time.Duration // wall time including retries
	Retries int
	Cached  bool
	CostUSD float64
	// CacheSavingUSD is what the server's prompt cache saved on this response: priced
	// without it, the response would have cost CostUSD + CacheSavingUSD.
	CacheSavingUSD float64
	// Priced says CostUSD and CacheSavingUSD are set (by a pool endpoint with prices of
	// its own), so that the budget does not price the response again.
	Priced bool
	// Unpriced says no price table named the model: CostUSD is 0 because the cost is
	// unknown, not because the response was free.
	Unpriced bool
	// Endpoint names the pool endpoint that served the response; empty outside a pool.
	Endpoint string
	// PromptTokenIDs are the prompt's token ids (a request with TokenIDs, to vLLM).
	PromptTokenIDs []int64 `json:",omitempty"`
}

// Client sends one request and waits for its response.
//
// Implementations are safe for concurrent use. Complete blocks until a response, an error
// or ctx ends. A Response with no error has at least one Choice (its Text may be empty).
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// UnpricedCalls is 1 for a response the server charged for (not a cached one) whose
// model had no price, else 0: what pipeline.Usage.UnpricedCalls counts.
func (r Response) UnpricedCalls() int {
	if r.Unpriced && !r.Cached {
		return 1
	}
	return 0
}
