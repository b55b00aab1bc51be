package main

// A misbehaving model server, through reactgen's command line in-process (invoke): every
// fault of llmtest on some requests, a persistent fault on some questions, and a server
// that fails every request.

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// faultQuestions is the task.limit of the fault tests.
const faultQuestions = 30

// questionOf is the question of a chat request.
func questionOf(r llmtest.Req) string {
	if len(r.Messages) < 2 {
		return ""
	}
	_, q, _ := strings.Cut(r.Messages[1].Content, ": ")
	return q
}

func hashOf(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// generateWith runs `reactgen generate` in-process against srv into dir/run.
func generateWith(t *testing.T, dir, url string, sets map[string]any, env map[string]string) (result, string) {
	t.Helper()
	cfg := testConfig(t, filepath.Join(dir, "cfg"), url, sets)
	out := filepath.Join(dir, "run")
	if env == nil {
		env = map[string]string{"OPENAI_API_KEY": "sk-test"}
	}
	return invoke(t, "", env, "generate", "--config", cfg, "--out", out), out
}

func TestTransientFaultsAreRetriedAndNothingIsLost(t *testing.T) {
	huge := strings.Repeat("very long thought ", 1<<13) // ~150 KB, from a server ignoring max_tokens
	cases := []struct {
		name  string
		reply llmtest.Reply
		sets  map[string]any
		retry bool // the fault is retried (it shows in the manifest's retries)
	}{
		{"429 with Retry-After", llmtest.Reply{Fault: llmtest.Fault429, RetryAfter: "1"}, nil, true},
		{"429 without Retry-After", llmtest.Reply{Fault: llmtest.Fault429}, nil, true},
		{"500", llmtest.Reply{Fault: llmtest.Fault500}, nil, true},
		{"503", llmtest.Reply{Fault: llmtest.Fault503}, nil, true},
		{"timeout", llmtest.Reply{Fault: llmtest.FaultTimeout}, map[string]any{"llm.timeout": "300ms"}, true},
		{"connection reset mid-response", llmtest.Reply{Fault: llmtest.FaultReset}, nil, true},
		{"invalid JSON", llmtest.Reply{Fault: llmtest.FaultInvalidJSON}, nil, true},
		{"HTML error page", llmtest.Reply{Fault: llmtest.FaultHTML}, nil, true},
		{"empty completion", llmtest.Reply{Fault: llmtest.FaultEmpty}, nil, false},
		// Replies that hold no completion are malformed, not empty completions: retried.
		{"null reply", llmtest.Reply{Body: "null"}, nil, true},
		{"no choices", llmtest.Reply{Body: `{"id":"chatcmpl-x","object":"chat.completion","created":1,"model":"fake-model","choices":[]}`}, nil, true},
		{"null content", llmtest.Reply{Body: `{"id":"chatcmpl-x","object":"chat.completion","created":1,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`}, nil, true},
		{"completion cut at max_tokens", llmtest.Reply{Texts: []string{"Thought: " + strings.Repeat("and then ", 120)}, FinishReason: "length"}, nil, false},
		// Rules observations are cut at env.max_observation_chars; paper ones, like the
		// paper's, echo the searched entity whole.
		{"enormous completion ignoring max_tokens", llmtest.Reply{Texts: []string{"Thought: " + huge + "\nAction: Search[" + huge + "]"}}, map[string]any{"env.observations": "rules"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := newFakeModel(t)
			var faults atomic.Int64
			// After the first few requests succeed, every third request misbehaves once:
			// its retry (or the agent's re-ask) is answered normally.
			seen := map[string]bool{}
			var mu = make(chan struct{}, 1)
			model.fault = func(n int64, r llmtest.Req) (llmtest.Reply, bool) {
				if n <= 4 || n%3 != 0 {
					return llmtest.Reply{}, false
				}
				mu <- struct{}{}
				defer func() { <-mu }()
				k := fmt.Sprint(r.Messages)
				if seen[k] {
					return llmtest.Reply{}, false
				}
				seen[k] = true
				faults.Add(1)
				return tc.reply, true
			}
			srv := llmtest.NewServer(t, model.handle)
			sets := map[string]any{"task.limit": faultQuestions}
			for k, v := range tc.sets {
				sets[k] = v
			}
			res, out := generateWith(t, t.TempDir(), srv.URL, sets, nil)
			if res.code != 0 {
				t.Fatalf("exit %d, want 0; stderr:\n%s", res.code, res.stderr)
			}
			eps := logLines(t, filepath.Join(out, pipeline.EpisodesFile))
			eff := effective(eps)
			if len(eff) != faultQuestions {
				t.Errorf("episodes: got %d, want %d (none dropped)", len(eff), faultQuestions)
			}
			maxRecord := 0
			for _, ep := range eff {
				if ep.StopReason == pipeline.StopError && ep.Error == "" {
					t.Errorf("episode %s: stop_reason error without its error", ep.ID)
				}
				for i, st := range ep.Steps {
					if n := len([]rune(st.Observation)); n > 2000 {
						t.Errorf("episode %s step %d: observation of %d characters, want at most env.max_observation_chars (2000)", ep.ID, i+1, n)
					}
				}
				maxRecord = max(maxRecord, len(fmt.Sprint(ep)))
			}
			m := readManifest(t, out)
			st := m.Stages["generate"]
			if st == nil || st.Status != "done" {
				t.Fatalf("generate stage: %+v, want done", st)
			}
			if faults.Load() == 0 {
				t.Fatal("the fault was never injected")
			}
			if tc.retry && st.Counts["retries"] == 0 {
				t.Errorf("manifest counts no retries though %d faults were injected: %v", faults.Load(), st.Counts)
			}
			if tc.reply.Fault == llmtest.FaultEmpty {
				// An empty completion holds no action: the agent asks again, and counts it.
				bad := 0
				for _, ep := range eff {
					bad += ep.BadCalls
				}
				if bad == 0 {
					t.Errorf("no bad call counted though %d empty completions came", faults.Load())
				}
			}
			t.Logf("%d faults, counts %v, largest record ~%d bytes", faults.Load(), st.Counts, maxRecord)
		})
	}
}

func TestPersistentFailuresAreRecordedAndRetriedOnResume(t *testing.T) {
	cases := []struct {
		name  string
		reply llmtest.Reply
	}{
		{"500 after retries", llmtest.Reply{Fault: llmtest.Fault500}},
		{"HTML page after retries", llmtest.Reply{Fault: llmtest.FaultHTML}},
		{"model_not_found on one backend", llmtest.Reply{Fault: llmtest.FaultModelNotFound}},
		{"reset after retries", llmtest.Reply{Fault: llmtest.FaultReset}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := newFakeModel(t)
			var broken atomic.Bool
			broken.Store(true)
			// Questions with hash%4 == 0 always fail while broken, once some request
			// has succeeded (so the breaker knows the server works).
			var ok atomic.Int64
			model.fault = func(n int64, r llmtest.Req) (llmtest.Reply, bool) {
				if broken.Load() && ok.Load() > 2 && hashOf(questionOf(r))%4 == 0 {
					return tc.reply, true
				}
				ok.Add(1)
				return llmtest.Reply{}, false
			}
			srv := llmtest.NewServer(t, model.handle)
			dir := t.TempDir()
			res, out := generateWith(t, dir, srv.URL, map[string]any{"task.limit": faultQuestions, "generate.concurrency": 2}, nil)
			if res.code != 0 {
				t.Fatalf("exit %d, want 0; stderr:\n%s", res.code, res.stderr)
			}
			eff := effective(logLines(t, filepath.Join(out, pipeline.EpisodesFile)))
			if len(eff) != faultQuestions {
				t.Errorf("episodes: got %d, want %d (a failed episode is recorded, never dropped)", len(eff), faultQuestions)
			}
			failed := 0
			for _, ep := range eff {
				if ep.StopReason == pipeline.StopError {
					failed++
					if ep.Error == "" {
						t.Errorf("episode %s: stop_reason error but no error text", ep.ID)
					}
				}
			}
			if failed == 0 {
				t.Fatal("no episode was recorded with stop_reason error")
			}
			t.Logf("%d episodes failed; counts %v", failed, readManifest(t, out).Stages["generate"].Counts)

			broken.Store(false)
			before := srv.Requests()
			res, out = generateWith(t, dir, srv.URL, map[string]any{"task.limit": faultQuestions, "generate.concurrency": 2}, nil)
			if res.code != 0 {
				t.Fatalf("resume: exit %d; stderr:\n%s", res.code, res.stderr)
			}
			if srv.Requests() == before {
				t.Error("the resume sent no request: the failed episodes were not tried again")
			}
			eff = effective(logLines(t, filepath.Join(out, pipeline.EpisodesFile)))
			if len(eff) != faultQuestions {
				t.Errorf("after resume: %d episodes, want %d", len(eff), faultQuestions)
			}
			for id, ep := range eff {
				if ep.StopReason == pipeline.StopError {
					t.Errorf("episode %s: still failed after the resume against a healthy server: %s", id, ep.Error)
				}
			}
		})
	}
}

func TestEveryRequestFailingStopsTheRunAtOnce(t *testing.T) {
	const concurrency = 8
	cases := []struct {
		name  string
		reply llmtest.Reply
		url   bool // a closed port instead of the fake server
		want  string
	}{
		{"closed port", llmtest.Reply{}, true, "connect"},
		{"401 wrong key", llmtest.Reply{Fault: llmtest.FaultUnauthorized}, false, "invalid_api_key"},
		{"404 wrong model", llmtest.Reply{Fault: llmtest.FaultModelNotFound}, false, "model_not_found"},
		{"500 on everything", llmtest.Reply{Fault: llmtest.Fault500}, false, "500"},
		{"HTML on everything", llmtest.Reply{Fault: llmtest.FaultHTML}, false, "502"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply { return tc.reply })
			url := srv.URL
			if tc.url {
				url = "http://" + llmtest.FreeAddr(t) + "/v1"
			}
			res, out := generateWith(t, t.TempDir(), url, map[string]any{
				"task.limit": 60, "generate.concurrency": concurrency, "llm.max_retries": 1,
			}, nil)
			if res.code != exitFailure {
				t.Fatalf("exit %d, want %d; stderr:\n%s", res.code, exitFailure, res.stderr)
			}
			if n := strings.Count(res.stderr, "every request to"); n != 1 {
				t.Errorf("the message %q appears %d times, want once:\n%s", "every request to", n, res.stderr)
			}
			if !strings.Contains(res.stderr, tc.want) {
				t.Errorf("the message does not say why (%q):\n%s", tc.want, res.stderr)
			}
			// Requests: the breaker's 3 plus the retries of those in flight at most.
			if n := srv.Requests(); n > 2*(concurrency+3) {
				t.Errorf("the server saw %d requests, want at most %d: the run burnt through the questions", n, 2*(concurrency+3))
			}
			eps := logLines(t, filepath.Join(out, pipeline.EpisodesFile))
			if len(eps) > concurrency+3 {
				t.Errorf("%d episodes were attempted, want at most %d", len(eps), concurrency+3)
			}
			for _, ep := range eps {
				if !ep.Retryable() {
					t.Errorf("episode %s: stop_reason %s, want a retryable one (error)", ep.ID, ep.StopReason)
				}
			}
			if st := readManifest(t, out).Stages["generate"]; st == nil || st.Status != "failed" {
				t.Errorf("generate stage: %+v, want failed", st)
			}
			t.Logf("%d requests, %d episodes; stderr:\n%s", srv.Requests(), len(eps), res.stderr)
		})
	}
}
