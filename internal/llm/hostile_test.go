package llm_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm"
)

// hostileBody writes a chat completion whose content never ends (or ends after size
// bytes), the way a broken or hostile server might.
func hostileBody(w io.Writer, size int64) {
	io.WriteString(w, `{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "`)
	chunk := []byte(strings.Repeat("a", 64<<10))
	for sent := int64(0); size < 0 || sent < size; sent += int64(len(chunk)) {
		if _, err := w.Write(chunk); err != nil {
			return // the client stopped reading
		}
	}
	io.WriteString(w, `"}}]}`)
}

// gzipBomb is a small gzip stream of a response that inflates to about 64 MiB.
func gzipBomb(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	hostileBody(zw, 64<<20)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestHostileBodiesStopAtTheBound(t *testing.T) {
	bomb := gzipBomb(t)
	t.Logf("gzip bomb: %d bytes compressed, about 64 MiB inflated", len(bomb))
	for _, tc := range []struct {
		name  string
		serve func(w http.ResponseWriter)
	}{
		{"1 GiB body", func(w http.ResponseWriter) { hostileBody(w, 1<<30) }},
		{"endless body", func(w http.ResponseWriter) { hostileBody(w, -1) }},
		{"endless error body", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusInternalServerError)
			hostileBody(w, -1)
		}},
		{"gzip bomb", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				tc.serve(w)
			}))
			defer srv.Close()
			c, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: srv.URL + "/v1", APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Complete(t.Context(), llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "q"}}, MaxTokens: 100})
			if !errors.Is(err, llm.ErrResponseTooLarge) {
				t.Fatalf("got %v, want ErrResponseTooLarge", err)
			}
			if llm.IsRetryable(err) {
				t.Error("an oversized response is retried")
			}
			if !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("the error does not name the server: %v", err)
			}
		})
	}
}
