package llm

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bigBackend is a Batch API whose every batch completes at once with an output file of
// one large answer per line, produced as it is read: the file is never in memory.
type bigBackend struct {
	mu   sync.Mutex
	ids  []string
	text string // each answer's content
}

func (b *bigBackend) Submit(_ context.Context, path, _ string, _ func(string) error) (string, string, error) {
	ids, err := lineIDs(path)
	if err != nil {
		return "", "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range ids {
		b.ids = append(b.ids, id)
	}
	return "file-in", "batch-1", nil
}

func (b *bigBackend) Status(context.Context, string) (batchStatus, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return batchStatus{State: batchCompleted, Total: len(b.ids), Completed: len(b.ids), OutputFileID: "file-out"}, nil
}

func (b *bigBackend) Output(context.Context, string, batchStatus) (io.ReadCloser, io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return io.NopCloser(&lineStream{ids: append([]string(nil), b.ids...), text: b.text}), nil, nil
}

func (b *bigBackend) Find(context.Context, string) (string, bool, error) { return "", false, nil }
func (b *bigBackend) Create(context.Context, string, string) (string, error) {
	return "", fmt.Errorf("not used")
}

// lineStream writes one Batch API output line per id as it is read.
type lineStream struct {
	ids  []string
	text string
	cur  []byte
	n    int64
}

func (s *lineStream) Read(p []byte) (int, error) {
	for len(s.cur) == 0 {
		if len(s.ids) == 0 {
			return 0, io.EOF
		}
		s.cur = fmt.Appendf(nil, `{"id":"batch_req_1","custom_id":%q,"response":{"status_code":200,"request_id":"req_1","body":{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}},"error":null}`+"\n", s.ids[0], s.text)
		s.ids = s.ids[1:]
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	s.n += int64(n)
	return n, nil
}

// TestBatchOutputStreamsWithinMemory collects a wave whose output file is 400 lines of
// 256 KiB answers (100 MiB) while sampling the heap: the file streams through, one line
// at a time, into the answer store, so the heap grows by a small part of the file; each
// answer comes back cut to the completion bound of its request, as online.
func TestBatchOutputStreamsWithinMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 100 MiB")
	}
	const lines, size = 400, 256 << 10
	be := &bigBackend{text: strings.Repeat("y", size)}
	bt, err := NewBatcher(t.Context(), be, BatchOptions{Dir: t.TempDir(), Window: 50 * time.Millisecond, Poll: time.Millisecond, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
		}
	})
	resps := make([]Response, lines)
	errs := make([]error, lines)
	var wg sync.WaitGroup
	for i := range lines {
		wg.Go(func() {
			resps[i], errs[i] = bt.Complete(t.Context(), Request{Model: "m", Messages: []Message{{Role: "user", Content: fmt.Sprint("q ", i)}}, MaxTokens: 64})
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	for i := range lines {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if c := resps[i].Choices[0]; len(c.Text) != MaxCompletionBytes(64) || c.FinishReason != "length" {
			t.Fatalf("request %d: %d bytes, finish %q; want cut to %d, length", i, len(c.Text), c.FinishReason, MaxCompletionBytes(64))
		}
	}
	file := int64(lines) * size
	growth := int64(peak.Load()) - int64(base)
	t.Logf("output file %d MiB; heap peak %d MiB over the %d MiB before", file>>20, growth>>20, base>>20)
	if growth > file/4 {
		t.Errorf("the heap grew by %d MiB while a %d MiB output file was read: it is held, not streamed", growth>>20, file>>20)
	}
}
