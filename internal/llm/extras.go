package llm

import (
	"bytes"
	"encoding/json"
	"strings"
)

// wireExtras are the parts of a reply that go-openai does not read: the message's
// reasoning (vLLM since January 2026 sends the reasoning text only there, OpenRouter too;
// DeepSeek and SGLang send reasoning_content, which go-openai reads), the exact
// log-probabilities (go-openai reads a completion's as float32), and the token ids vLLM
// returns for return_token_ids: prompt_token_ids on the response and token_ids on each
// choice of a chat reply, both on each choice of a completion.
type wireExtras struct {
	PromptTokenIDs []int64 `json:"prompt_token_ids"`
	Choices        []struct {
		Message *struct {
			Reasoning        *string `json:"reasoning"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Logprob float64 `json:"logprob"`
			} `json:"content"` // chat
			TokenLogprobs []*float64 `json:"token_logprobs"` // completions
		} `json:"logprobs"`
		TokenIDs       []int64 `json:"token_ids"`
		PromptTokenIDs []int64 `json:"prompt_token_ids"` // completions
	} `json:"choices"`
}

// readExtras reads from a reply's body what go-openai left out of resp: the reasoning
// of a chat reply that carries it as reasoning (when reasoning_content was empty), and,
// when req asked for them, the log-probabilities and token ids. The choices are matched
// by position, as go-openai decoded them. A body that is not such JSON changes nothing:
// go-openai has already read it.
func readExtras(body []byte, resp *Response, req Request) {
	chat := len(req.Messages) > 0
	if len(body) == 0 || !(req.Logprobs || req.TokenIDs || chat && bytes.Contains(body, []byte(`"reasoning`))) {
		return
	}
	var x wireExtras
	if json.Unmarshal(body, &x) != nil {
		return
	}
	if req.TokenIDs {
		resp.PromptTokenIDs = x.PromptTokenIDs
	}
	for i := range min(len(x.Choices), len(resp.Choices)) {
		xc, c := x.Choices[i], &resp.Choices[i]
		if m := xc.Message; chat && m != nil && c.Reasoning == "" {
			switch {
			case m.ReasoningContent != nil && *m.ReasoningContent != "":
				c.Reasoning = *m.ReasoningContent
			case m.Reasoning != nil:
				c.Reasoning = *m.Reasoning
			}
		}
		if req.Logprobs && xc.Logprobs != nil {
			c.Logprobs = nil
			for _, t := range xc.Logprobs.Content {
				c.Logprobs = append(c.Logprobs, t.Logprob)
			}
			for _, p := range xc.Logprobs.TokenLogprobs {
				var v float64 // null: a token the server gave no log-probability (echo's first)
				if p != nil {
					v = *p
				}
				c.Logprobs = append(c.Logprobs, v)
			}
		}
		if req.TokenIDs {
			c.TokenIDs = xc.TokenIDs
			if len(resp.PromptTokenIDs) == 0 && len(xc.PromptTokenIDs) > 0 {
				resp.PromptTokenIDs = xc.PromptTokenIDs
			}
		}
	}
}

// keepAsked drops from resp the log-probabilities and token ids that req did not ask
// for, so that a server that sends them unasked changes no record.
func keepAsked(resp *Response, req Request) {
	if !req.TokenIDs {
		resp.PromptTokenIDs = nil
	}
	for i := range resp.Choices {
		if !req.Logprobs {
			resp.Choices[i].Logprobs = nil
		}
		if !req.TokenIDs {
			resp.Choices[i].TokenIDs = nil
		}
	}
}

// withTokenIDs adds "return_token_ids":true to a request body (a JSON object that
// go-openai wrote, which never has the key): vLLM then returns the token ids.
func withTokenIDs(b []byte) []byte {
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return b
	}
	rest := bytes.TrimLeft(t[1:], " \t\r\n")
	out := make([]byte, 0, len(rest)+len(`{"return_token_ids":true,`))
	out = append(out, `{"return_token_ids":true`...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// Think tags: a reasoning model served without a reasoning parser writes its reasoning
// into the content, as <think>…</think> before the answer.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// SplitThink splits a leading <think>…</think> block off text: the reasoning inside it
// and the text after it, trimmed of the blank lines between. A text that does not start
// with <think> (after white space) but holds </think> is taken as reasoning up to it, as
// DeepSeek-R1's templates open the block in the prompt; a <think> never closed (the
// completion was cut) is all reasoning. Any other text is returned as it is.
func SplitThink(text string) (reasoning, rest string) {
	t := strings.TrimLeft(text, " \t\r\n")
	if strings.HasPrefix(t, thinkOpen) {
		inner, after, closed := strings.Cut(t[len(thinkOpen):], thinkClose)
		if !closed {
			return strings.TrimSpace(inner), ""
		}
		return strings.TrimSpace(inner), strings.TrimLeft(after, " \t\r\n")
	}
	if before, after, ok := strings.Cut(text, thinkClose); ok && !strings.Contains(before, thinkOpen) {
		return strings.TrimSpace(before), strings.TrimLeft(after, " \t\r\n")
	}
	return "", text
}
