package llmtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

func post(t *testing.T, url string, body string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestChatWireFormat(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Text("Thought: go\nObservation: cut here"))
	resp, b, err := post(t, s.URL+"/chat/completions",
		`{"model":"m1","messages":[{"role":"user","content":"hello there"}],"stop":["\nObservation:"],"temperature":0,"seed":7,"n":2}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status: got %d, want 200", resp.StatusCode)
	}
	var out struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens, CompletionTokens, TotalTokens int
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if out.Object != "chat.completion" || out.Model != "m1" || !strings.HasPrefix(out.ID, "chatcmpl-") {
		t.Errorf("envelope: got id %q object %q model %q", out.ID, out.Object, out.Model)
	}
	if len(out.Choices) != 2 {
		t.Fatalf("choices: got %d, want 2", len(out.Choices))
	}
	for i, c := range out.Choices {
		if c.Index != i || c.Message.Content != "Thought: go" || c.FinishReason != "stop" || c.Message.Role != "assistant" {
			t.Errorf("choice %d: got %+v", i, c)
		}
	}
	rec, ok := s.Last()
	if !ok {
		t.Fatal("no request recorded")
	}
	if _, sent := rec.Body["temperature"]; !sent {
		t.Errorf("temperature not recorded as sent")
	}
	if rec.Req.Seed == nil || *rec.Req.Seed != 7 || rec.Req.N != 2 || rec.Req.Model != "m1" {
		t.Errorf("decoded request: got %+v", rec.Req)
	}
	if got := rec.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("authorization: got %q", got)
	}
	if s.Requests() != 1 {
		t.Errorf("requests: got %d, want 1", s.Requests())
	}
}

func TestCompletionsWireFormat(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Texts: []string{"a]b"}, PromptTokens: 5, CompletionTokens: 3}))
	_, b, err := post(t, s.URL+"/completions", `{"model":"m2","prompt":"Question: x","stop":"]"}`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Object  string `json:"object"`
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if out.Object != "text_completion" || len(out.Choices) != 1 || out.Choices[0].Text != "a" {
		t.Errorf("got %s", b)
	}
	if out.Usage.TotalTokens != 8 {
		t.Errorf("total tokens: got %d, want 8", out.Usage.TotalTokens)
	}
	if rec, _ := s.Last(); rec.Req.Prompt != "Question: x" || len(rec.Req.Stop) != 1 {
		t.Errorf("decoded: got %+v", rec.Req)
	}
}

func TestFaultStatuses(t *testing.T) {
	tests := []struct {
		fault  llmtest.Fault
		status int
		ctype  string
		want   string
	}{
		{llmtest.Fault429, 429, "application/json", "rate_limit_exceeded"},
		{llmtest.Fault500, 500, "application/json", "server_error"},
		{llmtest.Fault503, 503, "application/json", "overloaded"},
		{llmtest.FaultHTML, 502, "text/html", "<title>502"},
		{llmtest.FaultInvalidJSON, 200, "application/json", `"text":"Thought`},
		{llmtest.FaultModelNotFound, 404, "application/json", "The model `m` does not exist"},
		{llmtest.FaultUnauthorized, 401, "application/json", "invalid_api_key"},
		{llmtest.FaultEmpty, 200, "application/json", `"content":""`},
	}
	for _, tt := range tests {
		t.Run(tt.fault.String(), func(t *testing.T) {
			s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: tt.fault, RetryAfter: "3"}))
			resp, b, err := post(t, s.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"q"}]}`)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status: got %d, want %d", resp.StatusCode, tt.status)
			}
			if got := resp.Header.Get("Content-Type"); got != tt.ctype {
				t.Errorf("content type: got %q, want %q", got, tt.ctype)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("body: got %s, want it to contain %q", b, tt.want)
			}
			if tt.fault == llmtest.Fault429 && resp.Header.Get("Retry-After") != "3" {
				t.Errorf("retry-after: got %q, want 3", resp.Header.Get("Retry-After"))
			}
		})
	}
}

func TestResetAndTimeout(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.FaultReset, Texts: []string{"a long enough answer"}}))
	if _, _, err := post(t, s.URL+"/chat/completions", `{"model":"m","messages":[]}`); err == nil {
		t.Errorf("reset: got no error, want a truncated body error")
	}

	s2 := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.FaultTimeout}))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s2.URL+"/completions", strings.NewReader(`{"model":"m","prompt":"p"}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("timeout: got status %d, want a client timeout", resp.StatusCode)
	}
}

func TestFaultyThenScript(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Faulty(2, llmtest.Fault500, llmtest.Script(
		llmtest.Reply{Texts: []string{"one"}}, llmtest.Reply{Texts: []string{"two"}})))
	var statuses []int
	var texts []string
	for range 5 {
		resp, b, err := post(t, s.URL+"/completions", `{"model":"m","prompt":"p"}`)
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, resp.StatusCode)
		var out struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		_ = json.Unmarshal(b, &out)
		if len(out.Choices) > 0 {
			texts = append(texts, out.Choices[0].Text)
		}
	}
	if got, want := statuses, []int{500, 500, 200, 200, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses: got %v, want %v", got, want)
	}
	if got, want := strings.Join(texts, ","), "one,two,two"; got != want {
		t.Errorf("texts: got %q, want %q", got, want)
	}
	if len(s.Log()) != 5 {
		t.Errorf("log: got %d entries, want 5", len(s.Log()))
	}
}

func TestDropLog(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Text("ok"))
	for i := range 4 {
		if i == 2 {
			s.DropLog()
		}
		resp, _, err := post(t, s.URL+"/completions", `{"model":"m","prompt":"p"}`)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	if got := len(s.Log()); got != 2 {
		t.Errorf("log: got %d entries, want the 2 sent before DropLog", got)
	}
	if got := s.Requests(); got != 4 {
		t.Errorf("requests: got %d, want 4 (DropLog stops the log, not the count)", got)
	}
}
