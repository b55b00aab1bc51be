package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// echo answers each request with its last message, so that answers can be checked
// against their requests.
func echo(_ context.Context, r llmtest.Req) llmtest.Reply {
	return llmtest.Reply{Texts: []string{"re: " + r.Messages[len(r.Messages)-1].Content}, PromptTokens: 100, CompletionTokens: 10}
}

// batchClient is llm.mode batch against srv with fast waves and polls.
func batchClient(t *testing.T, srv *llmtest.Server, dir string, prices map[string]pipeline.Price) llm.Clients {
	t.Helper()
	cfg := pipeline.Default().LLM
	cfg.BaseURL, cfg.Mode, cfg.Cache, cfg.Prices, cfg.MaxRetries = srv.URL, "batch", false, prices, 3
	cfg.Batch.Window, cfg.Batch.Poll, cfg.Batch.Dir = 30*time.Millisecond, time.Millisecond, dir
	cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)
	return cs
}

// askAll sends n chat requests at once and checks every answer against its request.
func askAll(t *testing.T, c llm.Client, n int, prefix string) []llm.Response {
	t.Helper()
	out := make([]llm.Response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out[i], errs[i] = c.Complete(t.Context(), chatReq(fmt.Sprintf("%s %d", prefix, i)))
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if want := fmt.Sprintf("re: %s %d", prefix, i); out[i].Choices[0].Text != want {
			t.Fatalf("request %d: got %q, want %q", i, out[i].Choices[0].Text, want)
		}
	}
	return out
}

func TestBatchOneWaveAtBatchPrice(t *testing.T) {
	srv := llmtest.NewServer(t, echo)
	prices := map[string]pipeline.Price{"fake-chat": {Prompt: 2, Completion: 10}}
	dir := t.TempDir()
	cs := batchClient(t, srv, dir, prices)
	resps := askAll(t, cs.Client, 50, "q")
	if b := srv.Batches(); len(b) != 1 || b[0].Lines != 50 || b[0].Status != "completed" || b[0].Endpoint != "/v1/chat/completions" {
		t.Errorf("batches: %+v, want one of 50 lines", b)
	}
	want := 0.5 * (100*2 + 10*10) / 1e6
	if math.Abs(resps[0].CostUSD-want) > 1e-12 || math.Abs(cs.Budget.Spent().Usage.CostUSD-50*want) > 1e-9 {
		t.Errorf("cost %v per request, %v spent: want %v per request at half price", resps[0].CostUSD, cs.Budget.Spent().Usage.CostUSD, want)
	}
	// Every line is the online request's body, temperature 0 included.
	b, err := os.ReadFile(filepath.Join(dir, "wave-00001.input.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l struct {
			Method, URL string
			Body        map[string]any
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if l.Method != "POST" || l.URL != "/v1/chat/completions" || l.Body["temperature"] != 0.0 || l.Body["max_tokens"] != 64.0 {
			t.Fatalf("input line %s", line)
		}
	}
}

func TestBatchWavesFollowTheSteps(t *testing.T) {
	srv := llmtest.NewServer(t, echo)
	cs := batchClient(t, srv, t.TempDir(), nil)
	// 40 callers, each asking three times in a row: three waves of 40.
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			for step := range 3 {
				if _, err := cs.Client.Complete(t.Context(), chatReq(fmt.Sprintf("caller %d step %d", i, step))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b := srv.Batches()
	if len(b) != 3 {
		t.Fatalf("batches: %d, want 3", len(b))
	}
	for _, x := range b {
		if x.Lines != 40 {
			t.Errorf("batch %s: %d lines, want 40", x.ID, x.Lines)
		}
	}
}

func TestBatchFaults(t *testing.T) {
	tests := []struct {
		name    string
		fault   llmtest.BatchFault
		batches int // batches until every request is answered
	}{
		{"partly failed", llmtest.BatchPartlyFailed, 2},
		{"expired", llmtest.BatchExpired, 2},
		{"cancelled", llmtest.BatchCancelled, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, echo)
			srv.SetBatchFaults(func(n int) llmtest.BatchFault {
				if n == 1 {
					return tt.fault
				}
				return llmtest.BatchOK
			})
			cs := batchClient(t, srv, t.TempDir(), nil)
			askAll(t, cs.Client, 30, "q")
			b := srv.Batches()
			if len(b) != tt.batches {
				t.Fatalf("batches: %+v", b)
			}
			// Only the lines that failed went out again.
			if retried := b[1].Lines; retried == 0 || retried >= 30 || cs.Batch.Stats().Retried != retried {
				t.Errorf("second batch has %d lines, %d retried: want only the failed ones", retried, cs.Batch.Stats().Retried)
			}
		})
	}
	t.Run("validation failed", func(t *testing.T) {
		srv := llmtest.NewServer(t, echo)
		srv.SetBatchFaults(func(int) llmtest.BatchFault { return llmtest.BatchValidationFailed })
		cs := batchClient(t, srv, t.TempDir(), nil)
		_, err := cs.Client.Complete(t.Context(), chatReq("q"))
		var ae *llm.APIError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "the fake refused the batch") || llm.IsRetryable(err) {
			t.Errorf("got %v, want the batch's validation error, not retryable", err)
		}
	})
	t.Run("a line the server refuses", func(t *testing.T) {
		srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
			if strings.Contains(r.Messages[0].Content, "bad") {
				return llmtest.Reply{Fault: llmtest.FaultModelNotFound}
			}
			return echo(ctx, r)
		})
		cs := batchClient(t, srv, t.TempDir(), nil)
		var wg sync.WaitGroup
		var good, bad error
		wg.Go(func() { _, good = cs.Client.Complete(t.Context(), chatReq("good")) })
		wg.Go(func() { _, bad = cs.Client.Complete(t.Context(), chatReq("bad")) })
		wg.Wait()
		var ae *llm.APIError
		if good != nil || !errors.As(bad, &ae) || ae.Status != 404 || len(srv.Batches()) != 1 {
			t.Errorf("good %v, bad %v, batches %d: want the bad line's 404 alone, in one batch", good, bad, len(srv.Batches()))
		}
	})
}

// TestBatchResumeReattaches closes a batcher while its batch is out and opens another on
// the same directory: it asks for the same requests, waits for the batch that is out,
// and submits nothing again.
func TestBatchResumeReattaches(t *testing.T) {
	for _, crash := range []string{"after create", "between upload and create"} {
		t.Run(crash, func(t *testing.T) {
			release := make(chan struct{})
			srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
				<-release // the first batch does not finish while the first process runs
				return echo(ctx, r)
			})
			dir := t.TempDir()
			stopWithBatchOut(t, srv, dir, 20)
			if crash == "between upload and create" {
				llmtest.ForgetBatchID(t, dir)
			}
			close(release)
			second := batchClient(t, srv, dir, nil)
			askAll(t, second.Client, 20, "q")
			if b := srv.Batches(); len(b) != 1 || srv.Uploads() != 1 {
				t.Errorf("batches %+v, uploads %d: want the first batch alone, not resubmitted", b, srv.Uploads())
			}
			if second.Batch.Stats().Attached != 1 || second.Batch.Stats().Waves != 0 {
				t.Errorf("second batcher: %+v", second.Batch.Stats())
			}
		})
	}
}

// stopWithBatchOut runs a batcher on dir that asks n requests ("q 0", "q 1", …) and
// stops it, as a process that ends, once the server holds their batch: its callers give
// up and the batch stays out.
func stopWithBatchOut(t *testing.T, srv *llmtest.Server, dir string, n int) {
	t.Helper()
	first := batchClient(t, srv, dir, nil)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, _ = first.Client.Complete(ctx, chatReq(fmt.Sprintf("q %d", i))) })
	}
	for len(srv.Batches()) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	first.Close()
}

func TestBatchCachedLinesAreNotSent(t *testing.T) {
	srv := llmtest.NewServer(t, echo)
	dir := t.TempDir()
	cfg := pipeline.Default().LLM
	cfg.BaseURL, cfg.Mode = srv.URL, "batch"
	cfg.Batch.Window, cfg.Batch.Poll, cfg.Batch.Dir = 30*time.Millisecond, time.Millisecond, filepath.Join(dir, "batches")
	for range 2 {
		cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg, CacheDir: filepath.Join(dir, "cache")})
		if err != nil {
			t.Fatal(err)
		}
		askAll(t, cs.Client, 10, "q")
		cs.Close()
	}
	if b := srv.Batches(); len(b) != 1 {
		t.Errorf("batches: %d, want 1 (the second run is served by the cache)", len(b))
	}
}

// TestBatchWaveFiles runs waves through files, as for vllm run-batch: the test plays
// vllm, reading each wave's input file and writing its output file.
func TestBatchWaveFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := pipeline.Default().LLM
	cfg.Mode, cfg.Cache, cfg.Batch.Backend = "batch", false, "files"
	cfg.Batch.Window, cfg.Batch.Poll, cfg.Batch.Dir = 30*time.Millisecond, time.Millisecond, dir
	cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		in := filepath.Join(dir, "wave-00001.input.jsonl")
		for {
			if _, err := os.Stat(in); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		b, _ := os.ReadFile(in)
		var out strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var l struct {
				CustomID string `json:"custom_id"`
				Body     struct {
					Model    string `json:"model"`
					Messages []struct{ Content string }
				} `json:"body"`
			}
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Error(err)
				return
			}
			body := map[string]any{"id": "x", "object": "chat.completion", "model": l.Body.Model, "choices": []map[string]any{
				{"index": 0, "message": map[string]string{"role": "assistant", "content": "re: " + l.Body.Messages[0].Content}, "finish_reason": "stop"}},
				"usage": map[string]int{"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
			rec, _ := json.Marshal(map[string]any{"id": "r", "custom_id": l.CustomID, "response": map[string]any{"status_code": 200, "body": body}, "error": nil})
			out.Write(rec)
			out.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, "wave-00001.output.jsonl"), []byte(out.String()), 0o644); err != nil {
			t.Error(err)
		}
	}()
	askAll(t, cs.Client, 5, "q")
	<-done
}

func TestBatchWaveSplitsAtMaxBytes(t *testing.T) {
	srv := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply { return llmtest.Reply{Texts: []string{"ok"}} })
	cfg := pipeline.Default().LLM
	cfg.BaseURL, cfg.Mode, cfg.Cache = srv.URL, "batch", false
	cfg.Batch.Window, cfg.Batch.Poll, cfg.Batch.Dir, cfg.Batch.MaxBytes = 300*time.Millisecond, time.Millisecond, t.TempDir(), 1<<20
	cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	big := strings.Repeat("x", 50<<10) // 30 lines of 50 KiB: 1.5 MiB, over a 1 MiB wave
	errs := fanOut(t, cs.Client, 30, func(i int) llm.Request { return chatReq(fmt.Sprint(i, big)) })
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A line is about 51 KB, so a 1 MiB wave holds at most 20. How the 30 requests fall
	// into waves depends on when each joins (a loaded machine may cut a third wave at
	// the window); what the limit promises is that none is over it and none is lost.
	b := srv.Batches()
	lines := 0
	for _, w := range b {
		lines += w.Lines
		if w.Lines > 20 {
			t.Errorf("a wave of %d lines of 51 KB: over llm.batch.max_bytes 1 MiB", w.Lines)
		}
	}
	if len(b) < 2 || lines != 30 {
		t.Errorf("batches %+v: want 30 lines in at least two waves", b)
	}
}
