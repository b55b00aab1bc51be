package llm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// outputLines splits a batch output file into its lines, keyed by the question number
// that the echo handler's answer ("re: q N") carries.
func outputLines(t *testing.T, out []byte) map[int]map[string]any {
	t.Helper()
	lines := map[int]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Errorf("fake output line: %v", err)
			continue
		}
		body := l["response"].(map[string]any)["body"].(map[string]any)
		text := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
		var n int
		if _, err := fmt.Sscanf(text, "re: q %d", &n); err != nil {
			t.Errorf("fake answer %q", text)
		}
		lines[n] = l
	}
	return lines
}

func jsonLine(v any) []byte {
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// setContent replaces the message of an output line's first choice.
func setMessage(l map[string]any, msg map[string]any) map[string]any {
	body := l["response"].(map[string]any)["body"].(map[string]any)
	body["choices"].([]any)[0].(map[string]any)["message"] = msg
	return l
}

// TestBatchHostileOutputFiles answers one wave with output and error files a server gone
// wrong could write, and checks each bad line costs its own request only: a repeated
// custom_id keeps its first answer, an id in both files keeps its answer and is not
// bought again, an unreadable line fails its request alone (which the next wave asks
// again), a line over the line bound and a reply of 20,000 tool calls are refused
// without a retry, and a line with no custom_id is counted.
func TestBatchHostileOutputFiles(t *testing.T) {
	srv := llmtest.NewServer(t, echo)
	var ids sync.Map // question number -> custom_id
	srv.TamperBatchFiles(func(n int, out, errs []byte) ([]byte, []byte) {
		if n != 1 {
			return out, errs
		}
		lines := outputLines(t, out)
		var o, e bytes.Buffer
		for i := range 6 {
			l := lines[i]
			id := l["custom_id"].(string)
			ids.Store(i, id)
			switch i {
			case 0: // repeated: the second copy says something else
				o.Write(jsonLine(l))
				o.Write(jsonLine(setMessage(l, map[string]any{"role": "assistant", "content": "re: the repeat"})))
			case 1: // answered, and failed in the error file too
				o.Write(jsonLine(l))
				e.Write(jsonLine(map[string]any{"id": "batch_req_e1", "custom_id": id, "response": map[string]any{"status_code": 500,
					"body": map[string]any{"error": map[string]any{"message": "The server had an error", "type": "server_error"}}}, "error": nil}))
			case 2: // cut short: not JSON
				o.WriteString(`{"id":"batch_req_2","custom_id":"` + id + `","response":{"status_code":200,"body":{"choices":[` + "\n")
			case 3: // a 5 MB completion: over the line bound of a request for 64 tokens
				o.Write(jsonLine(setMessage(l, map[string]any{"role": "assistant", "content": strings.Repeat("x", 5<<20)})))
			case 4: // 20,000 tool calls
				calls := make([]any, 20000)
				for j := range calls {
					calls[j] = map[string]any{"id": fmt.Sprintf("call_%d", j), "type": "function",
						"function": map[string]any{"name": "search", "arguments": `{"entity":"x"}`}}
				}
				o.Write(jsonLine(setMessage(l, map[string]any{"role": "assistant", "content": nil, "tool_calls": calls})))
			default:
				o.Write(jsonLine(l))
			}
		}
		o.WriteString("this line is not JSON and names no request\n")
		return o.Bytes(), e.Bytes()
	})
	cs := batchClient(t, srv, t.TempDir(), nil)
	resps := make([]llm.Response, 6)
	errs := make([]error, 6)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() { resps[i], errs[i] = cs.Client.Complete(t.Context(), chatReq(fmt.Sprintf("q %d", i))) })
	}
	wg.Wait()
	for _, i := range []int{0, 1, 2, 5} {
		if errs[i] != nil || resps[i].Choices[0].Text != fmt.Sprintf("re: q %d", i) {
			t.Errorf("request %d: %v, %+v; want its own answer", i, errs[i], resps[i].Choices)
		}
	}
	for _, i := range []int{3, 4} {
		if !errors.Is(errs[i], llm.ErrResponseTooLarge) || llm.IsRetryable(errs[i]) {
			t.Errorf("request %d: %v, want ErrResponseTooLarge, not retried", i, errs[i])
		}
	}
	if errs[4] == nil || !strings.Contains(errs[4].Error(), "20000 tool calls") {
		t.Errorf("request 4: %v, want the tool calls named", errs[4])
	}
	// Only the unreadable line went out again.
	bought := srv.BatchLineIDs()
	for i := range 6 {
		id, _ := ids.Load(i)
		want := 1
		if i == 2 {
			want = 2
		}
		if got := bought[id.(string)]; got != want {
			t.Errorf("request %d bought %d times, want %d", i, got, want)
		}
	}
	st := cs.Batch.Stats()
	if st.Duplicates != 2 || st.Malformed != 3 || len(srv.Batches()) != 2 {
		t.Errorf("stats %+v, %d batches: want 2 duplicates, 3 unreadable lines, 2 batches", st, len(srv.Batches()))
	}
}

// TestBatchDirLockedByItsRun: a second client on the same llm.batch.dir is refused with
// an error naming the key, and takes the directory once the first closes.
func TestBatchDirLockedByItsRun(t *testing.T) {
	srv := llmtest.NewServer(t, echo)
	dir := t.TempDir()
	first := batchClient(t, srv, dir, nil)
	cfg := pipeline.Default().LLM
	cfg.BaseURL, cfg.Mode, cfg.Cache = srv.URL, "batch", false
	cfg.Batch.Window, cfg.Batch.Poll, cfg.Batch.Dir = 30*time.Millisecond, time.Millisecond, dir
	_, err := llm.NewClient(t.Context(), llm.Options{Config: cfg})
	var le *pipeline.LockedError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "llm.batch.dir") || !strings.Contains(err.Error(), "give each its own") {
		t.Fatalf("second client on the directory: %v, want a LockedError naming llm.batch.dir", err)
	}
	askAll(t, first.Client, 3, "q")
	first.Close()
	second, err := llm.NewClient(t.Context(), llm.Options{Config: cfg})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	second.Close()
}

// TestBatchResumeWithoutBatchList: a server with no GET /v1/batches, and a run stopped
// between upload and create. The next run does not fail: it creates the batch from the
// recorded upload (uploading nothing again) and answers every request.
func TestBatchResumeWithoutBatchList(t *testing.T) {
	release := make(chan struct{})
	srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		<-release
		return echo(ctx, r)
	})
	srv.NoBatchList()
	dir := t.TempDir()
	stopWithBatchOut(t, srv, dir, 10)
	llmtest.ForgetBatchID(t, dir)
	close(release)
	second := batchClient(t, srv, dir, nil)
	askAll(t, second.Client, 10, "q")
	if srv.Uploads() != 1 {
		t.Errorf("%d uploads, want the first alone", srv.Uploads())
	}
	if st := second.Batch.Stats(); st.Attached != 1 || st.Waves != 0 {
		t.Errorf("second batcher: %+v, want the wave taken up, none new", st)
	}
}
