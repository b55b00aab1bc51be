package llm

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/origin"
	"github.com/reactgen/reactgen/internal/origin/origintest"
	"github.com/reactgen/reactgen/pipeline"
)

// A server that redirects to another host gets neither the key nor the configured
// headers there, nor the prompt: the model client and the Batch/Files client refuse the
// redirect, without retrying it.
func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	const key, gateway, cookie = "sk-redirect-canary-0123456789", "gw-redirect-canary-0123456789", "session=redirect-canary-0123456789"
	headers := map[string]string{"api-key": gateway, "X-Api-Key": gateway, "Cookie": cookie}
	for _, status := range []int{301, 302, 303, 307, 308} {
		p := origintest.New(t, status)
		t.Run("model/"+http2(status), func(t *testing.T) {
			cfg := pipeline.LLMConfig{BaseURL: p.From.URL + "/v1", APIKeyEnv: "K", Headers: headers, Concurrency: 1,
				MaxRetries: 3, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, Timeout: 10 * time.Second}
			cs, err := NewClient(t.Context(), Options{Config: cfg, Getenv: func(string) string { return key }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cs.Client.Complete(t.Context(), Request{Model: "m", Messages: []Message{{Role: "user", Content: "the prompt"}}, MaxTokens: 8})
			if !errors.Is(err, origin.ErrRedirect) {
				t.Fatalf("Complete after a %d to another host: %v, want ErrRedirect", status, err)
			}
			if IsRetryable(err) {
				t.Errorf("a refused redirect is retryable: %v", err)
			}
			if !strings.Contains(err.Error(), "llm.base_url") || !strings.Contains(err.Error(), "127.0.0.2") {
				t.Errorf("error names neither the key nor the host: %v", err)
			}
			for _, s := range []string{key, gateway, cookie} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error holds a secret: %v", err)
				}
			}
			if got := p.Received(); len(got) != 0 {
				t.Errorf("the other host received %d requests (first: %s %s, headers %v)", len(got), got[0].Method, got[0].Path, got[0].Header)
			}
		})
		t.Run("batch files/"+http2(status), func(t *testing.T) {
			oa, err := NewOpenAI(OpenAIOptions{BaseURL: p.From.URL + "/v1", APIKey: key, Headers: headers})
			if err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(t.TempDir(), "wave-1.jsonl")
			if err := os.WriteFile(in, []byte(`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			b := &openAIBatches{oa: oa, completionWindow: "24h"}
			if _, _, err := b.Submit(t.Context(), in, batchChat, nil); !errors.Is(err, origin.ErrRedirect) {
				t.Fatalf("upload after a %d to another host: %v, want ErrRedirect", status, err)
			}
			if _, err := b.Status(t.Context(), "batch_1"); !errors.Is(err, origin.ErrRedirect) {
				t.Fatalf("status after a %d to another host: %v, want ErrRedirect", status, err)
			}
			if got := p.Received(); len(got) != 0 {
				t.Errorf("the other host received %d requests", len(got))
			}
		})
	}
}

func http2(status int) string {
	return strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "-")
}
