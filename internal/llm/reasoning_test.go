package llm_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// reasoningFields are the two names servers send a reasoning model's thinking under:
// vLLM's reasoning (since January 2026) and DeepSeek's and SGLang's reasoning_content.
var reasoningFields = []string{"reasoning", "reasoning_content"}

// TestReasoningReadUnderEitherName reads the reasoning of chat and tools replies, online
// and in a batch's result lines, under both field names.
func TestReasoningReadUnderEitherName(t *testing.T) {
	const thinking = "The question asks about Zembla; \"search\" first.\n日本"
	for _, field := range reasoningFields {
		for _, format := range []string{"chat", "tools"} {
			reply := llmtest.Reply{Texts: []string{"Thought: I search Zembla.\nAction: Search[Zembla]"}, Reasoning: thinking, ReasoningField: field}
			req := chatReq("Question: q")
			if format == "tools" {
				reply.Texts = nil
				reply.ToolCalls = []llm.ToolCall{{Function: llm.FunctionCall{Name: "search", Arguments: `{"entity":"Zembla"}`}}}
				req = toolsReq()
			}
			srv := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply { return reply })
			t.Run(field+"/"+format+"/online", func(t *testing.T) {
				resp, err := newClient(t, srv.URL, 0).Complete(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if got := resp.Choices[0].Reasoning; got != thinking {
					t.Errorf("reasoning %q, want %q", got, thinking)
				}
			})
			t.Run(field+"/"+format+"/batch", func(t *testing.T) {
				cs := batchClient(t, srv, t.TempDir(), nil)
				resp, err := cs.Client.Complete(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if got := resp.Choices[0].Reasoning; got != thinking {
					t.Errorf("reasoning %q, want %q", got, thinking)
				}
			})
		}
	}
}

// TestReasoningBothNamesTakesOne reads a reply that carries both names (vLLM's
// compatibility releases did) once.
func TestReasoningBothNamesTakesOne(t *testing.T) {
	srv := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply {
		return llmtest.Reply{Body: `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop",` +
			`"message":{"role":"assistant","content":"Thought: t","reasoning":"r1","reasoning_content":"r1"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`}
	})
	resp, err := newClient(t, srv.URL, 0).Complete(t.Context(), chatReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Reasoning; got != "r1" {
		t.Errorf("reasoning %q, want r1", got)
	}
}

func TestSplitThink(t *testing.T) {
	tests := []struct {
		name, text, reasoning, rest string
	}{
		{"leading block", "<think>\nI should search.\n</think>\n\nThought: x\nAction: Search[y]", "I should search.", "Thought: x\nAction: Search[y]"},
		{"white space first", "  \n<think>r</think>Thought: x", "r", "Thought: x"},
		{"opened in the prompt", "I should search.\n</think>\n\nThought: x", "I should search.", "Thought: x"},
		{"never closed", "<think>cut short", "cut short", ""},
		{"no block", "Thought: x\nAction: Search[y]", "", "Thought: x\nAction: Search[y]"},
		{"a block later", "Thought: x <think>y</think>", "", "Thought: x <think>y</think>"},
		{"empty block", "<think></think>Thought: x", "", "Thought: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, rest := llm.SplitThink(tt.text)
			if r != tt.reasoning || rest != tt.rest {
				t.Errorf("SplitThink(%q) = %q, %q; want %q, %q", tt.text, r, rest, tt.reasoning, tt.rest)
			}
		})
	}
}

// TestThinkTagsKeyOverACachedRun splits inline think blocks with llm.think_tags on, over
// the cache, which keeps the reply as the server sent it: the same cache read with the
// key off gives the text whole, and the server is asked once.
func TestThinkTagsKeyOverACachedRun(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("<think>Zembla is an island, I think.</think>\nThought: I search Zembla.\nAction: Search[Zembla]"))
	dir := t.TempDir()
	client := func(think bool) llm.Client {
		cfg := pipeline.Default().LLM
		cfg.BaseURL, cfg.CacheDir, cfg.ThinkTags = srv.URL, dir, think
		cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return cs.Client
	}
	resp, err := client(true).Complete(t.Context(), chatReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Choices[0]; c.Reasoning != "Zembla is an island, I think." || c.Text != "Thought: I search Zembla.\nAction: Search[Zembla]" {
		t.Errorf("think tags on: reasoning %q, text %q", c.Reasoning, c.Text)
	}
	resp, err = client(false).Complete(t.Context(), chatReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Choices[0]; !resp.Cached || c.Reasoning != "" || !strings.HasPrefix(c.Text, "<think>") {
		t.Errorf("think tags off, cached %v: reasoning %q, text %q", resp.Cached, c.Reasoning, c.Text)
	}
	if n := srv.Requests(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestLogprobsOffSendsNothingNew checks that without llm.logprobs and llm.token_ids the
// request body, the batch line and the cache key hold none of their fields.
func TestLogprobsOffSendsNothingNew(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("Thought: t"))
	c := newClient(t, srv.URL, 0)
	for _, req := range []llm.Request{chatReq("q"), promptReq("q")} {
		if _, err := c.Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		key, _ := json.Marshal(req)
		for _, k := range []string{"logprobs", "token_ids"} {
			if strings.Contains(string(key), k) {
				t.Errorf("cache key JSON %s holds %s", key, k)
			}
		}
	}
	for _, r := range srv.Log() {
		for _, k := range []string{"logprobs", "return_token_ids", "top_logprobs"} {
			if _, ok := r.Body[k]; ok {
				t.Errorf("%s request sent %s: %s", r.Endpoint, k, r.Raw)
			}
		}
	}
}

// TestLogprobsAndTokenIDs asks for log-probabilities and token ids on both endpoints,
// online and in a batch, and reads them as the fake vLLM sends them: per choice, and the
// prompt's ids on the response (chat) or on the choice (completions).
func TestLogprobsAndTokenIDs(t *testing.T) {
	const text = "Thought: I search Zembla.\nAction: Search[Zembla]"
	srv := llmtest.NewServer(t, llmtest.Text(text))
	tokens := llmtest.FakeTokens(text)
	var want []float64
	for i := range tokens {
		want = append(want, llmtest.FakeLogprob(i))
	}
	for _, base := range []llm.Request{chatReq("Question: q"), promptReq("Question: q")} {
		prompt := base.Prompt
		if prompt == "" {
			prompt = base.Messages[0].Content
		}
		for _, mode := range []string{"online", "batch"} {
			t.Run(mode+"/"+map[bool]string{true: "chat", false: "completions"}[base.Prompt == ""], func(t *testing.T) {
				req := base
				req.Logprobs, req.TokenIDs = true, true
				var c llm.Client = newClient(t, srv.URL, 0)
				if mode == "batch" {
					c = batchClient(t, srv, t.TempDir(), nil).Client
				}
				resp, err := c.Complete(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				ch := resp.Choices[0]
				if !slices.Equal(ch.Logprobs, want) {
					t.Errorf("logprobs %v, want %v", ch.Logprobs, want)
				}
				if w := llmtest.FakeTokenIDs(tokens); !slices.Equal(ch.TokenIDs, w) {
					t.Errorf("token ids %v, want %v", ch.TokenIDs, w)
				}
				if w := llmtest.FakeTokenIDs(llmtest.FakeTokens(prompt)); !slices.Equal(resp.PromptTokenIDs, w) {
					t.Errorf("prompt token ids %v, want %v", resp.PromptTokenIDs, w)
				}
			})
		}
	}
	last := srv.Log()[0]
	if last.Body["return_token_ids"] != true || last.Body["logprobs"] == nil {
		t.Errorf("request %s: want logprobs and return_token_ids", last.Raw)
	}
}

// TestLogprobsThroughTheCache replays a response's log-probabilities and token ids from
// the cache.
func TestLogprobsThroughTheCache(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("Thought: t"))
	dir := t.TempDir()
	cfg := pipeline.Default().LLM
	cfg.BaseURL, cfg.CacheDir = srv.URL, dir
	req := chatReq("q")
	req.Logprobs, req.TokenIDs = true, true
	var first llm.Response
	for i := range 2 {
		cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cs.Client.Complete(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = resp
			continue
		}
		if !resp.Cached || !slices.Equal(resp.Choices[0].Logprobs, first.Choices[0].Logprobs) ||
			!slices.Equal(resp.Choices[0].TokenIDs, first.Choices[0].TokenIDs) || !slices.Equal(resp.PromptTokenIDs, first.PromptTokenIDs) ||
			len(first.PromptTokenIDs) == 0 || len(first.Choices[0].Logprobs) == 0 {
			t.Errorf("cached %v: %+v %v, want %+v %v", resp.Cached, resp.Choices[0], resp.PromptTokenIDs, first.Choices[0], first.PromptTokenIDs)
		}
	}
}

// TestReasoningOnlyReplyIsACompletion: a reasoning model cut off while it thought
// answers content null and its reasoning; that is a completion with empty text, not a
// malformed reply to retry.
func TestReasoningOnlyReplyIsACompletion(t *testing.T) {
	for _, field := range reasoningFields {
		srv := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply {
			return llmtest.Reply{Body: `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"length",` +
				`"message":{"role":"assistant","content":null,"` + field + `":"Still thinking about"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`}
		})
		resp, err := newClient(t, srv.URL, 0).Complete(t.Context(), chatReq("q"))
		if err != nil {
			t.Fatalf("%s: %v", field, err)
		}
		if c := resp.Choices[0]; c.Text != "" || c.Reasoning != "Still thinking about" || c.FinishReason != "length" || srv.Requests() != 1 {
			t.Errorf("%s: %+v after %d requests", field, c, srv.Requests())
		}
	}
}
