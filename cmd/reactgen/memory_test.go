package main

// Peak memory against a hostile model server: bodies of 1 GiB, bodies that never end and
// gzip bombs are cut at the response bound, and the process stays under the bound
// docs/limits.md states while 16 requests are in flight.

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

// peakRSSBound is the peak resident memory docs/limits.md promises for a run with
// generate.concurrency 16 whatever the model server sends.
const peakRSSBound = 512 << 20

// hostileCompletion writes the start of a chat completion whose content runs on for size
// bytes (forever when size < 0).
func hostileCompletion(w io.Writer, size int64) {
	io.WriteString(w, `{"id": "x", "object": "chat.completion", "model": "fake-model", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Thought: `)
	chunk := []byte(strings.Repeat("a", 64<<10))
	for sent := int64(0); size < 0 || sent < size; sent += int64(len(chunk)) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
	io.WriteString(w, `"}}]}`)
}

func TestHostileServerMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams gigabytes to the child")
	}
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	hostileCompletion(zw, 512<<20)
	zw.Close()
	model := newFakeModel(t)
	fake := llmtest.NewServer(t, model.handle)
	for _, tc := range []struct {
		name  string
		serve func(w http.ResponseWriter)
	}{
		{"a well-behaved server, for comparison", nil},
		{"1 GiB body", func(w http.ResponseWriter) { hostileCompletion(w, 1<<30) }},
		{"endless body", func(w http.ResponseWriter) { hostileCompletion(w, -1) }},
		{"gzip bomb", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := fake.URL
			if tc.serve != nil {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/json")
					tc.serve(w)
				}))
				defer srv.Close()
				url = srv.URL + "/v1"
			}
			dir := t.TempDir()
			cfg := testConfig(t, filepath.Join(dir, "cfg"), url, map[string]any{
				"task.limit": 64, "generate.concurrency": 16, "llm.timeout": "30s",
			})
			out := filepath.Join(dir, "run")
			c := startChild(t, childEnv{vars: map[string]string{"OPENAI_API_KEY": "k"}}, "generate", "--config", cfg, "--out", out)
			code := c.wait(t)
			ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage)
			if !ok {
				t.Skip("no rusage on this system")
			}
			peak := ru.Maxrss << 10 // Linux reports KiB
			t.Logf("%s: exit %d, peak RSS %d MiB (bound %d MiB)", tc.name, code, peak>>20, peakRSSBound>>20)
			if peak > peakRSSBound {
				t.Errorf("peak RSS %d MiB, over the documented %d MiB", peak>>20, peakRSSBound>>20)
			}
			if tc.serve == nil {
				if code != 0 {
					t.Errorf("exit %d:\n%s", code, c.stderr.String())
				}
				return
			}
			log, _ := os.ReadFile(filepath.Join(out, "episodes.jsonl"))
			if code == 0 || !strings.Contains(c.stderr.String()+string(log), "response body too large") {
				t.Errorf("exit %d; the run does not report the oversized responses:\n%.3000s", code, c.stderr.String())
			}
		})
	}
}
