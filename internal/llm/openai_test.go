package llm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

const canaryKey = "sk-canary-7f3a9b21c0ffee"

func newClient(t *testing.T, url string, timeout time.Duration) *llm.OpenAI {
	t.Helper()
	c, err := llm.NewOpenAI(llm.OpenAIOptions{
		BaseURL: url, APIKey: canaryKey, Timeout: timeout,
		Headers: map[string]string{"X-Team": "bootstrap", "HTTP-Referer": "https://example.org"},
	})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

func chatReq(content string) llm.Request {
	return llm.Request{Model: "fake-chat", Messages: []llm.Message{{Role: "user", Content: content}}, MaxTokens: 64}
}

func promptReq(prompt string) llm.Request {
	return llm.Request{Model: "fake-base", Prompt: prompt, MaxTokens: 64}
}

func TestOpenAISendsParameters(t *testing.T) {
	seed := 42
	tests := []struct {
		name     string
		req      llm.Request
		endpoint string
	}{
		{"chat", llm.Request{Model: "m-chat", Messages: []llm.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "q"}},
			Temperature: 0, TopP: 0.9, MaxTokens: 77, Stop: []string{"\nObservation", "]]"}, Seed: &seed, N: 3}, "chat"},
		{"completions", llm.Request{Model: "m-base", Prompt: "Question: q\nThought 1:",
			Temperature: 0, TopP: 0.9, MaxTokens: 77, Stop: []string{"\nObservation", "]]"}, Seed: &seed, N: 3}, "completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewServer(t, llmtest.Text("Search[x]\nObservation 1: leaked"))
			c := newClient(t, s.URL, 0)
			resp, err := c.Complete(t.Context(), tt.req)
			if err != nil {
				t.Fatalf("complete: %v", err)
			}
			rec, ok := s.Last()
			if !ok {
				t.Fatal("server saw no request")
			}
			if rec.Endpoint != tt.endpoint {
				t.Errorf("endpoint: got %q, want %q", rec.Endpoint, tt.endpoint)
			}
			temp, sent := rec.Body["temperature"]
			if !sent {
				t.Errorf("temperature 0 was not sent: body %s", rec.Raw)
			} else if temp != 0.0 {
				t.Errorf("temperature: got %v, want 0", temp)
			}
			r := rec.Req
			if r.Model != tt.req.Model || r.TopP < 0.899 || r.TopP > 0.901 || r.MaxTokens != 77 || r.N != 3 ||
				r.Seed == nil || *r.Seed != 42 || strings.Join(r.Stop, "|") != "\nObservation|]]" {
				t.Errorf("sent parameters: got %+v", r)
			}
			if tt.endpoint == "chat" && (len(r.Messages) != 2 || r.Messages[0].Role != "system") {
				t.Errorf("messages: got %+v", r.Messages)
			}
			if tt.endpoint == "completions" && r.Prompt != tt.req.Prompt {
				t.Errorf("prompt: got %q, want %q", r.Prompt, tt.req.Prompt)
			}
			if got := rec.Header.Get("Authorization"); got != "Bearer "+canaryKey {
				t.Errorf("authorization: got %q", got)
			}
			if got := rec.Header.Get("X-Team"); got != "bootstrap" {
				t.Errorf("extra header: got %q, want bootstrap", got)
			}
			if len(resp.Choices) != 3 {
				t.Fatalf("choices: got %d, want 3", len(resp.Choices))
			}
			for i, ch := range resp.Choices {
				if ch.Text != "Search[x]" || ch.FinishReason != "stop" {
					t.Errorf("choice %d: got %+v, want the text cut at the stop sequence", i, ch)
				}
			}
			if resp.Usage.TotalTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
				t.Errorf("usage: got %+v", resp.Usage)
			}
			if resp.Latency <= 0 {
				t.Errorf("latency: got %v, want it measured", resp.Latency)
			}
			if resp.Model != tt.req.Model {
				t.Errorf("model: got %q", resp.Model)
			}
		})
	}
}

func TestOpenAISendsNonZeroTemperature(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Text("ok"))
	c := newClient(t, s.URL, 0)
	req := chatReq("q")
	req.Temperature = 0.7
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	rec, _ := s.Last()
	if got := rec.Req.Temperature; got < 0.699 || got > 0.701 {
		t.Errorf("temperature: got %v, want 0.7", got)
	}
}

func TestOpenAIEmptyCompletion(t *testing.T) {
	for _, req := range []llm.Request{chatReq("q"), promptReq("q")} {
		s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.FaultEmpty}))
		resp, err := newClient(t, s.URL, 0).Complete(t.Context(), req)
		if err != nil {
			t.Fatalf("empty completion: got error %v, want a choice with empty text", err)
		}
		if len(resp.Choices) != 1 || resp.Choices[0].Text != "" {
			t.Errorf("choices: got %+v", resp.Choices)
		}
	}
}

func TestOpenAIRejectsBadRequests(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Text("x"))
	c := newClient(t, s.URL, 0)
	both := chatReq("q")
	both.Prompt = "p"
	for name, req := range map[string]llm.Request{"neither": {Model: "m"}, "both": both} {
		if _, err := c.Complete(t.Context(), req); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
	if s.Requests() != 0 {
		t.Errorf("requests: got %d, want 0", s.Requests())
	}
	for _, url := range []string{"localhost:8000/v1", "http://localhost:8000/v1/chat/completions"} {
		if _, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: url}); err == nil {
			t.Errorf("base url %q: got no error", url)
		}
	}
}

// TestOpenAIErrors checks how each fault is reported and classified.
func TestOpenAIErrors(t *testing.T) {
	tests := []struct {
		reply     llmtest.Reply
		retryable bool
		status    int    // 0: not an *APIError
		code      string // APIError.Code
		contains  string
	}{
		{llmtest.Reply{Fault: llmtest.Fault429}, true, 429, "rate_limit_exceeded", "Rate limit"},
		{llmtest.Reply{Fault: llmtest.Fault429, RetryAfter: "7"}, true, 429, "rate_limit_exceeded", "retry after 7s"},
		{llmtest.Reply{Fault: llmtest.Fault500}, true, 500, "", "status 500"},
		{llmtest.Reply{Fault: llmtest.Fault503}, true, 503, "", "overloaded"},
		{llmtest.Reply{Status: 408}, true, 408, "", "408"},
		{llmtest.Reply{Status: 409}, true, 409, "", "409"},
		{llmtest.Reply{Status: 400}, false, 400, "", "400"},
		{llmtest.Reply{Status: 403}, false, 403, "", "403"},
		{llmtest.Reply{Fault: llmtest.FaultHTML}, true, 502, "", "server returned an HTML page (status 502), not JSON: <title>502 Bad Gateway</title>"},
		{llmtest.Reply{Fault: llmtest.FaultHTML, Status: 200}, true, 200, "", "HTML page (status 200)"},
		{llmtest.Reply{Fault: llmtest.FaultHTML, Status: 404}, false, 404, "", "HTML page (status 404)"},
		{llmtest.Reply{Fault: llmtest.FaultInvalidJSON}, true, 200, "", "invalid JSON (status 200)"},
		{llmtest.Reply{Fault: llmtest.FaultInvalidJSON, Status: 500}, true, 500, "", "invalid JSON (status 500)"},
		{llmtest.Reply{Fault: llmtest.FaultModelNotFound}, false, 404, "model_not_found", "The model `fake-chat` does not exist"},
		{llmtest.Reply{Fault: llmtest.FaultUnauthorized}, false, 401, "invalid_api_key", "Incorrect API key"},
		{llmtest.Reply{Fault: llmtest.FaultReset, Texts: []string{strings.Repeat("long answer ", 20)}}, true, 0, "", "connection closed mid-response"},
		{llmtest.Reply{Fault: llmtest.FaultTimeout}, true, 0, "", "timed out after"},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s-%d-%s", tt.reply.Fault, tt.reply.Status, tt.reply.RetryAfter)
		t.Run(name, func(t *testing.T) {
			for _, req := range []llm.Request{chatReq("q"), {Model: "fake-chat", Prompt: "q"}} {
				s := llmtest.NewServer(t, llmtest.Script(tt.reply))
				_, err := newClient(t, s.URL, 300*time.Millisecond).Complete(t.Context(), req)
				if err == nil {
					t.Fatalf("got no error")
				}
				if got := llm.IsRetryable(err); got != tt.retryable {
					t.Errorf("IsRetryable(%v): got %v, want %v", err, got, tt.retryable)
				}
				if !strings.Contains(err.Error(), tt.contains) {
					t.Errorf("error %q: want it to contain %q", err, tt.contains)
				}
				var ae *llm.APIError
				isAPI := errors.As(err, &ae)
				if isAPI != (tt.status != 0) {
					t.Fatalf("errors.As APIError: got %v for %v", isAPI, err)
				}
				if isAPI && (ae.Status != tt.status || ae.Code != tt.code) {
					t.Errorf("APIError: got status %d code %q, want %d %q", ae.Status, ae.Code, tt.status, tt.code)
				}
				if tt.reply.RetryAfter == "7" && ae.RetryAfter != 7*time.Second {
					t.Errorf("retry after: got %v, want 7s", ae.RetryAfter)
				}
			}
		})
	}
}

func TestOpenAIUnreachable(t *testing.T) {
	url := closedPortURL(t)
	_, err := newClient(t, url, time.Second).Complete(t.Context(), chatReq("q"))
	if err == nil {
		t.Fatal("got no error from a closed port")
	}
	if !llm.IsRetryable(err) {
		t.Errorf("connection refused: got not retryable: %v", err)
	}
}

func TestOpenAICancelled(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.FaultTimeout}))
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for s.Requests() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := newClient(t, s.URL, 0).Complete(ctx, chatReq("q"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if llm.IsRetryable(err) {
		t.Errorf("a cancelled request must not be retryable")
	}
}

// closedPortURL returns a base URL on 127.0.0.1 where nothing listens.
func closedPortURL(t *testing.T) string {
	t.Helper()
	return "http://" + llmtest.FreeAddr(t) + "/v1"
}

// TestKeyNeverPrinted sends every fault and prints every error and value in every verb,
// looking for the key.
func TestKeyNeverPrinted(t *testing.T) {
	opts := llm.OpenAIOptions{BaseURL: "http://127.0.0.1:1/v1", APIKey: canaryKey}
	var texts []string
	c, err := llm.NewOpenAI(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		texts = append(texts, fmt.Sprintf(verb, opts), fmt.Sprintf(verb, c), fmt.Sprintf(verb, &opts))
	}
	// A server that echoes the key back in its error, as some proxies do.
	echo := func(_ context.Context, r llmtest.Req) llmtest.Reply {
		return llmtest.Reply{Status: 401, Body: `{"error":{"message":"bad key ` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + `","type":"invalid_request_error","code":"invalid_api_key"}}`}
	}
	handlers := []llmtest.Handler{echo,
		func(_ context.Context, r llmtest.Req) llmtest.Reply {
			return llmtest.Reply{Status: 502, Body: "<html><title>" + r.Header.Get("Authorization") + "</title></html>"}
		},
		func(_ context.Context, r llmtest.Req) llmtest.Reply {
			return llmtest.Reply{Body: `{"broken": "` + r.Header.Get("Authorization")}
		},
	}
	for _, f := range llmtest.Faults {
		handlers = append(handlers, llmtest.Script(llmtest.Reply{Fault: f, Texts: []string{strings.Repeat("x", 200)}}))
	}
	for _, h := range handlers {
		s := llmtest.NewServer(t, h)
		cl := llm.WithRetry(newClient(t, s.URL, 200*time.Millisecond), llm.RetryPolicy{MaxRetries: 1, Sleep: noSleep})
		for _, req := range []llm.Request{chatReq("q"), promptReq("q")} {
			_, err := cl.Complete(t.Context(), req)
			if err != nil {
				texts = append(texts, fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
				var ae *llm.APIError
				if errors.As(err, &ae) {
					texts = append(texts, fmt.Sprintf("%+v", *ae), ae.Body, ae.Message)
				}
			}
		}
	}
	_, err = llm.WithBreaker(c, 1).Complete(t.Context(), chatReq("q"))
	texts = append(texts, fmt.Sprintf("%+v", err))
	for _, s := range texts {
		if strings.Contains(s, canaryKey) || strings.Contains(s, "canary-7f3a") {
			t.Errorf("key leaked: %s", s)
		}
	}
	if len(texts) < 20 {
		t.Errorf("checked only %d texts", len(texts))
	}
}

func noSleep(context.Context, time.Duration) error { return nil }

func TestOpenAIOtherServersErrorBodies(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"vllm flat", `{"object":"error","message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`, 404, "does not exist"},
		{"tgi string", `{"error":"Input validation error: max_new_tokens too large","error_type":"validation"}`, 422, "Input validation error"},
		{"fastapi detail", `{"detail":"Not authenticated"}`, 401, "Not authenticated"},
		{"llama.cpp nested int code", `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`, 503, "Loading model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Status: tt.status, Body: tt.body}))
			_, err := newClient(t, s.URL, 0).Complete(t.Context(), chatReq("q"))
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.Status != tt.status {
				t.Fatalf("got %v, want an APIError with status %d", err, tt.status)
			}
			if !strings.Contains(ae.Message, tt.want) || strings.Contains(ae.Message, "invalid JSON") {
				t.Errorf("message: got %q, want it to contain %q", ae.Message, tt.want)
			}
			if got, want := llm.IsRetryable(err), tt.status >= 500; got != want {
				t.Errorf("retryable: got %v, want %v", got, want)
			}
		})
	}
}

func TestOversizedCompletionIsCut(t *testing.T) {
	huge := strings.Repeat("Thought: more. ", 100000) // ~1.5 MB, ignoring max_tokens
	srv := llmtest.NewServer(t, llmtest.Text(huge))
	c, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []llm.Request{
		{Model: "m", Messages: []llm.Message{{Role: "user", Content: "q"}}, MaxTokens: 100},
		{Model: "m", Prompt: "q", MaxTokens: 100},
		{Model: "m", Prompt: "q"},
	} {
		resp, err := c.Complete(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got, limit := len(resp.Choices[0].Text), llm.MaxCompletionBytes(req.MaxTokens); got > limit || got == 0 {
			t.Errorf("max_tokens %d: kept %d bytes, want at most %d", req.MaxTokens, got, limit)
		}
		if resp.Choices[0].FinishReason != "length" {
			t.Errorf("finish reason: got %q, want length", resp.Choices[0].FinishReason)
		}
	}
}

// TestRefusedBeforeSendingIsNotSent: a request go-openai refuses before sending (a chat
// model on /completions) fails marked ErrNotSent and reaches no server; one the server
// answers with an error was sent and is not marked.
func TestRefusedBeforeSendingIsNotSent(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.Fault429}))
	c := newClient(t, s.URL, 0)
	req := promptReq("Question: q")
	req.Model = "gpt-4o-mini"
	if _, err := c.Complete(t.Context(), req); !errors.Is(err, llm.ErrNotSent) {
		t.Errorf("a chat model on /completions: got %v, want ErrNotSent", err)
	}
	if n := s.Requests(); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
	if _, err := c.Complete(t.Context(), chatReq("q")); err == nil || errors.Is(err, llm.ErrNotSent) {
		t.Errorf("a request the server refused: got %v, want an error not marked ErrNotSent", err)
	}
	if n := s.Requests(); n != 1 {
		t.Errorf("the server got %d requests, want 1", n)
	}
}
