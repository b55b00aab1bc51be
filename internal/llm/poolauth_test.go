package llm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// poolClient is the whole client chain over llm.endpoints at urls, without the cache.
func poolClient(t *testing.T, log *bytes.Buffer, stall time.Duration, urls ...string) llm.Clients {
	t.Helper()
	cfg := pipeline.Default().LLM
	cfg.Model, cfg.Cache, cfg.MaxRetries, cfg.BackoffBase, cfg.BackoffMax = "fake-chat", false, 3, time.Millisecond, time.Millisecond
	cfg.StallTimeout, cfg.Timeout = stall, time.Hour
	for _, u := range urls {
		cfg.Endpoints = append(cfg.Endpoints, pipeline.EndpointConfig{BaseURL: u, Concurrency: 4})
	}
	cs, err := llm.NewClient(t.Context(), llm.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(log, nil)),
		Getenv: func(string) string { return "sk-test" }})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestPoolEndpointRefusingTheKeyIsTakenOut: of two endpoints, one answers 401. It is
// taken out for the run with a message naming it, and every request is served by the
// other; with both refusing, the error names both endpoints and no other URL.
func TestPoolEndpointRefusingTheKeyIsTakenOut(t *testing.T) {
	bad := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.FaultUnauthorized}))
	good := llmtest.NewServer(t, llmtest.Text("ok"))
	var log bytes.Buffer
	cs := poolClient(t, &log, 0, bad.URL, good.URL)
	for i, err := range fanOut(t, cs.Client, 30, func(i int) llm.Request { return chatReq(fmt.Sprint(i)) }) {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	st := cs.Pool.Stats()
	if !strings.Contains(st[0].Disabled, "401") || st[1].Served != 30 || bad.Requests() > 4 {
		t.Errorf("stats %+v; the refusing endpoint saw %d requests: want it out after its first answers, the other serving all 30", st, bad.Requests())
	}
	if !strings.Contains(log.String(), "refused the API key") || !strings.Contains(log.String(), bad.URL) {
		t.Errorf("log does not name the endpoint taken out:\n%s", log.String())
	}

	other := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.FaultUnauthorized}))
	cs = poolClient(t, &log, 0, bad.URL, other.URL)
	_, err := cs.Client.Complete(t.Context(), chatReq("x"))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Status != 401 || !strings.Contains(err.Error(), bad.URL) || !strings.Contains(err.Error(), other.URL) ||
		strings.Contains(err.Error(), "api.openai.com") {
		t.Errorf("both refusing: %v; want the 401 naming both endpoints and no other URL", err)
	}
}

// TestPoolStalledEndpointRequestsMove: one endpoint never answers (llm.timeout is an
// hour); after llm.stall_timeout its requests move to the other, which answers them all.
func TestPoolStalledEndpointRequestsMove(t *testing.T) {
	hung := llmtest.NewServer(t, func(ctx context.Context, _ llmtest.Req) llmtest.Reply {
		<-ctx.Done()
		return llmtest.Reply{Texts: []string{"too late"}}
	})
	good := llmtest.NewServer(t, llmtest.Text("ok"))
	var log bytes.Buffer
	cs := poolClient(t, &log, 20*time.Millisecond, hung.URL, good.URL)
	for i, err := range fanOut(t, cs.Client, 16, func(i int) llm.Request { return chatReq(fmt.Sprint(i)) }) {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	st := cs.Pool.Stats()
	if st[0].Served != 0 || st[1].Served != 16 || st[0].Stalled == 0 {
		t.Errorf("stats %+v: want the hung endpoint's requests moved (stalled > 0), all 16 served by the other", st)
	}
}
