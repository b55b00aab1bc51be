package retry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// waits records the sleeps Do asked for, without waiting.
type waits []time.Duration

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	*w = append(*w, d)
	return ctx.Err()
}

var errBusy = errors.New("busy")

// failing fails its first n tries with err, then succeeds.
func failing(n int, err error) (func(context.Context) error, *int) {
	calls := 0
	return func(context.Context) error {
		calls++
		if calls <= n {
			return err
		}
		return nil
	}, &calls
}

func always(v Verdict, after time.Duration) func(error) (Verdict, time.Duration) {
	return func(error) (Verdict, time.Duration) { return v, after }
}

func TestDo(t *testing.T) {
	tests := []struct {
		name      string
		fails     int
		verdict   Verdict
		after     time.Duration
		wantTries int
		wantWaits []time.Duration
		exhausted bool
	}{
		{"first try", 0, Again, 0, 1, nil, false},
		{"recovers", 2, Again, 0, 3, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, false},
		{"exponential capped", 9, Again, 0, 5,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond}, true},
		{"longer retry-after wins", 9, Again, 12 * time.Second, 5,
			[]time.Duration{12 * time.Second, 12 * time.Second, 12 * time.Second, 12 * time.Second}, true},
		{"shorter retry-after loses", 9, Again, 150 * time.Millisecond, 5,
			[]time.Duration{150 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond}, true},
		{"retry-after capped", 9, Again, time.Hour, 5, []time.Duration{MaxAfter, MaxAfter, MaxAfter, MaxAfter}, true},
		{"permanent", 9, Permanent, 0, 1, nil, false},
		{"give up", 9, GiveUp, 0, 1, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w waits
			p := Policy{MaxRetries: 4, Base: 100 * time.Millisecond, Max: 500 * time.Millisecond, Sleep: w.sleep}
			try, calls := failing(tt.fails, errBusy)
			tries, err := Do(t.Context(), p, try, always(tt.verdict, tt.after))
			if tries != tt.wantTries || *calls != tt.wantTries {
				t.Errorf("tries %d, calls %d: want %d", tries, *calls, tt.wantTries)
			}
			if len(w) != len(tt.wantWaits) {
				t.Fatalf("waits %v, want %v", w, tt.wantWaits)
			}
			for i := range w {
				if w[i] != tt.wantWaits[i] {
					t.Errorf("wait %d: got %v, want %v", i, w[i], tt.wantWaits[i])
				}
			}
			switch {
			case tt.fails < tt.wantTries:
				if err != nil {
					t.Errorf("got %v, want success", err)
				}
			case tt.exhausted:
				var ex *Exhausted
				if !errors.Is(err, ErrExhausted) || !errors.Is(err, errBusy) || !errors.As(err, &ex) || ex.Tries != tt.wantTries {
					t.Errorf("got %v, want an *Exhausted of %d tries wrapping errBusy", err, tt.wantTries)
				}
				if want := "gave up after"; !strings.Contains(err.Error(), want) {
					t.Errorf("error %q: want %q", err, want)
				}
			default:
				if err != errBusy {
					t.Errorf("got %v, want errBusy as it is", err)
				}
			}
		})
	}
}

func TestBackoffJitter(t *testing.T) {
	caps := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}
	for _, tt := range []struct {
		jitter Jitter
		lo, hi func(d time.Duration) time.Duration
	}{
		{NoJitter, func(d time.Duration) time.Duration { return d }, func(d time.Duration) time.Duration { return d }},
		{FullJitter, func(time.Duration) time.Duration { return 0 }, func(d time.Duration) time.Duration { return d }},
		{QuarterAdded, func(d time.Duration) time.Duration { return d }, func(d time.Duration) time.Duration { return d + d/4 }},
	} {
		p := Policy{Base: 100 * time.Millisecond, Max: 500 * time.Millisecond, Jitter: tt.jitter}
		for range 50 {
			for k, c := range caps {
				if d := p.Backoff(k); d < tt.lo(c) || d > tt.hi(c) {
					t.Errorf("jitter %d, retry %d: %v outside [%v, %v]", tt.jitter, k, d, tt.lo(c), tt.hi(c))
				}
			}
		}
	}
	if d := (Policy{}).Backoff(100); d != 30*time.Second {
		t.Errorf("default backoff after many retries: got %v, want the 30s cap", d)
	}
	if d := (Policy{}).Backoff(0); d != 500*time.Millisecond {
		t.Errorf("default first backoff: got %v, want 500ms", d)
	}
}

func TestDoStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	sleeps := 0
	p := Policy{MaxRetries: 100, Sleep: func(ctx context.Context, d time.Duration) error {
		sleeps++
		if sleeps == 2 {
			cancel()
		}
		return ctx.Err()
	}}
	try, calls := failing(1000, errBusy)
	_, err := Do(ctx, p, try, always(Again, 0))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errBusy) {
		t.Errorf("got %v, want context.Canceled wrapping the last error", err)
	}
	if *calls != 2 {
		t.Errorf("tries: got %d, want 2", *calls)
	}
}

func TestSleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	try, _ := failing(1000, errBusy)
	_, err := Do(ctx, Policy{MaxRetries: 3}, try, always(Again, time.Hour))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the context's deadline", err)
	}
}

func TestParseAfter(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		h    string
		want time.Duration
	}{
		{"", 0},
		{"  ", 0},
		{"3", 3 * time.Second},
		{" 3 ", 3 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"0", 0},
		{"-4", 0},
		{"99999", MaxAfter},
		{"1e300", MaxAfter},
		{"NaN", 0},
		{"-Inf", 0},
		{"Inf", MaxAfter},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second},
		{now.Add(time.Hour).Format(http.TimeFormat), MaxAfter},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"soon", 0},
	}
	for _, tt := range tests {
		t.Run(tt.h, func(t *testing.T) {
			if got := ParseAfter(tt.h, now); got != tt.want {
				t.Errorf("ParseAfter(%q): got %v, want %v", tt.h, got, tt.want)
			}
		})
	}
}
