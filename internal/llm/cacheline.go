package llm

import (
	"strconv"
	"time"

	"github.com/reactgen/reactgen/internal/jsonenc"
)

// appendLogEntry appends json.Marshal(*e)'s bytes: a cache line, written by hand because
// encoding it by reflection was a third of what storing a response cost. It reports
// false, with b unchanged, for what it leaves to encoding/json: a request it does not
// encode (appendRequestJSON), a log-probability that is not finite (which json.Marshal
// refuses) and a time outside the years 0 to 9999.
func appendLogEntry(b []byte, e *logEntry) ([]byte, bool) {
	if y := e.Written.Year(); y < 0 || y > 9999 {
		return b, false
	}
	for i := range e.Choices {
		for _, f := range e.Choices[i].Logprobs {
			if !jsonenc.Finite(f) {
				return b, false
			}
		}
	}
	start := len(b)
	b = strconv.AppendInt(append(b, `{"v":`...), int64(e.V), 10)
	b = jsonenc.AppendStringHTML(append(b, `,"key":`...), e.Key)
	b = jsonenc.AppendStringHTML(append(b, `,"prompt_hash":`...), e.PromptHash)
	b, ok := appendRequestJSON(append(b, `,"request":`...), &e.Request)
	if !ok {
		return b[:start], false
	}
	b = append(b, `,"choices":`...)
	if e.Choices == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range e.Choices {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendChoiceJSON(b, &e.Choices[i])
		}
		b = append(b, ']')
	}
	u := e.Usage
	b = strconv.AppendInt(append(b, `,"usage":{"PromptTokens":`...), int64(u.PromptTokens), 10)
	b = strconv.AppendInt(append(b, `,"CompletionTokens":`...), int64(u.CompletionTokens), 10)
	b = strconv.AppendInt(append(b, `,"TotalTokens":`...), int64(u.TotalTokens), 10)
	b = appendIntField(b, `,"CachedPromptTokens":`, u.CachedPromptTokens)
	b = jsonenc.AppendStringHTML(append(b, `},"model":`...), e.Model)
	b = append(e.Written.AppendFormat(append(b, `,"written":"`...), time.RFC3339Nano), '"')
	b = strconv.AppendInt(append(b, `,"latency_ms":`...), e.Original, 10)
	if len(e.PromptTokenIDs) > 0 {
		b = appendInts(append(b, `,"prompt_token_ids":`...), e.PromptTokenIDs)
	}
	return append(b, '}'), true
}

// appendChoiceJSON appends json.Marshal(*c)'s bytes; its log-probabilities are finite.
func appendChoiceJSON(b []byte, c *Choice) []byte {
	b = jsonenc.AppendStringHTML(append(b, `{"Text":`...), c.Text)
	b = jsonenc.AppendStringHTML(append(b, `,"FinishReason":`...), c.FinishReason)
	if len(c.ToolCalls) > 0 {
		b = append(b, `,"ToolCalls":`...)
		b = appendToolCallsJSON(b, c.ToolCalls)
	}
	if c.Reasoning != "" {
		b = jsonenc.AppendStringHTML(append(b, `,"Reasoning":`...), c.Reasoning)
	}
	if len(c.Logprobs) > 0 {
		b = appendList(append(b, `,"Logprobs":`...), c.Logprobs, jsonenc.AppendFloat)
	}
	if len(c.TokenIDs) > 0 {
		b = appendInts(append(b, `,"TokenIDs":`...), c.TokenIDs)
	}
	return append(b, '}')
}

// appendInts appends a list of integers as JSON.
func appendInts(b []byte, ns []int64) []byte {
	return appendList(b, ns, func(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) })
}

// appendList appends xs as a JSON array, each element by appendElem.
func appendList[T any](b []byte, xs []T, appendElem func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendElem(b, x)
	}
	return append(b, ']')
}
