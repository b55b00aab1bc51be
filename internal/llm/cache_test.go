package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

// echoServer answers each chat request with "answer to " and its last message.
func echoServer(t *testing.T) *llmtest.Server {
	t.Helper()
	return llmtest.NewServer(t, func(_ context.Context, r llmtest.Req) llmtest.Reply {
		return llmtest.Reply{Texts: []string{"answer to " + r.Messages[len(r.Messages)-1].Content}, PromptTokens: 5, CompletionTokens: 5}
	})
}

// segments lists the cache's log files, oldest first.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "log-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// lines splits a segment into its lines, each with its newline.
func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

// complete sends req through c and returns the text and whether it was a hit.
func complete(t *testing.T, c llm.Client, req llm.Request) (string, bool) {
	t.Helper()
	resp, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatalf("complete %q: %v", req.Messages[0].Content, err)
	}
	return resp.Choices[0].Text, resp.Cached
}

// replays opens a new cache on dir and checks that every question is a hit with the
// echo server's answer and that the server gets no request.
func replays(t *testing.T, s *llmtest.Server, dir string, qs []string) {
	t.Helper()
	c := llm.WithCache(newClient(t, s.URL, 0), dir)
	before := s.Requests()
	for _, q := range qs {
		if text, hit := complete(t, c, chatReq(q)); !hit || text != "answer to "+q {
			t.Errorf("%s: got %q, cached=%v, want a hit", q, text, hit)
		}
	}
	if n := s.Requests() - before; n != 0 {
		t.Errorf("replay: server got %d requests, want 0", n)
	}
}

// numbers is "0" to "n-1".
func numbers(n int) []string {
	qs := make([]string, n)
	for i := range qs {
		qs[i] = fmt.Sprint(i)
	}
	return qs
}

func TestCacheReplaysWithoutServer(t *testing.T) {
	dir := t.TempDir()
	var n atomic.Int64
	s := llmtest.NewServer(t, func(context.Context, llmtest.Req) llmtest.Reply {
		return llmtest.Reply{Texts: []string{fmt.Sprintf("answer %d", n.Add(1))}, PromptTokens: 5, CompletionTokens: 5}
	})
	seed := 3
	reqs := []llm.Request{chatReq("one"), chatReq("two"), promptReq("three"),
		{Model: "fake-chat", Messages: []llm.Message{{Role: "user", Content: "one"}}, Temperature: 0.7, Seed: &seed, Attempt: 1}}
	run := func() []string {
		c := llm.WithCache(newClient(t, s.URL, 0), dir)
		var texts []string
		for _, r := range reqs {
			resp, err := c.Complete(t.Context(), r)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, resp.Choices[0].Text)
		}
		return texts
	}
	first := run()
	before := s.Requests()
	second := run()
	if s.Requests() != before {
		t.Errorf("second run: server got %d new requests, want 0", s.Requests()-before)
	}
	if strings.Join(first, ",") != strings.Join(second, ",") {
		t.Errorf("replay: got %v, want %v", second, first)
	}
	c := llm.WithCache(newClient(t, s.URL, 0), dir)
	resp, err := c.Complete(t.Context(), reqs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Cached || resp.CostUSD != 0 || resp.Retries != 0 || resp.Usage.TotalTokens != 10 {
		t.Errorf("hit: got %+v, want cached with the original usage", resp)
	}
	// Another attempt number misses.
	other := reqs[3]
	other.Attempt = 2
	if resp, err := c.Complete(t.Context(), other); err != nil || resp.Cached {
		t.Errorf("attempt 2: got cached=%v err=%v, want a miss", resp.Cached, err)
	}
	// The first run wrote one segment, the replay none, the last cache one more.
	segs := segments(t, dir)
	if len(segs) != 2 {
		t.Fatalf("segments: got %v, want 2", segs)
	}
	name := regexp.MustCompile(fmt.Sprintf(`^log-\d{19}-%d\.jsonl$`, os.Getpid()))
	for _, f := range segs {
		if !name.MatchString(filepath.Base(f)) {
			t.Errorf("segment %s: want log-<unix nanos>-<pid>.jsonl", f)
		}
	}
	if got := len(lines(t, segs[0])) + len(lines(t, segs[1])); got != 5 {
		t.Errorf("log lines: got %d, want 5", got)
	}
	if b, _ := os.ReadFile(segs[0]); bytes.Contains(b, []byte(`"one"`)) || bytes.Contains(b, []byte("three")) {
		t.Errorf("segment holds a prompt:\n%s", b)
	}
}

// TestCacheLinePromptHash checks that a log line carries the prompt hash that episode
// records carry for the same call, and not the prompt.
func TestCacheLinePromptHash(t *testing.T) {
	msgs := []llm.Message{{Role: "system", Content: "exemplars <&>"}, {Role: "user", Content: "Question: \"q\""}}
	tests := []struct {
		name string
		req  llm.Request
		pr   prompt.Request
	}{
		{"chat", llm.Request{Model: "fake-chat", Messages: msgs}, prompt.Request{Messages: msgs}},
		{"completion", llm.Request{Model: "fake-base", Prompt: "exemplars\nQuestion: q"}, prompt.Request{Prompt: "exemplars\nQuestion: q"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := llm.WithCache(newClient(t, llmtest.NewServer(t, llmtest.Text("x")).URL, 0), dir)
			if _, err := c.Complete(t.Context(), tt.req); err != nil {
				t.Fatal(err)
			}
			line := lines(t, segments(t, dir)[0])[0]
			var got struct {
				PromptHash string         `json:"prompt_hash"`
				Request    map[string]any `json:"request"`
			}
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatal(err)
			}
			if got.PromptHash != tt.pr.Hash() {
				t.Errorf("prompt_hash: got %s, want %s", got.PromptHash, tt.pr.Hash())
			}
			if got.Request["model"] != tt.req.Model || got.Request["prompt"] != nil || got.Request["messages"] != nil {
				t.Errorf("request: got %v, want the model and no prompt", got.Request)
			}
		})
	}
}

func TestCacheKeyCoversRequest(t *testing.T) {
	dir := t.TempDir()
	s := llmtest.NewServer(t, llmtest.Text("x"))
	c := llm.WithCache(newClient(t, s.URL, 0), dir)
	seed, seed2 := 1, 2
	base := llm.Request{Model: "fake-chat", Messages: []llm.Message{{Role: "user", Content: "q"}}, Seed: &seed}
	variants := map[string]func(r *llm.Request){
		"model":       func(r *llm.Request) { r.Model = "other" },
		"temperature": func(r *llm.Request) { r.Temperature = 0.5 },
		"top_p":       func(r *llm.Request) { r.TopP = 0.5 },
		"max_tokens":  func(r *llm.Request) { r.MaxTokens = 9 },
		"stop":        func(r *llm.Request) { r.Stop = []string{"\n"} },
		"seed":        func(r *llm.Request) { r.Seed = &seed2 },
		"n":           func(r *llm.Request) { r.N = 2 },
		"attempt":     func(r *llm.Request) { r.Attempt = 1 },
		"messages":    func(r *llm.Request) { r.Messages = []llm.Message{{Role: "system", Content: "q"}} },
	}
	if _, err := c.Complete(t.Context(), base); err != nil {
		t.Fatal(err)
	}
	for name, change := range variants {
		r := base
		change(&r)
		resp, err := c.Complete(t.Context(), r)
		if err != nil || resp.Cached {
			t.Errorf("%s changed: got cached=%v err=%v, want a miss", name, resp.Cached, err)
		}
	}
}

// cachedABC caches the answers to "a", "b" and "c" in a new directory through an echo
// server, and returns the directory, the server, and the segment that holds the three
// entries with its lines.
func cachedABC(t *testing.T) (dir string, s *llmtest.Server, seg string, ls [][]byte) {
	t.Helper()
	dir = t.TempDir()
	s = echoServer(t)
	c := llm.WithCache(newClient(t, s.URL, 0), dir)
	for _, q := range []string{"a", "b", "c"} {
		complete(t, c, chatReq(q))
	}
	seg = segments(t, dir)[0]
	return dir, s, seg, lines(t, seg)
}

// TestCacheDamagedLines damages the second of three lines in a segment and opens the
// cache again: the damaged entry misses and is requested and appended again, the others
// still hit.
func TestCacheDamagedLines(t *testing.T) {
	tests := []struct {
		name   string
		damage func(line []byte) []byte
	}{
		{"cut", func(l []byte) []byte { return append(l[:len(l)/2:len(l)/2], '\n') }},
		{"empty", func([]byte) []byte { return []byte("\n") }},
		{"not json", func([]byte) []byte { return []byte("not json at all\n") }},
		{"zeros", func(l []byte) []byte { return append(make([]byte, len(l)-1), '\n') }},
		{"no choices", func([]byte) []byte {
			return []byte(`{"v":1,"key":"` + strings.Repeat("ab", 32) + `","choices":[]}` + "\n")
		}},
		{"other version", func(l []byte) []byte { return bytes.Replace(l, []byte(`{"v":1,`), []byte(`{"v":99,`), 1) }},
		{"bad key", func(l []byte) []byte { return bytes.Replace(l, []byte(`"key":"`), []byte(`"key":"zz`), 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, s, seg, ls := cachedABC(t)
			ls[1] = tt.damage(ls[1])
			if err := os.WriteFile(seg, bytes.Join(ls, nil), 0o644); err != nil {
				t.Fatal(err)
			}
			c := llm.WithCache(newClient(t, s.URL, 0), dir)
			before := s.Requests()
			for _, q := range []string{"a", "b", "c"} {
				text, hit := complete(t, c, chatReq(q))
				if text != "answer to "+q || hit != (q != "b") {
					t.Errorf("%s: got %q, cached=%v; want a hit for a and c only", q, text, hit)
				}
			}
			if got := s.Requests() - before; got != 1 {
				t.Errorf("server requests: got %d, want 1", got)
			}
			c = llm.WithCache(newClient(t, s.URL, 0), dir)
			if _, hit := complete(t, c, chatReq("b")); !hit {
				t.Errorf("b after it was requested again: got a miss")
			}
		})
	}
}

// TestCacheTornLastLine cuts a segment in the middle of its last line, as a process
// killed in a write would leave it.
func TestCacheTornLastLine(t *testing.T) {
	dir, s, seg, ls := cachedABC(t)
	torn := bytes.Join(ls, nil)
	torn = torn[:len(torn)-len(ls[2])/2]
	if err := os.WriteFile(seg, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		c := llm.WithCache(newClient(t, s.URL, 0), dir)
		before := s.Requests()
		for _, q := range []string{"a", "b", "c"} {
			text, hit := complete(t, c, chatReq(q))
			if text != "answer to "+q || hit != (round == 1 || q != "c") {
				t.Errorf("round %d, %s: got %q, cached=%v", round, q, text, hit)
			}
		}
		if want := int64(1 - round); s.Requests()-before != want {
			t.Errorf("round %d: server got %d requests, want %d", round, s.Requests()-before, want)
		}
	}
	// The torn segment is never appended to: c went to a segment of its own.
	if b, _ := os.ReadFile(seg); !bytes.Equal(b, torn) {
		t.Errorf("torn segment changed")
	}
	if got := len(segments(t, dir)); got != 2 {
		t.Errorf("segments: got %d, want 2", got)
	}
}

// TestCacheSharedDir has two caches on one directory store at once, as two processes
// would; a third cache opened afterwards sees every entry.
func TestCacheSharedDir(t *testing.T) {
	dir := t.TempDir()
	s := echoServer(t)
	a := llm.WithCache(newClient(t, s.URL, 0), dir)
	b := llm.WithCache(newClient(t, s.URL, 0), dir)
	const n = 64
	errs := fanOut(t, a, n, func(i int) llm.Request { return chatReq(fmt.Sprint("a", i)) })
	errs = append(errs, fanOut(t, b, n, func(i int) llm.Request { return chatReq(fmt.Sprint("b", i)) })...)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := len(segments(t, dir)); got != 2 {
		t.Errorf("segments: got %d, want one per cache", got)
	}
	var qs []string
	for i := range n {
		qs = append(qs, fmt.Sprint("a", i), fmt.Sprint("b", i))
	}
	replays(t, s, dir, qs)
}

// TestCacheManySegments replays from a directory with more segments than a cache keeps
// open, as one shared by many runs would be.
func TestCacheManySegments(t *testing.T) {
	dir := t.TempDir()
	s := echoServer(t)
	const n = 100
	for i := range n {
		complete(t, llm.WithCache(newClient(t, s.URL, 0), dir), chatReq(fmt.Sprint(i)))
	}
	if got := len(segments(t, dir)); got != n {
		t.Fatalf("segments: got %d, want %d", got, n)
	}
	replays(t, s, dir, numbers(n))
}

// TestCacheConcurrentComplete sends the same few requests from many goroutines at once
// through one cache, then replays them from a new one.
func TestCacheConcurrentComplete(t *testing.T) {
	dir := t.TempDir()
	s := echoServer(t)
	c := llm.WithCache(newClient(t, s.URL, 0), dir)
	const n, distinct = 128, 16
	for round := range 2 {
		errs := fanOut(t, c, n, func(i int) llm.Request { return chatReq(fmt.Sprint(i % distinct)) })
		for _, err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	replays(t, s, dir, numbers(distinct))
}

// TestCacheReadsOldLayout replays a file that the one-file-per-entry cache wrote
// (testdata/legacy-cache) and checks that nothing new is written in that layout.
func TestCacheReadsOldLayout(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/legacy-cache")); err != nil {
		t.Fatal(err)
	}
	s := echoServer(t)
	c := llm.WithCache(newClient(t, s.URL, 0), dir)
	resp, err := c.Complete(t.Context(), chatReq("legacy"))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Cached || resp.Choices[0].Text != "Finish[from the old layout]" || resp.Usage.TotalTokens != 10 || s.Requests() != 0 {
		t.Errorf("old layout: got %+v after %d requests, want the stored response", resp, s.Requests())
	}
	if _, hit := complete(t, c, chatReq("new")); hit {
		t.Errorf("new: got a hit")
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	if len(old) != 1 || len(segments(t, dir)) != 1 {
		t.Errorf("files: got %v in subdirectories and segments %v, want the old file and one segment", old, segments(t, dir))
	}
	// A corrupt old file misses; the fresh response goes to the log.
	if err := os.WriteFile(old[0], []byte(`{"version":1,"choices":[{"Te`), 0o644); err != nil {
		t.Fatal(err)
	}
	c = llm.WithCache(newClient(t, s.URL, 0), dir)
	if text, hit := complete(t, c, chatReq("legacy")); hit || text != "answer to legacy" {
		t.Errorf("corrupt old file: got %q, cached=%v, want a fresh response", text, hit)
	}
	c = llm.WithCache(newClient(t, s.URL, 0), dir)
	if _, hit := complete(t, c, chatReq("legacy")); !hit {
		t.Errorf("after the fresh response: got a miss")
	}
}

func TestCacheUnwritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := echoServer(t)
	c := llm.WithCache(newClient(t, s.URL, 0), dir)
	for range 2 {
		if text, hit := complete(t, c, chatReq("q")); hit || text != "answer to q" {
			t.Errorf("got %q, cached=%v, want the server's response", text, hit)
		}
	}
}

func TestCacheDoesNotStoreErrors(t *testing.T) {
	dir := t.TempDir()
	s := llmtest.NewServer(t, llmtest.Faulty(1, llmtest.Fault500, llmtest.Text("ok")))
	c := llm.WithCache(newClient(t, s.URL, 0), dir)
	if _, err := c.Complete(t.Context(), chatReq("q")); err == nil {
		t.Fatal("first: got no error")
	}
	resp, err := c.Complete(t.Context(), chatReq("q"))
	if err != nil || resp.Cached {
		t.Errorf("second: got cached=%v err=%v, want a fresh success", resp.Cached, err)
	}
}

// testdata/completion-cache was written by the code before the cache key and line were
// encoded by hand and the shared prompt prefix hashed once (6345ec6), for
// oldCacheRequests. A re-run hits every entry and sends nothing, twice over (the second
// time every prompt prefix is known), and the lines this code writes for the same
// requests are the old lines byte for byte, but for when they were written and took.
func TestCacheHitsEntriesOfEarlierVersions(t *testing.T) {
	old, err := filepath.Glob("testdata/completion-cache/log-*.jsonl")
	if err != nil || len(old) != 1 {
		t.Fatalf("fixture: %v %v", old, err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/completion-cache")); err != nil {
		t.Fatal(err)
	}
	s := llmtest.NewServer(t, func(_ context.Context, r llmtest.Req) llmtest.Reply {
		return llmtest.Reply{Texts: []string{fmt.Sprintf(" stored answer %d", len(r.Prompt))}, PromptTokens: len(r.Prompt) / 4, CompletionTokens: 4}
	})
	c := llm.WithCache(newClient(t, s.URL, 0), dir)
	for round := range 2 {
		for i, req := range oldCacheRequests() {
			resp, err := c.Complete(t.Context(), req)
			if err != nil || !resp.Cached || resp.Choices[0].Text != fmt.Sprintf(" stored answer %d", len(req.Prompt)) {
				t.Errorf("round %d, request %d: cached=%v %+v %v", round, i, resp.Cached, resp.Choices, err)
			}
		}
	}
	if s.Requests() != 0 || len(segments(t, dir)) != 1 {
		t.Errorf("re-run: %d requests, segments %v; want none and the old one", s.Requests(), segments(t, dir))
	}
	fresh := t.TempDir()
	c = llm.WithCache(newClient(t, s.URL, 0), fresh)
	for _, req := range oldCacheRequests() {
		if _, err := c.Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	when := regexp.MustCompile(`"written":"[^"]*","latency_ms":\d+`)
	want, got := lines(t, old[0]), lines(t, segments(t, fresh)[0])
	if len(got) != len(want) {
		t.Fatalf("%d lines written, want %d", len(got), len(want))
	}
	for i := range want {
		if w, g := when.ReplaceAll(want[i], nil), when.ReplaceAll(got[i], nil); !bytes.Equal(w, g) {
			t.Errorf("line %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

// oldCacheRequests are the completion requests of testdata/completion-cache: a few-shot
// prefix shared by all (escapes, non-ASCII), then each question's steps.
func oldCacheRequests() []llm.Request {
	prefix := "Solve a question answering task with interleaving Thought, Action, Observation steps.\n" +
		strings.Repeat("Question: Is <Zembla> \"older\" than Onhava & Plim, café?\nThought 1: I search.\nAction 1: Search[Zembla]\nObservation 1: Zembla is\tan island kingdom.\u2028\n", 12)
	seed := 3
	var reqs []llm.Request
	for q := range 4 {
		prompt := prefix + fmt.Sprintf("Question: question %d, naïve?\n", q)
		for step := 1; step <= 3; step++ {
			req := llm.Request{Model: "local-model", Prompt: prompt + fmt.Sprintf("Thought %d:", step), MaxTokens: 100,
				Stop: []string{fmt.Sprintf("\nObservation %d:", step)}}
			if q == 3 {
				req.Temperature, req.Seed, req.Attempt = 0.7, &seed, 1
			}
			reqs = append(reqs, req)
			prompt += fmt.Sprintf("Thought %d: think %d\nAction %d: Search[é%d]\nObservation %d: \"x\" <y>\n", step, step, step, q, step)
		}
	}
	return reqs
}
