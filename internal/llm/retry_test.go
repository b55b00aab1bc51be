package llm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

// sleeps records the backoffs WithRetry asked for, without waiting.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

// TestRetryRecoversEveryRetryableFault fails the first two requests with each fault and
// expects WithRetry to come back with the third.
func TestRetryRecoversEveryRetryableFault(t *testing.T) {
	for _, f := range []llmtest.Fault{llmtest.Fault429, llmtest.Fault500, llmtest.Fault503, llmtest.FaultTimeout,
		llmtest.FaultReset, llmtest.FaultHTML, llmtest.FaultInvalidJSON} {
		t.Run(f.String(), func(t *testing.T) {
			for _, req := range []llm.Request{chatReq("q"), promptReq("q")} {
				s := llmtest.NewServer(t, llmtest.Faulty(2, f, llmtest.Text("Finish[yes]")))
				var sl sleeps
				c := llm.WithRetry(newClient(t, s.URL, 200*time.Millisecond), llm.RetryPolicy{MaxRetries: 3, Sleep: sl.sleep})
				resp, err := c.Complete(t.Context(), req)
				if err != nil {
					t.Fatalf("complete: %v", err)
				}
				if resp.Choices[0].Text != "Finish[yes]" || resp.Retries != 2 {
					t.Errorf("got text %q retries %d, want Finish[yes] after 2 retries", resp.Choices[0].Text, resp.Retries)
				}
				if s.Requests() != 3 {
					t.Errorf("requests: got %d, want 3", s.Requests())
				}
			}
		})
	}
}

func TestRetryStopsOnNonRetryable(t *testing.T) {
	for _, f := range []llmtest.Fault{llmtest.FaultModelNotFound, llmtest.FaultUnauthorized} {
		t.Run(f.String(), func(t *testing.T) {
			s := llmtest.NewServer(t, llmtest.Faulty(1, f, llmtest.Text("ok")))
			var sl sleeps
			c := llm.WithRetry(newClient(t, s.URL, 0), llm.RetryPolicy{MaxRetries: 5, Sleep: sl.sleep})
			_, err := c.Complete(t.Context(), chatReq("q"))
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.Status >= 500 || ae.Status < 400 {
				t.Fatalf("got %v, want a 4xx APIError", err)
			}
			if s.Requests() != 1 || len(sl.got()) != 0 {
				t.Errorf("requests %d sleeps %d: want 1 and 0", s.Requests(), len(sl.got()))
			}
		})
	}
}

func TestRetryBackoff(t *testing.T) {
	httpDate := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		retryAfter string
		jitter     bool
		check      func(t *testing.T, ds []time.Duration)
	}{
		{"exponential capped", "", false, func(t *testing.T, ds []time.Duration) {
			want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond}
			if len(ds) != len(want) {
				t.Fatalf("sleeps: got %v, want %v", ds, want)
			}
			for i := range want {
				if ds[i] != want[i] {
					t.Errorf("sleep %d: got %v, want %v", i, ds[i], want[i])
				}
			}
		}},
		{"full jitter", "", true, func(t *testing.T, ds []time.Duration) {
			caps := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond}
			for i, d := range ds {
				if d < 0 || d > caps[i] {
					t.Errorf("sleep %d: got %v, want within [0, %v]", i, d, caps[i])
				}
			}
		}},
		{"retry-after seconds", "12", true, func(t *testing.T, ds []time.Duration) {
			for i, d := range ds {
				if d != 12*time.Second {
					t.Errorf("sleep %d: got %v, want the server's 12s", i, d)
				}
			}
		}},
		{"retry-after date", httpDate, false, func(t *testing.T, ds []time.Duration) {
			for i, d := range ds {
				if d < 80*time.Second || d > 91*time.Second {
					t.Errorf("sleep %d: got %v, want about 90s", i, d)
				}
			}
		}},
		{"retry-after capped", "86400", false, func(t *testing.T, ds []time.Duration) {
			for i, d := range ds {
				if d != 5*time.Minute {
					t.Errorf("sleep %d: got %v, want the 5m cap", i, d)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.Fault429, RetryAfter: tt.retryAfter}))
			var sl sleeps
			c := llm.WithRetry(newClient(t, s.URL, 0), llm.RetryPolicy{
				MaxRetries: 4, Base: 100 * time.Millisecond, Max: 500 * time.Millisecond, Jitter: tt.jitter, Sleep: sl.sleep,
			})
			_, err := c.Complete(t.Context(), chatReq("q"))
			if !errors.Is(err, llm.ErrRetriesExhausted) {
				t.Errorf("got %v, want ErrRetriesExhausted", err)
			}
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.Status != 429 {
				t.Errorf("got %v, want it to wrap the 429", err)
			}
			if !strings.Contains(err.Error(), "after 5 tries") {
				t.Errorf("error %q: want the number of tries", err)
			}
			if s.Requests() != 5 {
				t.Errorf("requests: got %d, want 5", s.Requests())
			}
			ds := sl.got()
			if len(ds) != 4 {
				t.Fatalf("sleeps: got %d, want 4", len(ds))
			}
			tt.check(t, ds)
		})
	}
}

func TestRetryStopsOnContext(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.Fault503}))
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	c := llm.WithRetry(newClient(t, s.URL, 0), llm.RetryPolicy{MaxRetries: 100, Sleep: func(ctx context.Context, d time.Duration) error {
		calls++
		if calls == 2 {
			cancel()
		}
		return ctx.Err()
	}})
	_, err := c.Complete(ctx, chatReq("q"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if s.Requests() != 2 {
		t.Errorf("requests: got %d, want 2", s.Requests())
	}
}

func TestRetryRealSleepHonoursContext(t *testing.T) {
	s := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.Fault429, RetryAfter: "3600"}))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := llm.WithRetry(newClient(t, s.URL, 0), llm.RetryPolicy{MaxRetries: 3}).Complete(ctx, chatReq("q"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the context's deadline", err)
	}
}
