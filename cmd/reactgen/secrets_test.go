package main

// The canary-key test: a whole pipeline runs with a recognisable API key, against a
// server that fails some requests and echoes the request headers (the key among them)
// back in its error bodies; the key must appear in no file of the run directory, on
// stdout or stderr, nor in `config show`.

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

// forms are the ways a key can leak: as is, base64 (raw and padded, alone and as a
// Bearer header), and URL-safe base64.
func forms(key string) []string {
	out := []string{key}
	for _, s := range []string{key, "Bearer " + key} {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(s)), base64.RawStdEncoding.EncodeToString([]byte(s)),
			base64.URLEncoding.EncodeToString([]byte(s)))
	}
	return out
}

// leaks reports where any form of key occurs in text.
func leaks(key, where string, text []byte) []string {
	var out []string
	for _, f := range forms(key) {
		if bytes.Contains(text, []byte(f)) {
			out = append(out, fmt.Sprintf("%s holds %q", where, f))
		}
	}
	return out
}

// echoHeaders is an HTML error page that quotes the request's headers, as some proxies do.
func echoHeaders(r llmtest.Req) string {
	var b strings.Builder
	b.WriteString("<html><body><h1>502 Bad Gateway</h1><pre>\n")
	for k, vs := range r.Header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
			fmt.Fprintf(&b, "%s (b64): %s\n", k, base64.StdEncoding.EncodeToString([]byte(v)))
		}
	}
	b.WriteString("</pre></body></html>\n")
	return b.String()
}

func TestCanaryKeyNeverLeaks(t *testing.T) {
	key := fmt.Sprintf("sk-canary-%016x", rand.Uint64())
	headerKey := fmt.Sprintf("hk-canary-%016x", rand.Uint64())
	model := newFakeModel(t)
	model.fault = func(n int64, r llmtest.Req) (llmtest.Reply, bool) {
		if n <= 3 {
			return llmtest.Reply{}, false // the breaker learns the server works
		}
		auth := r.Header.Get("Authorization")
		switch n % 7 {
		case 1:
			return llmtest.Reply{Fault: llmtest.Fault500}, true
		case 2:
			return llmtest.Reply{Status: 502, Body: echoHeaders(r)}, true
		case 3:
			if n%3 == 0 {
				msg := fmt.Sprintf(`{"error":{"message":"Incorrect API key provided: %s (%s)","type":"invalid_request_error","code":"invalid_api_key"}}`,
					strings.TrimPrefix(auth, "Bearer "), base64.StdEncoding.EncodeToString([]byte(auth)))
				return llmtest.Reply{Status: 401, Body: msg}, true
			}
		}
		return llmtest.Reply{}, false
	}
	srv := llmtest.NewServer(t, model.handle)
	tmp := t.TempDir()
	cfg := testConfig(t, filepath.Join(tmp, "cfg"), srv.URL, map[string]any{
		"task.limit": 40, "generate.attempts": 2,
		"export.formats": []string{"openai-chat", "sharegpt", "arrow-file", "parquet"},
		"export.pairs":   true,
	})
	out := filepath.Join(tmp, "run")
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": key}}
	set := "--set=llm.headers.x-api-key=" + headerKey

	var problems []string
	// Failed requests and retries over both runs: each manifest records its own run's.
	failed := 0
	for i := range 2 { // the second run resumes and retries the failed episodes
		code, stdout, stderr := runChild(t, env, "run", "--config", cfg, "--out", out, set)
		if code != 0 {
			t.Fatalf("run %d: exit %d; stderr:\n%s", i, code, stderr)
		}
		c := readManifest(t, out).Stages["generate"].Counts
		failed += c["failed_requests"] + c["retries"]
		for _, k := range []string{key, headerKey} {
			problems = append(problems, leaks(k, fmt.Sprintf("run %d stdout", i), []byte(stdout))...)
			problems = append(problems, leaks(k, fmt.Sprintf("run %d stderr", i), []byte(stderr))...)
		}
	}
	// A run whose every request is refused with a 401 echoing the key: the one error message.
	bad := llmtest.NewServer(t, func(_ context.Context, r llmtest.Req) llmtest.Reply {
		return llmtest.Reply{Status: 401, Body: fmt.Sprintf(`{"error":{"message":"key %s refused","code":"invalid_api_key"}}`, r.Header.Get("Authorization"))}
	})
	badCfg := testConfig(t, filepath.Join(tmp, "badcfg"), bad.URL, map[string]any{"task.limit": 20})
	code, stdout, stderr := runChild(t, env, "run", "--config", badCfg, "--out", filepath.Join(tmp, "bad"), set)
	if code != exitFailure {
		t.Errorf("all-401 run: exit %d, want %d", code, exitFailure)
	}
	for _, k := range []string{key, headerKey} {
		problems = append(problems, leaks(k, "all-401 stdout", []byte(stdout))...)
		problems = append(problems, leaks(k, "all-401 stderr", []byte(stderr))...)
	}

	for _, show := range [][]string{{"config", "show", "--config", cfg, set}, {"config", "show", "--json", "--config", cfg, set}} {
		code, stdout, stderr := runChild(t, env, show...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", show, code, stderr)
		}
		for _, k := range []string{key, headerKey} {
			problems = append(problems, leaks(k, strings.Join(show[:2], " "), []byte(stdout+stderr))...)
		}
	}

	files := 0
	filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("read %s: %v", p, err)
			return nil
		}
		files++
		for _, k := range []string{key, headerKey} {
			problems = append(problems, leaks(k, p, b)...)
		}
		return nil
	})
	for _, p := range problems {
		t.Error(p)
	}
	// The test proves something only if the key was sent and echoed.
	echoed := 0
	for _, rec := range srv.Log() {
		if strings.Contains(rec.Header.Get("Authorization"), key) {
			echoed++
		}
	}
	if echoed == 0 {
		t.Error("the server never saw the canary key")
	}
	m := readManifest(t, out)
	if m.Stages["export"] == nil || m.Stages["export"].Status != "done" {
		t.Errorf("export stage: %+v", m.Stages["export"])
	}
	if failed == 0 {
		t.Errorf("no request failed in either run, so the test proves nothing: %v", m.Stages["generate"].Counts)
	}
	t.Logf("searched %d files, 8 streams; %d requests carried the key; counts %v", files, echoed, m.Stages["generate"].Counts)
}

// canary is a recognisable secret.
func canary(name string) string { return fmt.Sprintf("%s-canary-%016x", name, rand.Uint64()) }

// leaksUnder lists every file under dir, and every text, that holds a form of a secret.
func leaksUnder(t *testing.T, dir string, secrets []string, texts map[string]string) []string {
	t.Helper()
	var out []string
	for where, text := range texts {
		for _, s := range secrets {
			out = append(out, leaks(s, where, []byte(text))...)
		}
	}
	eachFile(dir, func(p string, b []byte) {
		for _, s := range secrets {
			out = append(out, leaks(s, p, b)...)
		}
	})
	return out
}

// eachFile calls fn with every file under dir and its bytes; a file that cannot be read
// (gone, or not a regular file's contents) is passed over.
func eachFile(dir string, fn func(path string, data []byte)) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil {
			fn(p, b)
		}
		return nil
	})
}

func TestURLCredentialsAndHeaderValuesNeverLeak(t *testing.T) {
	urlPass, cookie, team, wikiPass := canary("url"), canary("cookie"), canary("team"), canary("wiki")
	model := newFakeModel(t)
	model.fault = func(n int64, r llmtest.Req) (llmtest.Reply, bool) {
		switch n % 5 {
		case 1: // a proxy's error page quoting the request headers
			return llmtest.Reply{Status: 502, Body: echoHeaders(r)}, true
		case 2: // a completion that echoes the headers back, as a debugging server might
			text := model.text(r)
			return llmtest.Reply{Texts: []string{text + "\n(cookie " + r.Header.Get("Cookie") + ", team " + r.Header.Get("X-Team") + ")"}}, true
		}
		return llmtest.Reply{}, false
	}
	srv := llmtest.NewServer(t, model.handle)
	// A MediaWiki that echoes the Basic credentials its endpoint URL carries.
	var wikiAuth atomic.Int32
	wiki := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if auth != "" {
			wikiAuth.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("list") == "search" {
			io.WriteString(w, `{"query": {"search": []}}`)
			return
		}
		title := r.URL.Query().Get("titles")
		fmt.Fprintf(w, `{"query": {"pages": [{"title": %q, "extract": "%s is a place. The request said %s."}]}}`, title, title, auth)
	}))
	defer wiki.Close()

	tmp := t.TempDir()
	base := strings.Replace(srv.URL, "http://", "http://alice:"+urlPass+"@", 1)
	cfg := testConfig(t, filepath.Join(tmp, "cfg"), base, map[string]any{
		"task.limit": 20, "llm.max_retries": 1,
		"llm.headers":    map[string]string{"Cookie": "session=" + cookie, "X-Team": team},
		"export.formats": []string{"openai-chat", "parquet"},
	})
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}
	texts := map[string]string{}
	code, stdout, stderr := runChild(t, env, "run", "--config", cfg, "--out", filepath.Join(tmp, "run"))
	if code != 0 {
		t.Fatalf("run: exit %d; stderr:\n%s", code, stderr)
	}
	texts["run stdout"], texts["run stderr"] = stdout, stderr
	wikiURL := strings.Replace(wiki.URL, "http://", "http://wiki:"+wikiPass+"@", 1) + "/w/api.php"
	code, stdout, stderr = runChild(t, env, "run", "--config", cfg, "--out", filepath.Join(tmp, "wikirun"),
		"--set", "env.backend=mediawiki", "--set", "env.mediawiki_url="+wikiURL, "--set", "corpus.path=")
	if code != 0 {
		t.Fatalf("mediawiki run: exit %d; stderr:\n%s", code, stderr)
	}
	texts["mediawiki run stdout"], texts["mediawiki run stderr"] = stdout, stderr
	// Every request fails against a closed port: the errors name the URL.
	dead := "http://alice:" + urlPass + "@" + llmtest.FreeAddr(t) + "/v1"
	_, stdout, stderr = runChild(t, env, "run", "--config", cfg, "--out", filepath.Join(tmp, "dead"), "--set", "llm.base_url="+dead)
	texts["dead run stdout"], texts["dead run stderr"] = stdout, stderr
	for _, show := range [][]string{{"config", "show", "--config", cfg}, {"config", "show", "--json", "--config", cfg}} {
		code, stdout, stderr := runChild(t, env, append(show, "--set", "env.mediawiki_url="+wikiURL)...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", show, code, stderr)
		}
		texts[strings.Join(show[:3], " ")] = stdout + stderr
	}

	secrets := []string{urlPass, cookie, team, wikiPass}
	var problems []string
	for i, dir := range []string{"run", "wikirun", "dead"} {
		if i > 0 {
			texts = nil
		}
		problems = append(problems, leaksUnder(t, filepath.Join(tmp, dir), secrets, texts)...)
	}
	for _, p := range problems {
		t.Error(p)
	}
	// The test proves something only if the secrets were sent and echoed.
	sent := 0
	for _, rec := range srv.Log() {
		if strings.Contains(rec.Header.Get("Cookie"), cookie) && rec.Header.Get("X-Team") == team {
			sent++
		}
	}
	if sent == 0 || wikiAuth.Load() == 0 {
		t.Errorf("the servers never saw the secrets (%d model requests, %d wiki requests with them)", sent, wikiAuth.Load())
	}
	if card, err := os.ReadFile(filepath.Join(tmp, "wikirun", "export", "README.md")); err != nil || !strings.Contains(string(card), "wiki:[redacted]@") {
		t.Errorf("the mediawiki run's card does not name its redacted endpoint (%v)", err)
	}
	t.Logf("%d model requests carried the headers; %d wiki requests the URL's credentials", sent, wikiAuth.Load())
}

// TestBatchEchoedKeyNeverLeaks runs llm.mode batch against a Batch API whose output lines
// echo the key and a configured header in completions and whose error lines quote them
// (as a proxy that echoes request headers would): neither reaches any file under the run
// directory (episodes, kept/rejected, the response cache, the manifest, the batch
// directory) nor stdout or stderr. Online mode scrubbed the same echo; batch stored it.
func TestBatchEchoedKeyNeverLeaks(t *testing.T) {
	key, headerKey := canary("sk"), canary("hk")
	echo := fmt.Sprintf("%s %s %s", key, base64.StdEncoding.EncodeToString([]byte("Bearer "+key)), headerKey)
	model := newFakeModel(t)
	var echoed atomic.Int64
	model.fault = func(n int64, r llmtest.Req) (llmtest.Reply, bool) {
		switch n % 4 {
		case 1:
			echoed.Add(1)
			return llmtest.Reply{Status: 401, Body: fmt.Sprintf(`{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, echo)}, true
		case 2:
			echoed.Add(1)
			return llmtest.Reply{Texts: []string{"Thought: the proxy says " + echo + "\nAction: Finish[" + headerKey + "]"}}, true
		}
		return llmtest.Reply{}, false
	}
	srv := llmtest.NewServer(t, model.handle)
	tmp := t.TempDir()
	cfg := testConfig(t, filepath.Join(tmp, "cfg"), srv.URL, map[string]any{
		"task.limit": 24, "generate.concurrency": 24, "generate.attempts": 2, "filter.rules": []string{"finished"},
		"llm.mode": "batch", "llm.batch": map[string]any{"window": "50ms", "poll": "5ms"},
	})
	out := filepath.Join(tmp, "run")
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": key}}
	code, stdout, stderr := runChild(t, env, "run", "--config", cfg, "--out", out, "--set=llm.headers.x-api-key="+headerKey)
	if code != 0 && code != exitFailure {
		t.Fatalf("batch run: exit %d; stderr:\n%s", code, stderr)
	}
	if echoed.Load() == 0 || len(srv.Batches()) == 0 {
		t.Fatalf("the server echoed nothing (%d batches), so the test proves nothing", len(srv.Batches()))
	}
	for _, p := range leaksUnder(t, tmp, []string{key, headerKey}, map[string]string{"stdout": stdout, "stderr": stderr}) {
		t.Error(p)
	}
	// The episodes hold the scrubbed echoes: the text came through, without the secrets.
	b, err := os.ReadFile(filepath.Join(out, "episodes.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("the proxy says [redacted]")) {
		t.Error("no episode holds the scrubbed echo")
	}
}
