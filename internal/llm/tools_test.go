package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

var searchTool = llm.Tool{Type: "function", Function: llm.FunctionDef{
	Name: "search", Description: "Open a page.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"entity":{"type":"string"}},"required":["entity"]}`),
}}

// toolsReq is a tools-format request whose history holds one earlier call and its result.
func toolsReq() llm.Request {
	call := llm.ToolCall{ID: "call_1", Type: "function", Function: llm.FunctionCall{Name: "search", Arguments: `{"entity":"Zembla"}`}}
	return llm.Request{Model: "m-tools", MaxTokens: 64, Tools: []llm.Tool{searchTool}, Messages: []llm.Message{
		{Role: "system", Content: "Use the tools."},
		{Role: "user", Content: "Question: q"},
		{Role: "assistant", Content: "I search Zembla.", ToolCalls: []llm.ToolCall{call}},
		{Role: "tool", Content: "Zembla is an island.", ToolCallID: "call_1"},
	}}
}

// TestOpenAIToolCallsOnTheWire sends tools, earlier calls and a tool turn in OpenAI's wire
// form, and reads the reply's calls, content and reasoning back.
func TestOpenAIToolCallsOnTheWire(t *testing.T) {
	reply := llm.ToolCall{ID: "call_9", Type: "function", Function: llm.FunctionCall{Name: "finish", Arguments: `{"answer":"Onhava"}`}}
	s := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply {
		return llmtest.Reply{Texts: []string{"The capital is Onhava."}, Reasoning: "hidden steps", ToolCalls: []llm.ToolCall{reply}}
	})
	c := newClient(t, s.URL, 0)
	req := toolsReq()
	resp, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Choices[0]
	want := llm.Choice{Text: "The capital is Onhava.", FinishReason: "tool_calls", ToolCalls: []llm.ToolCall{reply}, Reasoning: "hidden steps"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("choice: got %+v, want %+v", got, want)
	}
	rec, _ := s.Last()
	if !reflect.DeepEqual(rec.Req.Messages, req.Messages) {
		t.Errorf("messages as the server decoded them: got %+v, want %+v", rec.Req.Messages, req.Messages)
	}
	if len(rec.Req.Tools) != 1 || rec.Req.Tools[0].Function.Name != "search" ||
		string(rec.Req.Tools[0].Function.Parameters) != string(searchTool.Function.Parameters) {
		t.Errorf("tools as sent: %+v", rec.Req.Tools)
	}
	// The wire form itself: the assistant turn's call nests its function, the tool turn
	// names the call it answers.
	msgs := rec.Body["messages"].([]any)
	asst := msgs[2].(map[string]any)
	tc := asst["tool_calls"].([]any)[0].(map[string]any)
	if tc["id"] != "call_1" || tc["type"] != "function" || tc["function"].(map[string]any)["arguments"] != `{"entity":"Zembla"}` {
		t.Errorf("assistant tool call on the wire: %v", tc)
	}
	if tool := msgs[3].(map[string]any); tool["role"] != "tool" || tool["tool_call_id"] != "call_1" {
		t.Errorf("tool turn on the wire: %v", tool)
	}
	if tools := rec.Body["tools"].([]any); tools[0].(map[string]any)["type"] != "function" {
		t.Errorf("tools on the wire: %v", tools)
	}
}

// TestOpenAIToolCallsOnlyReply reads a reply whose content is null.
func TestOpenAIToolCallsOnlyReply(t *testing.T) {
	s := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llm.ToolCall{{Function: llm.FunctionCall{Name: "search", Arguments: `{"entity":"Vell"}`}}}}
	})
	resp, err := newClient(t, s.URL, 0).Complete(t.Context(), toolsReq())
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.Text != "" || len(ch.ToolCalls) != 1 || ch.ToolCalls[0].ID == "" || ch.ToolCalls[0].Function.Arguments != `{"entity":"Vell"}` {
		t.Errorf("choice: %+v", ch)
	}
}

// TestToolsRefusedIsOneClearError: a server that does not take tools answers with
// ErrToolsUnsupported, which is not retried, through the whole client chain.
func TestToolsRefusedIsOneClearError(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Text("ok"))
	s.RejectTools()
	c := llm.WithRetry(newClient(t, s.URL, 0), llm.RetryPolicy{MaxRetries: 3, Sleep: func(context.Context, time.Duration) error { return nil }})
	_, err := c.Complete(t.Context(), toolsReq())
	if !errors.Is(err, llm.ErrToolsUnsupported) {
		t.Fatalf("got %v, want ErrToolsUnsupported", err)
	}
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(err.Error(), "--enable-auto-tool-choice") {
		t.Errorf("the server's answer is lost: %v", err)
	}
	if n := s.Requests(); n != 1 {
		t.Errorf("the refusal was sent %d times, want once (not retried)", n)
	}
	// The same server answers a request without tools.
	req := toolsReq()
	req.Tools, req.Messages = nil, req.Messages[:2]
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Errorf("request without tools: %v", err)
	}
}

// TestRefusesToolsReadsServersWording checks the refusals of the servers reactgen knows,
// and that other errors of a tools request stay what they were.
func TestRefusesToolsReadsServersWording(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   bool
	}{
		{"vllm", 400, `{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","code":400}`, true},
		{"ollama", 400, `{"error":{"message":"registry.ollama.ai/library/gemma:2b does not support tools","type":"api_error"}}`, true},
		{"openai", 400, `{"error":{"message":"tools is not supported in this model. For a list of supported models, refer to the docs.","type":"invalid_request_error","param":"tools","code":"unsupported_parameter"}}`, true},
		{"llama.cpp", 500, `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`, true},
		{"other 400", 400, `{"error":{"message":"max_tokens is too large","type":"invalid_request_error"}}`, false},
		{"rate limit", 429, `{"error":{"message":"Rate limit reached for tool use","type":"requests"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply {
				return llmtest.Reply{Status: tt.status, Body: tt.body}
			})
			_, err := newClient(t, s.URL, 0).Complete(t.Context(), toolsReq())
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, llm.ErrToolsUnsupported); got != tt.want {
				t.Errorf("ErrToolsUnsupported: got %v, want %v (%v)", got, tt.want, err)
			}
		})
	}
}

// TestCacheKeyHoldsTheTools: the same messages with other tools are another request.
func TestCacheKeyHoldsTheTools(t *testing.T) {
	s := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llm.ToolCall{{Function: llm.FunctionCall{Name: "search", Arguments: `{"entity":"Vell"}`}}}}
	})
	dir := t.TempDir()
	c := llm.WithCache(newClient(t, s.URL, 0), dir)
	req := toolsReq()
	first, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := llm.WithCache(newClient(t, s.URL, 0), dir).Complete(t.Context(), req)
	if err != nil || !again.Cached || !reflect.DeepEqual(again.Choices, first.Choices) {
		t.Errorf("replay: cached %v, choices %+v, want %+v (%v)", again.Cached, again.Choices, first.Choices, err)
	}
	other := toolsReq()
	other.Tools = []llm.Tool{searchTool, {Type: "function", Function: llm.FunctionDef{Name: "lookup", Parameters: json.RawMessage(`{}`)}}}
	if resp, err := c.Complete(t.Context(), other); err != nil || resp.Cached {
		t.Errorf("other tools: cached %v, %v", resp.Cached, err)
	}
	if n := s.Requests(); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
}

// TestBatchCarriesTools: in batch mode (llm.mode batch) a tools request's line holds the
// tools and the history's calls, and the answer's calls come back.
func TestBatchCarriesTools(t *testing.T) {
	reply := llm.ToolCall{ID: "call_b", Type: "function", Function: llm.FunctionCall{Name: "lookup", Arguments: `{"keyword":"river"}`}}
	var mu sync.Mutex
	var seen llmtest.Req
	srv := llmtest.NewServer(t, func(_ context.Context, r llmtest.Req) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		seen = r
		return llmtest.Reply{Texts: []string{"Look for the river."}, ToolCalls: []llm.ToolCall{reply}}
	})
	cs := batchClient(t, srv, t.TempDir(), nil)
	req := toolsReq()
	resp, err := cs.Client.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0]; got.Text != "Look for the river." || !reflect.DeepEqual(got.ToolCalls, []llm.ToolCall{reply}) || got.FinishReason != "tool_calls" {
		t.Errorf("choice: %+v", got)
	}
	if len(srv.Batches()) != 1 {
		t.Fatalf("batches: %+v", srv.Batches())
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(seen.Messages, req.Messages) || len(seen.Tools) != 1 || seen.Tools[0].Function.Name != "search" {
		t.Errorf("the batch line: messages %+v, tools %+v", seen.Messages, seen.Tools)
	}
}

// TestTooManyToolCallsRefused: a reply of 20,000 tool calls (1.3 MB, under the body
// bound) is refused as too large, not retried, and names the count; one of MaxToolCalls
// passes.
func TestTooManyToolCallsRefused(t *testing.T) {
	for _, n := range []int{llm.MaxToolCalls, 20000} {
		s := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply {
			calls := make([]llm.ToolCall, n)
			for i := range calls {
				calls[i] = llm.ToolCall{ID: fmt.Sprintf("call_%d", i), Function: llm.FunctionCall{Name: "search", Arguments: `{"entity":"Vell"}`}}
			}
			return llmtest.Reply{ToolCalls: calls}
		})
		c := llm.WithRetry(newClient(t, s.URL, 0), llm.RetryPolicy{MaxRetries: 3, Sleep: func(context.Context, time.Duration) error { return nil }})
		resp, err := c.Complete(t.Context(), toolsReq())
		if n <= llm.MaxToolCalls {
			if err != nil || len(resp.Choices[0].ToolCalls) != n {
				t.Errorf("%d tool calls: %v", n, err)
			}
			continue
		}
		if !errors.Is(err, llm.ErrResponseTooLarge) || !strings.Contains(err.Error(), "20000 tool calls") || s.Requests() != 1 {
			t.Errorf("%d tool calls: %v after %d requests, want ErrResponseTooLarge naming them, not retried", n, err, s.Requests())
		}
	}
}
