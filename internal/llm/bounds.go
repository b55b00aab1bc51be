package llm

import (
	"fmt"
	"strings"
)

// MaxToolCalls bounds the tool calls of one reply's choice. A ReAct step makes one call
// (a model that calls tools in parallel a few); a reply with more is refused, not cut,
// as a server gone wrong: like a body over MaxResponseBytes, it fails its request
// without a retry (ErrResponseTooLarge), and the episode records the error.
const MaxToolCalls = 64

// boundReply applies the bounds of one reply, online and in batch alike: each choice's
// text and each tool call's arguments are cut at MaxCompletionBytes(maxTokens), marked
// finish_reason length, so that a server that ignores max_tokens cannot fill the run;
// and a choice with more than MaxToolCalls tool calls fails the reply.
func boundReply(resp *Response, maxTokens int) error {
	limit := MaxCompletionBytes(maxTokens)
	for i := range resp.Choices {
		c := &resp.Choices[i]
		if n := len(c.ToolCalls); n > MaxToolCalls {
			return fmt.Errorf("%w: choice %d holds %d tool calls (the most reactgen takes in one reply is %d)", ErrResponseTooLarge, i, n, MaxToolCalls)
		}
		if len(c.Text) > limit {
			c.Text = strings.ToValidUTF8(c.Text[:limit], "")
			c.FinishReason = "length"
		}
		for j := range c.ToolCalls {
			if f := &c.ToolCalls[j].Function; len(f.Arguments) > limit {
				f.Arguments = strings.ToValidUTF8(f.Arguments[:limit], "")
				c.FinishReason = "length"
			}
		}
	}
	return nil
}
