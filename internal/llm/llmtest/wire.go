package llmtest

import (
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
)

// The wire format: request bodies decoded into a Req, and a Reply encoded as the
// endpoints' completion objects.

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

// completion is the reply to req: rep's texts (cut at req's stop sequences) as its
// choices, with the usage rep gives or estimated.
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
		var tokens int
		choices[i], tokens = s.choice(i, req, rep, texts[i%len(texts)])
		completionTokens += tokens
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

// choice is choice i of the reply to req, text cut at its stop sequences, and the
// completion tokens it holds: a chat message with rep's reasoning and tool calls, or a
// completion's text, with the logprobs and token ids req asked for.
func (s *Server) choice(i int, req Req, rep Reply, text string) (wireChoice, int) {
	text, stopped := Cut(text, req.Stop)
	tokens := estimate(text)
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
			tokens += estimate(tc.Function.Name) + estimate(tc.Function.Arguments)
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
	fake := FakeTokens(text)
	if req.Logprobs {
		c.Logprobs = fakeLogprobs(req.Endpoint == "chat", fake, rep.Logprobs)
	}
	if req.TokenIDs {
		c.TokenIDs = rep.TokenIDs
		if c.TokenIDs == nil {
			c.TokenIDs = FakeTokenIDs(fake)
		}
		if req.Endpoint != "chat" {
			c.PromptTokenIDs = promptIDs(req, rep)
		}
	}
	return c, tokens
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
