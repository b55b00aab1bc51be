// Package llm is reactgen's model client: a small Client interface, the OpenAI-compatible
// adapter built on go-openai (chat and legacy completions), and the decorators that wrap
// any Client (retries, rate limits, concurrency, budget, on-disk response cache).
package llm

import (
	"context"
	"time"
)

// Message is one chat turn.
type Message struct {
	Role    string `json:"role"` // system, user, assistant
	Content string `json:"content"`
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
	// Attempt distinguishes sampled requests that are otherwise identical, so that the
	// cache keeps one response per attempt. It is not sent to the server.
	Attempt int `json:"attempt,omitempty"`
}

// Choice is one returned completion.
type Choice struct {
	Text         string
	FinishReason string
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
	// Endpoint names the pool endpoint that served the response; empty outside a pool.
	Endpoint string
}

// Client sends one request and waits for its response.
//
// Implementations are safe for concurrent use. Complete blocks until a response, an error
// or ctx ends. A Response with no error has at least one Choice (its Text may be empty).
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}
