package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestEndpointPoolRun generates through llm.endpoints over two fake servers: both serve,
// the manifest records each one's share, and the printed config hides their keys.
func TestEndpointPoolRun(t *testing.T) {
	model := newFakeModel(t)
	a := llmtest.NewServer(t, model.handle)
	b := llmtest.NewServer(t, model.handle)
	dir := t.TempDir()
	cfg := testConfig(t, filepath.Join(dir, "cfg"), "http://127.0.0.1:1/v1", map[string]any{
		"task.limit": 20,
		"llm.endpoints": []map[string]any{
			{"base_url": a.URL, "concurrency": 2},
			{"base_url": b.URL, "weight": 2, "headers": map[string]string{"Authorization": "Bearer sk-canary-endpoint"}},
		},
	})
	out := filepath.Join(dir, "run")
	if res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "sk-test"}, "generate", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("generate: exit %d: %s", res.code, res.stderr)
	}
	m := readManifest(t, out)
	if len(m.Endpoints) != 2 || m.Endpoints[0].URL != a.URL || m.Endpoints[1].URL != b.URL {
		t.Fatalf("manifest endpoints: %+v", m.Endpoints)
	}
	share := m.Endpoints[0].Share + m.Endpoints[1].Share
	if m.Endpoints[0].Served != a.Requests() || m.Endpoints[1].Served != b.Requests() || share < 0.999 || share > 1.001 {
		t.Errorf("manifest endpoints %+v, servers saw %d and %d", m.Endpoints, a.Requests(), b.Requests())
	}
	if a.Requests() == 0 || b.Requests() == 0 {
		t.Errorf("requests %d and %d: want both endpoints used", a.Requests(), b.Requests())
	}
	raw, err := os.ReadFile(filepath.Join(out, pipeline.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "sk-canary-endpoint") {
		t.Errorf("the manifest holds an endpoint's Authorization header")
	}
	var doc struct {
		Config struct {
			LLM struct {
				Endpoints []map[string]any `json:"endpoints"`
			} `json:"llm"`
		} `json:"config"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Config.LLM.Endpoints) != 2 || doc.Config.LLM.Endpoints[1]["base_url"] != b.URL {
		t.Errorf("manifest config endpoints: %+v (%v)", doc.Config.LLM.Endpoints, err)
	}
}

func TestEndpointPoolBadKeyExitsTwo(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, filepath.Join(dir, "cfg"), "http://127.0.0.1:1/v1", map[string]any{
		"llm.endpoints": []map[string]any{{"base_url": "http://127.0.0.1:1/v1", "wieght": 2}},
	})
	res := invoke(t, "", nil, "generate", "--config", cfg, "--out", filepath.Join(dir, "run"))
	if res.code != 2 || !strings.Contains(res.stderr, "wieght") {
		t.Errorf("exit %d, stderr %q: want 2 naming the unknown key", res.code, res.stderr)
	}
	cfg = testConfig(t, filepath.Join(dir, "cfg2"), "http://127.0.0.1:1/v1", map[string]any{
		"llm.endpoints": []map[string]any{{"base_url": "http://127.0.0.1:1/v1"}, {"weight": -1}},
	})
	res = invoke(t, "", nil, "generate", "--config", cfg, "--out", filepath.Join(dir, "run2"))
	if res.code != 2 || !strings.Contains(res.stderr, "llm.endpoints[1].weight") {
		t.Errorf("exit %d, stderr %q: want 2 naming llm.endpoints[1].weight", res.code, res.stderr)
	}
}

// TestEndpointPoolOneRefusesTheKey generates through two endpoints of which one answers
// 401: the run finishes on the other, the log and the manifest name the endpoint taken
// out; with both refusing, the run stops (exit 1) naming both endpoints and no URL it
// never contacted.
func TestEndpointPoolOneRefusesTheKey(t *testing.T) {
	model := newFakeModel(t)
	bad := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.FaultUnauthorized}))
	good := llmtest.NewServer(t, model.handle)
	dir := t.TempDir()
	sets := func(urls ...string) map[string]any {
		var eps []map[string]any
		for _, u := range urls {
			eps = append(eps, map[string]any{"base_url": u})
		}
		return map[string]any{"task.limit": 20, "llm.base_url": nil, "llm.endpoints": eps}
	}
	cfg := testConfig(t, filepath.Join(dir, "cfg"), "", sets(bad.URL, good.URL))
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	out := filepath.Join(dir, "run")
	res := invoke(t, "", env, "generate", "--config", cfg, "--out", out)
	if res.code != 0 {
		t.Fatalf("generate: exit %d: %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "refused the API key") || !strings.Contains(res.stderr, bad.URL) {
		t.Errorf("stderr does not name the endpoint taken out:\n%s", res.stderr)
	}
	m := readManifest(t, out)
	if len(m.Endpoints) != 2 || !strings.Contains(m.Endpoints[0].Disabled, "401") || m.Endpoints[1].Served == 0 {
		t.Errorf("manifest endpoints %+v", m.Endpoints)
	}
	other := llmtest.NewServer(t, llmtest.Script(llmtest.Reply{Fault: llmtest.FaultUnauthorized}))
	cfg = testConfig(t, filepath.Join(dir, "cfg2"), "", sets(bad.URL, other.URL))
	res = invoke(t, "", env, "generate", "--config", cfg, "--out", filepath.Join(dir, "run2"))
	if res.code != 1 || !strings.Contains(res.stderr, bad.URL) || !strings.Contains(res.stderr, other.URL) || strings.Contains(res.stderr, "api.openai.com") {
		t.Errorf("both refusing: exit %d, stderr:\n%s\nwant 1, naming both endpoints and no other URL", res.code, res.stderr)
	}
}

// TestChatModelInCompletionFormatRefused: generate.format completion with a chat model
// name that go-openai refuses on /completions is a config error (exit 2) naming
// generate.format and llm.model, given before the run directory is made and before any
// request; a local server's own model name in completion format is sent as before.
func TestChatModelInCompletionFormatRefused(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("Thought: I know it.\nAction: Finish[yes]"))
	out := filepath.Join(t.TempDir(), "run")
	res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "sk-test"}, "run", "--config", "../../configs/demo.yaml", "--out", out,
		"--set", "generate.policy=llm", "--set", "generate.format=completion", "--set", "llm.model=gpt-4o-mini",
		"--set", "llm.base_url="+srv.URL, "--set", "task.limit=2")
	if res.code != exitUsage || !strings.Contains(res.stderr, "generate.format") || !strings.Contains(res.stderr, "llm.model") ||
		!strings.Contains(res.stderr, "gpt-4o-mini") {
		t.Errorf("got exit %d: %s; want 2 naming generate.format, llm.model and gpt-4o-mini", res.code, res.stderr)
	}
	if strings.Contains(res.stderr, "requests ") {
		t.Errorf("a refused config printed a progress line counting requests:\n%s", res.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused config made the run directory")
	}
	if n := srv.Requests(); n != 0 {
		t.Errorf("the server got %d requests", n)
	}

	local := filepath.Join(t.TempDir(), "local")
	res = invoke(t, "", map[string]string{"OPENAI_API_KEY": "sk-test"}, "generate", "--config", "../../configs/demo.yaml", "--out", local,
		"--set", "generate.policy=llm", "--set", "generate.format=completion", "--set", "llm.model=Qwen/Qwen2.5-7B",
		"--set", "llm.base_url="+srv.URL, "--set", "task.limit=2")
	if res.code != 0 || srv.Requests() == 0 {
		t.Errorf("a local model's name in completion format: exit %d after %d requests: %s", res.code, srv.Requests(), res.stderr)
	}
}

// TestUnsentRequestsNotCounted: requests the budget refused never left reactgen: the
// progress line, the manifest and the episodes count exactly the requests the server got,
// and the refused call is recorded as not sent.
func TestUnsentRequestsNotCounted(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("Thought: I should search.\nAction: Search[Kelmor]"))
	out := filepath.Join(t.TempDir(), "run")
	res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "sk-test"}, "generate", "--config", "../../configs/demo.yaml", "--out", out,
		"--set", "generate.policy=llm", "--set", "llm.model=fake", "--set", "llm.max_requests=5", "--set", "generate.concurrency=4",
		"--set", "llm.base_url="+srv.URL, "--set", "task.limit=10", "--set", "generate.progress=lines")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	sent := int(srv.Requests())
	if sent != 5 {
		t.Fatalf("the server got %d requests, want the budget's 5", sent)
	}
	m := readManifest(t, out)
	if c := m.Stages["generate"].Counts; c["requests"] != sent || c["failed_requests"] != 0 {
		t.Errorf("manifest: requests %d, failed_requests %d; want %d and 0", c["requests"], c["failed_requests"], sent)
	}
	if want := fmt.Sprintf("requests %d ", sent); !strings.Contains(res.stderr, want) {
		t.Errorf("the progress line lacks %q:\n%s", want, res.stderr)
	}
	calls, notSent := 0, 0
	for _, ep := range logLines(t, filepath.Join(out, pipeline.EpisodesFile)) {
		calls += ep.LLMCalls
		for _, st := range ep.Steps {
			for _, c := range st.Calls {
				if c.NotSent {
					notSent++
					if !strings.Contains(c.Error, "budget") {
						t.Errorf("a call not sent has error %q, want the budget's", c.Error)
					}
				}
			}
		}
	}
	if calls != sent || notSent == 0 {
		t.Errorf("episodes: llm_calls sum %d, %d calls not sent; want %d and some", calls, notSent, sent)
	}
}
