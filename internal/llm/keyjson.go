package llm

import (
	"strconv"
	"sync"

	"github.com/reactgen/reactgen/internal/jsonenc"
)

// The response cache's key is the sha256 of json.Marshal of the whole Request, as every
// cache on disk was written with. Encoding a request of a 10 KB few-shot prompt by
// reflection took 8% of a call's CPU in BenchmarkCallCPU; the functions here append
// exactly the bytes json.Marshal gives (FuzzRequestJSON compares them), by hand, their
// strings and floats through jsonenc.

// appendRequestJSON appends json.Marshal(req)'s bytes to b. It reports false, with b
// unchanged, for what it does not encode by hand (see handEncoded).
func appendRequestJSON(b []byte, req *Request) ([]byte, bool) {
	if !handEncoded(req) {
		return b, false
	}
	b = jsonenc.AppendStringHTML(append(b, `{"model":`...), req.Model)
	if req.Prompt != "" {
		b = append(jsonenc.AppendEscapedHTML(append(b, `,"prompt":"`...), req.Prompt), '"')
	}
	return appendRequestTail(b, req), true
}

// handEncoded reports whether appendRequestJSON encodes req: not with tools (whose
// parameters json.Marshal compacts), nor with a temperature or top_p that is not finite
// (which json.Marshal refuses).
func handEncoded(req *Request) bool {
	return len(req.Tools) == 0 && jsonenc.Finite(req.Temperature) && jsonenc.Finite(req.TopP)
}

// appendRequestTail appends what follows the prompt in json.Marshal(req)'s bytes: the
// messages, the sampling settings and the closing brace.
func appendRequestTail(b []byte, req *Request) []byte {
	if len(req.Messages) > 0 {
		b = append(appendMoreMessages(append(b, `,"messages":[`...), req.Messages, 0), ']')
	}
	return appendSettingsJSON(b, req)
}

// appendMoreMessages appends the JSON of msgs[from:], each after a comma but the first
// message of all.
func appendMoreMessages(b []byte, msgs []Message, from int) []byte {
	for i := from; i < len(msgs); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessageJSON(b, &msgs[i])
	}
	return b
}

// appendSettingsJSON appends what follows the messages in json.Marshal(req)'s bytes: the
// sampling settings and the closing brace.
func appendSettingsJSON(b []byte, req *Request) []byte {
	b = append(b, `,"temperature":`...)
	b = jsonenc.AppendFloat(b, req.Temperature)
	if req.TopP != 0 {
		b = append(b, `,"top_p":`...)
		b = jsonenc.AppendFloat(b, req.TopP)
	}
	b = appendIntField(b, `,"max_tokens":`, req.MaxTokens)
	if len(req.Stop) > 0 {
		b = appendList(append(b, `,"stop":`...), req.Stop, jsonenc.AppendStringHTML)
	}
	if req.Seed != nil {
		b = append(b, `,"seed":`...)
		b = strconv.AppendInt(b, int64(*req.Seed), 10)
	}
	b = appendIntField(b, `,"n":`, req.N)
	b = appendIntField(b, `,"attempt":`, req.Attempt)
	if req.Logprobs {
		b = append(b, `,"logprobs":true`...)
	}
	if req.TokenIDs {
		b = append(b, `,"token_ids":true`...)
	}
	return append(b, '}')
}

// appendMessageJSON appends json.Marshal(*m)'s bytes.
func appendMessageJSON(b []byte, m *Message) []byte {
	b = append(b, `{"role":`...)
	b = jsonenc.AppendStringHTML(b, m.Role)
	b = append(b, `,"content":`...)
	b = jsonenc.AppendStringHTML(b, m.Content)
	if len(m.ToolCalls) > 0 {
		b = appendToolCallsJSON(append(b, `,"tool_calls":`...), m.ToolCalls)
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = jsonenc.AppendStringHTML(b, m.ToolCallID)
	}
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = jsonenc.AppendStringHTML(b, m.Name)
	}
	return append(b, '}')
}

// appendToolCallsJSON appends json.Marshal(tcs)'s bytes for a non-empty list.
func appendToolCallsJSON(b []byte, tcs []ToolCall) []byte {
	b = append(b, '[')
	for i, tc := range tcs {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendStringHTML(append(b, `{"id":`...), tc.ID)
		b = jsonenc.AppendStringHTML(append(b, `,"type":`...), tc.Type)
		b = jsonenc.AppendStringHTML(append(b, `,"function":{"name":`...), tc.Function.Name)
		b = jsonenc.AppendStringHTML(append(b, `,"arguments":`...), tc.Function.Arguments)
		b = append(b, "}}"...)
	}
	return append(b, ']')
}

// appendIntField appends name and n, or nothing for 0 (omitempty).
func appendIntField(b []byte, name string, n int) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, name...), int64(n), 10)
}

// jsonBufs holds the buffers requests are encoded into for their key; one that grew past
// maxPooledJSON (a huge prompt) is not kept.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxPooledJSON = 1 << 20

func getJSONBuf() *[]byte { return jsonBufs.Get().(*[]byte) }

func putJSONBuf(p *[]byte) {
	if cap(*p) <= maxPooledJSON {
		*p = (*p)[:0]
		jsonBufs.Put(p)
	}
}
