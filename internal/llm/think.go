package llm

import (
	"context"
	"slices"
)

// WithThinkTags splits a leading <think>…</think> block off the text of every choice
// (SplitThink) into its Reasoning (llm.think_tags), for servers that return a reasoning
// model's thinking inline in the content. It sits outside the cache, which keeps the
// reply as the server sent it, so the key can be turned on or off over a cached run. A
// choice that already carries reasoning from the server keeps it, the block's text after
// it. It is safe for concurrent use when c is.
func WithThinkTags(c Client) Client { return thinkTags{next: c} }

type thinkTags struct{ next Client }

func (t thinkTags) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := t.next.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	resp.Choices = slices.Clone(resp.Choices)
	for i := range resp.Choices {
		c := &resp.Choices[i]
		r, rest := SplitThink(c.Text)
		if r == "" && rest == c.Text {
			continue
		}
		c.Text = rest
		switch {
		case c.Reasoning == "":
			c.Reasoning = r
		case r != "":
			c.Reasoning += "\n\n" + r
		}
	}
	return resp, nil
}
