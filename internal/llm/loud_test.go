package llm_test

// Replies and errors that used to pass quietly: a reply without a completion in it was
// taken as an empty completion (and cached), and error hints pointed at the wrong key.

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// malformedReplies are 200 replies that hold no completion, for chat (chat true) or the
// completions endpoint.
var malformedReplies = []struct {
	name, body string
	chat       bool
}{
	{"null body chat", "null", true},
	{"null body completions", "null", false},
	{"empty object", "{}", true},
	{"no choices", `{"id":"chatcmpl-1","object":"chat.completion","model":"fake-chat","choices":[]}`, true},
	{"choices null", `{"id":"cmpl-1","object":"text_completion","model":"fake-base","choices":null}`, false},
	{"null choice", `{"id":"chatcmpl-1","object":"chat.completion","model":"fake-chat","choices":[null]}`, true},
	{"message null", `{"id":"chatcmpl-1","object":"chat.completion","model":"fake-chat","choices":[{"index":0,"message":null,"finish_reason":"stop"}]}`, true},
	{"content null", `{"id":"chatcmpl-1","object":"chat.completion","model":"fake-chat","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}`, true},
	{"text null", `{"id":"cmpl-1","object":"text_completion","model":"fake-base","choices":[{"index":0,"text":null,"finish_reason":"stop"}]}`, false},
	{"chat reply to a completions request", `{"id":"chatcmpl-1","object":"chat.completion","model":"fake-base","choices":[{"index":0,"message":{"role":"assistant","content":"Thought: x"},"finish_reason":"stop"}]}`, false},
}

func TestMalformedRepliesAreRetriedAndCountedNotTakenAsEmptyCompletions(t *testing.T) {
	for _, tc := range malformedReplies {
		t.Run(tc.name, func(t *testing.T) {
			req := promptReq("q")
			if tc.chat {
				req = chatReq("q")
			}
			// The adapter alone: an error that says what is wrong and may be retried.
			s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Body: tc.body}))
			resp, err := newClient(t, s.URL, 0).Complete(t.Context(), req)
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("got %+v, %v; want an *llm.APIError, not a completion", resp.Choices, err)
			}
			if !strings.Contains(ae.Message, "server returned a reply with") || !llm.IsRetryable(err) {
				t.Errorf("got %q (retryable %v), want a retryable error that says what the reply lacks", ae.Message, llm.IsRetryable(err))
			}

			// The whole client: retried, counted, and the good reply is the one cached.
			s = llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Body: tc.body}, llmtest.Reply{Texts: []string{"Thought: fine.\nAction: Finish[x]"}}))
			cfg := pipeline.Default().LLM
			cfg.BaseURL, cfg.MaxRetries, cfg.BackoffBase, cfg.BackoffMax = s.URL, 2, time.Millisecond, 2*time.Millisecond
			cl, err := llm.NewClient(t.Context(), llm.Options{Config: cfg, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			resp, err = cl.Client.Complete(t.Context(), req)
			if err != nil {
				t.Fatalf("with retries: %v", err)
			}
			if resp.Choices[0].Text != "Thought: fine.\nAction: Finish[x]" || resp.Retries != 1 {
				t.Errorf("got %q after %d retries, want the second reply after 1", resp.Choices[0].Text, resp.Retries)
			}
			if m := cl.Meter.Snapshot(); m.Retries != 1 {
				t.Errorf("meter: %d retries, want the malformed reply counted as 1", m.Retries)
			}
			again, err := cl.Client.Complete(t.Context(), req)
			if err != nil || !again.Cached || again.Choices[0].Text != resp.Choices[0].Text {
				t.Errorf("second call: cached %v text %q err %v, want the good reply from the cache", again.Cached, again.Choices[0].Text, err)
			}
			if n := s.Requests(); n != 2 {
				t.Errorf("server saw %d requests, want 2", n)
			}
		})
	}
}

func TestErrorHintsNameTheFix(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(*llmtest.Server)
		reply   llmtest.Reply
		req     llm.Request
		key     string
		want    []string
		notWant []string
	}{
		{name: "chat-only server asked for completions", setup: (*llmtest.Server).ChatOnly, req: promptReq("q"),
			want: []string{"404", "no legacy completions endpoint", "generate.format: chat"}, notWant: []string{"no such endpoint"}},
		{name: "vLLM unknown model", reply: llmtest.Reply{Fault: llmtest.FaultVLLMModelNotFound}, req: chatReq("q"),
			want: []string{"The model `fake-chat` does not exist", `does not serve model "fake-chat"`, "check llm.model", "/models"}, notWant: []string{"no such endpoint", "base_url"}},
		{name: "vLLM unknown model, completions", reply: llmtest.Reply{Fault: llmtest.FaultVLLMModelNotFound}, req: promptReq("q"),
			want: []string{"check llm.model"}, notWant: []string{"no such endpoint", "generate.format"}},
		{name: "older vLLM flat error", reply: llmtest.Reply{Status: 404, Body: `{"object":"error","message":"The model ` + "`fake-chat`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`}, req: chatReq("q"),
			want: []string{"check llm.model"}, notWant: []string{"no such endpoint"}},
		{name: "OpenAI model_not_found", reply: llmtest.Reply{Fault: llmtest.FaultModelNotFound}, req: chatReq("q"),
			want: []string{"check llm.model"}},
		{name: "401 with the key variable empty", reply: llmtest.Reply{Fault: llmtest.FaultUnauthorized}, req: chatReq("q"),
			want: []string{"401", "OPENAI_API_KEY", "which is empty"}},
		{name: "401 with a key the server refused", reply: llmtest.Reply{Fault: llmtest.FaultUnauthorized}, req: chatReq("q"), key: canaryKey,
			want: []string{"401", "refused the API key in the environment variable OPENAI_API_KEY"}, notWant: []string{canaryKey, "empty"}},
		{name: "wrong path for chat", req: chatReq("q"), want: []string{"no such endpoint", "check llm.base_url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewServer(t, llmtest.Script(tt.reply))
			if tt.setup != nil {
				tt.setup(s)
			}
			url := s.URL
			if tt.name == "wrong path for chat" {
				url = strings.TrimSuffix(url, "/v1")
			}
			c, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: url, APIKey: tt.key, KeyEnv: "OPENAI_API_KEY"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Complete(t.Context(), tt.req)
			if err == nil {
				t.Fatal("got no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q: want it to contain %q", err, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q: must not contain %q", err, w)
				}
			}
		})
	}
}

func TestMalformedBatchLinesAreRetriedNotTakenAsEmptyCompletions(t *testing.T) {
	for _, tc := range malformedReplies {
		if !tc.chat {
			continue // the batch client sends chat here
		}
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
				if calls.Add(1) == 1 {
					return llmtest.Reply{Body: tc.body}
				}
				return echo(ctx, r)
			})
			cs := batchClient(t, srv, t.TempDir(), nil)
			resp, err := cs.Client.Complete(t.Context(), chatReq("q"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Choices[0].Text != "re: q" || len(srv.Batches()) != 2 || cs.Batch.Stats().Retried != 1 {
				t.Errorf("got %q after %d batches (%d lines retried), want the second batch's answer", resp.Choices[0].Text, len(srv.Batches()), cs.Batch.Stats().Retried)
			}
		})
	}
}
