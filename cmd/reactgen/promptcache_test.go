package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestPromptCachePricing runs against a server that reports most of every prompt as read
// from its prompt cache: the run is priced at the cached-input price, and stats and the
// dataset card show the cost per kept trajectory with and without prompt caching.
func TestPromptCachePricing(t *testing.T) {
	model := newFakeModel(t)
	srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		rep := model.handle(ctx, r)
		rep.PromptTokens, rep.CachedTokens, rep.CompletionTokens = 1000, 800, 50
		return rep
	})
	dir := t.TempDir()
	// USD per 1M tokens: a request costs 200*1 + 800*0.25 + 50*2 = 500 micro-USD, and
	// 1000*1 + 50*2 = 1,100 without the cache.
	cfg := testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{
		"task.limit": 12,
		"llm.prices": map[string]any{"fake-model": map[string]any{"prompt": 1.0, "cached_prompt": 0.25, "completion": 2.0}},
	})
	out := filepath.Join(dir, "run")
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	res := invoke(t, "", nil, "stats", "--run", out, "--json")
	if res.code != 0 {
		t.Fatalf("stats: %s", res.stderr)
	}
	var s pipeline.Summary
	if err := json.Unmarshal([]byte(res.stdout), &s); err != nil {
		t.Fatal(err)
	}
	requests := float64(srv.Requests())
	if s.Kept == 0 || s.LLMCalls != int(requests) {
		t.Fatalf("kept %d, calls %d, server requests %v: want some kept and every request recorded", s.Kept, s.LLMCalls, requests)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if want := requests * 800; s.Usage.CachedTokens != int(want) {
		t.Errorf("cached tokens: got %d, want %v", s.Usage.CachedTokens, want)
	}
	if want := requests * 500e-6 / float64(s.Kept); !near(s.CostPerKept, want) {
		t.Errorf("cost per kept: got %v, want %v", s.CostPerKept, want)
	}
	if want := requests * 1100e-6 / float64(s.Kept); !near(s.CostPerKeptNoCache, want) {
		t.Errorf("cost per kept without prompt caching: got %v, want %v", s.CostPerKeptNoCache, want)
	}
	card, err := os.ReadFile(filepath.Join(out, "export", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(card), "cost per kept trajectory without prompt caching (USD)") {
		t.Errorf("card has no cost per kept trajectory without prompt caching:\n%s", card)
	}
	if text := invoke(t, "", nil, "stats", "--run", out).stdout; !strings.Contains(text, "without caching") {
		t.Errorf("stats text has no cost without caching:\n%s", text)
	}
}
