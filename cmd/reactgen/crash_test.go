package main

// Binary-level crash-safety tests: the reactgen binary runs as a child process against a
// fake OpenAI-format server in this test process (127.0.0.1), and is killed, signalled
// and locked out while it works. The helpers here (the binary, the fake model, configs,
// child processes, log checks) serve faults_test.go, badinput_test.go and
// secrets_test.go too.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// The committed demo world, relative to this package.
const (
	demoTasks  = "../../data/demo/hotpotqa.json"
	demoCorpus = "../../data/demo/corpus.jsonl"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// reactgenBinary builds the reactgen binary once per test process and returns its path.
// removeTestBinary (called from TestMain, if the integrator wires it) deletes it.
func reactgenBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "reactgen-bin-*")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "reactgen")
		//lint:ignore SA1019 the test builds with the toolchain that runs it, on this machine (the binary is never copied)
		goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goTool); err != nil {
			goTool = "go"
		}
		cmd := exec.Command(goTool, "build", "-o", binPath, ".")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("build reactgen: %v", binErr)
	}
	return binPath
}

// removeTestBinary deletes the binary reactgenBinary built.
func removeTestBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// child is one reactgen process.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr *bytes.Buffer
	done           chan struct{}
	code           int
}

// childEnv is the whole environment a child sees: nothing leaks in from the test's own.
type childEnv struct {
	vars  map[string]string
	dir   string   // working directory; empty = a fresh temp dir
	stdin *os.File // standard input; nil = none
}

// startChild starts the binary with args.
func startChild(t *testing.T, ce childEnv, args ...string) *child {
	t.Helper()
	cmd := exec.Command(reactgenBinary(t), args...)
	cmd.Dir = ce.dir
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + cmd.Dir, "TMPDIR=" + os.TempDir()}
	for k, v := range ce.vars {
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	cmd.Stdin = ce.stdin
	c := &child{cmd: cmd, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start reactgen: %v", err)
	}
	go func() {
		err := cmd.Wait()
		c.code = 0
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			c.code = ee.ExitCode() // -1 when killed by a signal
		case err != nil:
			c.code = -2
		}
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait waits for the child to exit (at most a minute, so a hang fails the test instead
// of the whole binary) and returns its exit code.
func (c *child) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("reactgen did not exit within a minute; stderr:\n%s", c.stderr.String())
	}
	return c.code
}

func (c *child) signal(t *testing.T, s os.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(s); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("signal %v: %v", s, err)
	}
}

// runChild runs the binary to its end.
func runChild(t *testing.T, ce childEnv, args ...string) (int, string, string) {
	t.Helper()
	c := startChild(t, ce, args...)
	code := c.wait(t)
	return code, c.stdout.String(), c.stderr.String()
}

// fakeModel answers ReAct chat steps for the demo questions as a plain model would:
// step 1 searches the first capitalised name in the question, step 2 finishes with the
// gold answer (wrong for about one question in five). The text depends only on the
// request, so runs are comparable. fault, when set, may replace any reply.
type fakeModel struct {
	answers  map[string]string // question text -> gold answer
	mu       sync.Mutex        // guards the delays: a test changes them while a killed child's requests drain
	minDelay time.Duration
	maxDelay time.Duration
	fault    func(n int64, r llmtest.Req) (llmtest.Reply, bool)
	n        atomic.Int64
}

// setDelay sets the range of the model's reply delays.
func (f *fakeModel) setDelay(lo, hi time.Duration) {
	f.mu.Lock()
	f.minDelay, f.maxDelay = lo, hi
	f.mu.Unlock()
}

// newFakeModel reads the demo questions' answers through the task loader.
func newFakeModel(t *testing.T) *fakeModel {
	t.Helper()
	qs, _, err := dataset.Load(demoTasks, dataset.Options{Task: pipeline.TaskHotpotQA})
	if err != nil {
		t.Fatalf("load demo questions: %v", err)
	}
	m := &fakeModel{answers: map[string]string{}}
	for _, q := range qs {
		m.answers[q.Question] = q.Answer
	}
	return m
}

var capitalised = regexp.MustCompile(`[A-Z][\p{L}0-9'.-]*(?: (?:of |the |de )?[A-Z][\p{L}0-9'.-]*)*`)

var questionWords = map[string]bool{"What": true, "Which": true, "Who": true, "Whom": true, "Where": true,
	"When": true, "How": true, "Is": true, "Are": true, "Was": true, "Were": true, "Did": true, "Do": true,
	"Does": true, "In": true, "The": true, "A": true, "An": true}

// entity is the first capitalised name in q that is not a question word.
func entity(q string) string {
	for _, m := range capitalised.FindAllString(q, -1) {
		first, rest, _ := strings.Cut(m, " ")
		if questionWords[first] {
			if rest == "" {
				continue
			}
			m = rest
		}
		return strings.TrimRight(m, ".?")
	}
	return "Nothing"
}

func (f *fakeModel) handle(ctx context.Context, r llmtest.Req) llmtest.Reply {
	n := f.n.Add(1)
	var rep llmtest.Reply
	if f.fault != nil {
		if fr, ok := f.fault(n, r); ok {
			rep = fr
		} else {
			rep = f.reply(r)
		}
	} else {
		rep = f.reply(r)
	}
	f.mu.Lock()
	lo, hi := f.minDelay, f.maxDelay
	f.mu.Unlock()
	if hi > 0 && rep.Delay == 0 {
		rep.Delay = lo + rand.N(hi-lo+1)
	}
	return rep
}

// reply is the answer to one request: text, or a function call when the request has
// tools (toolReply).
func (f *fakeModel) reply(r llmtest.Req) llmtest.Reply {
	if len(r.Tools) > 0 {
		return f.toolReply(r)
	}
	return llmtest.Reply{Texts: []string{f.text(r)}}
}

// text is the deterministic answer to one chat request.
func (f *fakeModel) text(r llmtest.Req) string {
	if len(r.Messages) < 2 {
		return "I am lost."
	}
	_, q, _ := strings.Cut(r.Messages[1].Content, ": ")
	steps := 0
	for _, m := range r.Messages[2:] {
		if m.Role == "user" && strings.HasPrefix(m.Content, "Observation: ") {
			steps++
		}
	}
	last := r.Messages[len(r.Messages)-1].Content
	thought, action := f.move(q, steps)
	if strings.HasPrefix(last, "Write only the Action") {
		return "Action: " + action
	}
	return fmt.Sprintf("Thought: %s\nAction: %s", thought, action)
}

// move is the model's step after steps earlier ones: search the question's first name,
// then finish with the gold answer (or "unknown" for about one question in five).
func (f *fakeModel) move(q string, steps int) (thought, action string) {
	if steps == 0 {
		e := entity(q)
		return fmt.Sprintf("I should look up %s first.", e), "Search[" + e + "]"
	}
	ans, ok := f.answers[q]
	h := fnv.New32a()
	h.Write([]byte(q))
	if !ok || h.Sum32()%5 == 0 {
		ans = "unknown"
	}
	return "The page gives what I need.", "Finish[" + ans + "]"
}

// testConfig writes a config for the llm policy over the demo world into dir/config.yaml,
// with sets (dotted keys) applied on top, and returns its path.
func testConfig(t *testing.T, dir, baseURL string, sets map[string]any) string {
	t.Helper()
	cfg := map[string]map[string]any{
		"run":      {"grace_period": "5s"},
		"task":     {"name": "hotpotqa", "path": mustAbs(t, demoTasks), "limit": 60},
		"corpus":   {"path": mustAbs(t, demoCorpus)},
		"llm":      {"base_url": baseURL, "model": "fake-model", "cache": true, "max_retries": 2, "backoff_base": "5ms", "backoff_max": "20ms", "timeout": "10s"},
		"generate": {"policy": "llm", "method": "react", "format": "chat", "attempts": 1, "concurrency": 8, "target_correct": 0, "progress": "off"},
		"filter":   {"rules": []string{"finished", "correct"}},
		"export":   {"formats": []string{"openai-chat"}, "validation_fraction": 0.1},
	}
	for k, v := range sets {
		sec, key, ok := strings.Cut(k, ".")
		if !ok {
			t.Fatalf("testConfig: key %q has no section", k)
		}
		if cfg[sec] == nil {
			cfg[sec] = map[string]any{}
		}
		if v == nil {
			delete(cfg[sec], key)
			continue
		}
		cfg[sec][key] = v
	}
	return writeSections(t, dir, cfg)
}

// logLines reads episodes.jsonl raw: every line must be one valid JSON episode record
// ending in a newline. It returns the records in file order.
func logLines(t *testing.T, path string) []pipeline.Episode {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read episode log: %v", err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("%s: the last line has no newline (a torn record left in place)", path)
	}
	var eps []pipeline.Episode
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(line) == 0 && len(b) == 0 {
			break
		}
		var ep pipeline.Episode
		if err := json.Unmarshal(line, &ep); err != nil || ep.ID == "" {
			t.Errorf("%s line %d is not a valid episode record (%v): %.120q", path, i+1, err, line)
			continue
		}
		eps = append(eps, ep)
	}
	return eps
}

// readManifest reads manifest.json and checks it is valid JSON.
func readManifest(t *testing.T, dir string) *pipeline.Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, pipeline.ManifestFile))
	if err != nil {
		t.Fatalf("read manifest: %v", err)
	}
	if !json.Valid(b) {
		t.Fatalf("manifest.json is not valid JSON: %.200q", b)
	}
	m, err := pipeline.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// idCounts counts the raw records per episode id.
func idCounts(eps []pipeline.Episode) map[string]int {
	out := map[string]int{}
	for _, ep := range eps {
		out[ep.ID]++
	}
	return out
}

// leftovers lists temporary files (".name.tmp-*", ".index.building-*") under dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if strings.Contains(name, ".tmp-") || strings.Contains(name, ".building-") {
			out = append(out, strings.TrimPrefix(p, dir+"/"))
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return out
}

// killRNG is the random source of a kill test, stream its own: seeded from the clock, or
// from REACTGEN_KILL_SEED to replay a failure, and the seed is logged.
func killRNG(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REACTGEN_KILL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("kill seed %d (rerun with REACTGEN_KILL_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, stream))
}

func TestKillAndResumeMatchesUninterruptedRun(t *testing.T) {
	kills := 20
	if testing.Short() {
		kills = 5
	}
	rng := killRNG(t, 0x6b696c6c)

	model := newFakeModel(t)
	// Replies slow enough that the whole run spans many kill windows: about 600
	// calls at 30 ms on average, two at a time.
	model.setDelay(10*time.Millisecond, 50*time.Millisecond)
	srv := llmtest.NewServer(t, model.handle)
	tmp := t.TempDir()
	cfg := testConfig(t, filepath.Join(tmp, "cfg"), srv.URL, map[string]any{
		"task.limit": 100, "generate.attempts": 2, "generate.concurrency": 2,
	})
	killed, uninterrupted := filepath.Join(tmp, "killed"), filepath.Join(tmp, "whole")
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}

	// Kill until the kills have landed on a running process or a run completes
	// on its own, then resume once more to finish. A kill that finds the process
	// already exited does not count.
	landed, completed, prev := 0, false, -1
	for i := 0; landed < kills && !completed && i < 3*kills; i++ {
		served := srv.Requests()
		c := startChild(t, env, "generate", "--config", cfg, "--out", killed)
		// The kill window opens at the run's first request, not at exec: on a loaded
		// machine start-up alone can outlast a fixed delay, and a kill before the run
		// has begun tests nothing.
		started := time.NewTicker(5 * time.Millisecond)
	waitStart:
		for srv.Requests() == served {
			select {
			case <-c.done:
				break waitStart
			case <-started.C:
			}
		}
		started.Stop()
		select {
		case <-c.done:
		case <-time.After(time.Duration(rng.IntN(351)) * time.Millisecond):
			c.signal(t, syscall.SIGKILL)
		}
		code := c.wait(t)
		switch code {
		case -1:
			landed++
		case 0:
			completed = true
		default:
			t.Fatalf("run %d: exit %d; stderr:\n%s", i, code, c.stderr.String())
		}
		n := 0
		if b, err := os.ReadFile(filepath.Join(killed, pipeline.EpisodesFile)); err == nil {
			n = bytes.Count(b, []byte("\n"))
		}
		if n != prev {
			t.Logf("run %d: %d records in the log after the kill", i, n)
			prev = n
		}
	}
	if code, _, stderr := runChild(t, env, "generate", "--config", cfg, "--out", killed); code != 0 {
		t.Fatalf("final resume: exit %d; stderr:\n%s", code, stderr)
	}
	t.Logf("%d kills landed on a running process; %d requests served", landed, srv.Requests())
	if landed < kills/2 {
		t.Errorf("only %d kills found the process running before the run completed: the run is too short to test resume", landed)
	}

	if code, _, stderr := runChild(t, env, "generate", "--config", cfg, "--out", uninterrupted); code != 0 {
		t.Fatalf("uninterrupted run: exit %d; stderr:\n%s", code, stderr)
	}

	got := logLines(t, filepath.Join(killed, pipeline.EpisodesFile))
	want := logLines(t, filepath.Join(uninterrupted, pipeline.EpisodesFile))
	// Every question's first attempt, and a second only where the first was not kept
	// (the filter of testConfig keeps correct episodes).
	firsts, failedFirst := 0, 0
	for _, ep := range want {
		if ep.Attempt == 0 {
			firsts++
			if !ep.Correct {
				failedFirst++
			}
		}
	}
	if firsts != 100 || len(want) != 100+failedFirst || failedFirst == 0 {
		t.Errorf("uninterrupted run: got %d records, %d first attempts, want 100 and a second attempt for each of the %d that failed",
			len(want), firsts, failedFirst)
	}
	gotIDs, wantIDs := idCounts(got), idCounts(want)
	for id, n := range gotIDs {
		if n > 1 {
			t.Errorf("episode %s: %d records in the killed run's log, want 1", id, n)
		}
		if wantIDs[id] == 0 {
			t.Errorf("episode %s: in the killed run only", id)
		}
	}
	for id := range wantIDs {
		if gotIDs[id] == 0 {
			t.Errorf("episode %s: missing from the killed run", id)
		}
	}
	if len(got) != len(want) {
		t.Errorf("records: killed run %d, uninterrupted %d", len(got), len(want))
	}
	// Same ids must also mean the same outcome: the fake answers by the request only.
	byID := map[string]pipeline.Episode{}
	for _, ep := range want {
		byID[ep.ID] = ep
	}
	for _, ep := range got {
		if w, ok := byID[ep.ID]; ok && (w.Prediction != ep.Prediction || w.Correct != ep.Correct || w.StopReason != ep.StopReason) {
			t.Errorf("episode %s: killed run %q/%v/%s, uninterrupted %q/%v/%s", ep.ID, ep.Prediction, ep.Correct, ep.StopReason, w.Prediction, w.Correct, w.StopReason)
		}
	}
	for _, dir := range []string{killed, uninterrupted} {
		m := readManifest(t, dir)
		if st := m.Stages["generate"]; st == nil || st.Status != "done" {
			t.Errorf("%s: generate stage %+v, want done", dir, st)
		}
	}
	if m := readManifest(t, killed); m.Resumes < 1 {
		t.Errorf("killed run: resumes %d, want at least 1", m.Resumes)
	}
	if lo := leftovers(t, killed); len(lo) > 0 {
		t.Logf("temporary files left by killed writes (never under a final name): %v", lo)
	}
}

// waitFor polls cond until it holds; a minute without it fails the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// effective is the last record of each episode id, as a resume and the filter see them.
func effective(eps []pipeline.Episode) map[string]pipeline.Episode {
	out := map[string]pipeline.Episode{}
	for _, ep := range eps {
		out[ep.ID] = ep
	}
	return out
}

func TestSignalsStopCleanlyAndResume(t *testing.T) {
	cases := []struct {
		name        string
		sig         syscall.Signal
		twice       bool
		grace       string
		delay       time.Duration
		code        int
		interrupted bool // in-flight episodes are cut by the grace period
	}{
		{"SIGINT cuts in-flight episodes after the grace period", syscall.SIGINT, false, "200ms", 400 * time.Millisecond, exitInterrupted, true},
		{"SIGTERM cuts in-flight episodes after the grace period", syscall.SIGTERM, false, "200ms", 400 * time.Millisecond, exitTerminated, true},
		{"SIGINT lets in-flight episodes finish within the grace period", syscall.SIGINT, false, "30s", 30 * time.Millisecond, exitInterrupted, false},
		{"a second SIGTERM exits at once", syscall.SIGTERM, true, "30s", 400 * time.Millisecond, exitTerminated, false},
		{"a second SIGINT exits at once", syscall.SIGINT, true, "30s", 400 * time.Millisecond, exitInterrupted, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := newFakeModel(t)
			model.setDelay(tc.delay, tc.delay)
			var lastStart atomic.Int64 // when the latest request reached the server
			srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
				lastStart.Store(time.Now().UnixNano())
				return model.handle(ctx, r)
			})
			tmp := t.TempDir()
			cfg := testConfig(t, filepath.Join(tmp, "cfg"), srv.URL, map[string]any{
				"task.limit": 40, "run.grace_period": tc.grace, "generate.concurrency": 8,
			})
			out := filepath.Join(tmp, "run")
			env := childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}
			c := startChild(t, env, "run", "--config", cfg, "--out", out)
			// Signal once some episodes are written and a request reached the server in the
			// last 50 ms: it is in flight for at least the rest of its delay, longer than a
			// short grace period. (The episodes of one round finish together, and a signal
			// between rounds found nothing in flight to cut.)
			waitFor(t, "episodes in the log and a request just sent", func() bool {
				b, _ := os.ReadFile(filepath.Join(out, pipeline.EpisodesFile))
				return bytes.Count(b, []byte("\n")) >= 3 && time.Since(time.Unix(0, lastStart.Load())) < 50*time.Millisecond
			})
			c.signal(t, tc.sig)
			if tc.twice {
				time.Sleep(20 * time.Millisecond)
				c.signal(t, tc.sig)
			}
			if code := c.wait(t); code != tc.code {
				t.Fatalf("exit: got %d, want %d; stderr:\n%s", code, tc.code, c.stderr.String())
			}
			if !strings.Contains(c.stderr.String(), "stopping") {
				t.Errorf("stderr does not say it is stopping:\n%s", c.stderr.String())
			}
			eps := logLines(t, filepath.Join(out, pipeline.EpisodesFile))
			m := readManifest(t, out)
			if !tc.twice {
				if st := m.Stages["generate"]; st == nil || st.Status != "interrupted" {
					t.Errorf("generate stage: got %+v, want interrupted", st)
				}
				if _, ok := m.Stages["filter"]; ok {
					t.Errorf("the filter stage ran after an interrupted generate: %+v", m.Stages["filter"])
				}
			}
			cut := 0
			for _, ep := range eps {
				if ep.StopReason == pipeline.StopInterrupted {
					cut++
				}
			}
			switch {
			case tc.interrupted && cut == 0:
				t.Errorf("no episode was recorded as interrupted, want the in-flight ones (%d records)", len(eps))
			case !tc.interrupted && cut > 0:
				t.Errorf("%d episodes recorded as interrupted, want none (the grace period was long enough)", cut)
			}
			t.Logf("%d records, %d interrupted, %d requests", len(eps), cut, srv.Requests())

			// The resume completes the run: every question finished, cut ones re-run.
			model.setDelay(time.Millisecond, 3*time.Millisecond)
			if code, _, stderr := runChild(t, env, "run", "--config", cfg, "--out", out); code != 0 {
				t.Fatalf("resume: exit %d; stderr:\n%s", code, stderr)
			}
			all := logLines(t, filepath.Join(out, pipeline.EpisodesFile))
			eff := effective(all)
			if len(eff) != 40 {
				t.Errorf("after resume: %d episodes, want 40", len(eff))
			}
			for id, ep := range eff {
				if ep.Retryable() {
					t.Errorf("episode %s: still %s after the resume", id, ep.StopReason)
				}
			}
			for id, n := range idCounts(all) {
				if n > 1 && !slicesContainsRetryable(all, id) {
					t.Errorf("episode %s: %d records though none was retryable", id, n)
				}
			}
			m = readManifest(t, out)
			for _, s := range []string{"generate", "filter", "export"} {
				if st := m.Stages[s]; st == nil || st.Status != "done" {
					t.Errorf("after resume, stage %s: got %+v, want done", s, st)
				}
			}
		})
	}
}

// slicesContainsRetryable reports whether some record of id is retryable (interrupted,
// error or budget), which is what allows a second record of the same episode.
func slicesContainsRetryable(eps []pipeline.Episode, id string) bool {
	for _, ep := range eps {
		if ep.ID == id && ep.Retryable() {
			return true
		}
	}
	return false
}

func TestLockStopsASecondRunAndIsTakenOverAfterAKill(t *testing.T) {
	model := newFakeModel(t)
	model.setDelay(200*time.Millisecond, 200*time.Millisecond)
	srv := llmtest.NewServer(t, model.handle)
	tmp := t.TempDir()
	cfg := testConfig(t, filepath.Join(tmp, "cfg"), srv.URL, map[string]any{"task.limit": 20})
	out := filepath.Join(tmp, "run")
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}

	holder := startChild(t, env, "run", "--config", cfg, "--out", out)
	waitFor(t, "the first request", func() bool { return srv.Requests() > 0 })
	before, err := os.ReadFile(filepath.Join(out, pipeline.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}

	code, _, stderr := runChild(t, env, "run", "--config", cfg, "--out", out)
	if code != exitUsage {
		t.Errorf("second run: exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
	}
	if want := fmt.Sprintf("pid %d", holder.cmd.Process.Pid); !strings.Contains(stderr, want) {
		t.Errorf("second run's message does not name the holder (%s):\n%s", want, stderr)
	}
	// The refused run changed nothing the holder owns.
	after, _ := os.ReadFile(filepath.Join(out, pipeline.ManifestFile))
	var mb, ma pipeline.Manifest
	json.Unmarshal(before, &mb)
	json.Unmarshal(after, &ma)
	if ma.Resumes != mb.Resumes {
		t.Errorf("the refused run counted a resume: %d, was %d", ma.Resumes, mb.Resumes)
	}

	holder.signal(t, syscall.SIGKILL)
	holder.wait(t)
	model.setDelay(time.Millisecond, 2*time.Millisecond)
	code, _, stderr = runChild(t, env, "run", "--config", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("run after the holder was killed: exit %d; stderr:\n%s", code, stderr)
	}
	if n := len(effective(logLines(t, filepath.Join(out, pipeline.EpisodesFile)))); n != 20 {
		t.Errorf("episodes after takeover: got %d, want 20", n)
	}
	if st := readManifest(t, out).Stages["export"]; st == nil || st.Status != "done" {
		t.Errorf("export stage after takeover: %+v", st)
	}
}

// killThenResume runs `reactgen generate` with cfg into killed and kills it (SIGKILL),
// kills times, each time once the condition that progressed(i) returns (asked before
// the i-th start) holds, unless the run ends first; a run that shows no progress in
// 30 s, that exits other than 0, or kills that all came after the run ended fail the
// test. Then it resumes killed to its end and runs cfg uninterrupted into whole.
func killThenResume(t *testing.T, env childEnv, cfg, killed, whole string, kills int, progressed func(i int) func() bool) {
	t.Helper()
	landed := 0
	for i := range kills {
		ready := progressed(i)
		c := startChild(t, env, "generate", "--config", cfg, "--out", killed)
		deadline := time.Now().Add(30 * time.Second)
	watch:
		for !ready() {
			select {
			case <-c.done:
				break watch
			case <-time.After(2 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: no progress in 30 s\n%s", i, c.stderr.String())
			}
		}
		c.signal(t, syscall.SIGKILL)
		if code := c.wait(t); code == -1 {
			landed++
		} else if code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, code, c.stderr.String())
		}
	}
	if landed == 0 {
		t.Fatal("no kill found the run in flight")
	}
	if code, _, stderr := runChild(t, env, "generate", "--config", cfg, "--out", killed); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runChild(t, env, "generate", "--config", cfg, "--out", whole); code != 0 {
		t.Fatalf("uninterrupted: exit %d\n%s", code, stderr)
	}
}

// killAtRandom starts the binary with args again and again, killing it (SIGKILL) at a
// random moment within span, until kills have landed on a running process; check runs
// after each kill. It returns how many kills landed.
func killAtRandom(t *testing.T, rng *rand.Rand, kills int, span time.Duration, check func(i int), args ...string) int {
	t.Helper()
	landed := 0
	for i := 0; landed < kills && i < 4*kills; i++ {
		c := startChild(t, childEnv{}, args...)
		select {
		case <-c.done:
		case <-time.After(time.Duration(rng.Int64N(int64(span)) + 1)):
			c.signal(t, syscall.SIGKILL)
		}
		switch code := c.wait(t); code {
		case -1:
			landed++
		case 0:
		default:
			t.Fatalf("%s %d: exit %d; stderr:\n%s", args[0], i, code, c.stderr.String())
		}
		if check != nil {
			check(i)
		}
	}
	return landed
}

// timed runs the binary to its end and returns how long it took.
func timed(t *testing.T, args ...string) time.Duration {
	t.Helper()
	start := time.Now()
	if code, _, stderr := runChild(t, childEnv{}, args...); code != 0 {
		t.Fatalf("%v: exit %d; stderr:\n%s", args, code, stderr)
	}
	return time.Since(start)
}

// outputsOf is what a stage wrote, as the manifest records it: path -> sha256.
func outputsOf(t *testing.T, dir, stage string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range readManifest(t, dir).Outputs {
		if o.Stage == stage {
			out[o.Path] = o.SHA256
		}
	}
	return out
}

// sameFiles reports every file that differs between two run directories.
func sameFiles(t *testing.T, what, a, b string, names ...string) {
	t.Helper()
	for _, n := range names {
		x, errA := os.ReadFile(filepath.Join(a, n))
		y, errB := os.ReadFile(filepath.Join(b, n))
		if errA != nil || errB != nil || !bytes.Equal(x, y) {
			t.Errorf("%s: %s differs from the uninterrupted run's (%v, %v; %d and %d bytes)", what, n, errA, errB, len(x), len(y))
		}
	}
}

func TestKillFilterExportAndIndexMatchUninterrupted(t *testing.T) {
	kills := 8
	if testing.Short() {
		kills = 3
	}
	rng := killRNG(t, 0x66696c74)
	tmp := t.TempDir()
	cfg := mustAbs(t, "../../configs/demo.yaml")
	whole, killed := filepath.Join(tmp, "whole"), filepath.Join(tmp, "killed")
	sets := []string{"--set", "export.formats=[openai-chat,sharegpt,arrow-file,arrow,parquet]", "--set", "generate.progress=off"}
	if code, _, stderr := runChild(t, childEnv{}, append([]string{"generate", "--config", cfg, "--out", whole}, sets...)...); code != 0 {
		t.Fatalf("generate: exit %d; stderr:\n%s", code, stderr)
	}
	if err := os.CopyFS(killed, os.DirFS(whole)); err != nil {
		t.Fatal(err)
	}

	// runKilled runs stage on whole uninterrupted, then on killed with kills at random
	// moments within the time that took, and then to its end.
	runKilled := func(t *testing.T, stage string) {
		t.Helper()
		args := func(dir string) []string { return append([]string{stage, "--config", cfg, "--out", dir}, sets...) }
		span := timed(t, args(whole)...)
		landed := killAtRandom(t, rng, kills, span, nil, args(killed)...)
		timed(t, args(killed)...)
		t.Logf("%d kills landed within %s", landed, span)
	}
	t.Run("filter", func(t *testing.T) {
		runKilled(t, "filter")
		sameFiles(t, "filter", whole, killed, pipeline.KeptFile, pipeline.RejectedFile)
		if lo := leftovers(t, killed); len(lo) > 0 {
			t.Errorf("temporary files left after the last filter: %v", lo)
		}
	})
	t.Run("export", func(t *testing.T) {
		runKilled(t, "export")
		want, got := outputsOf(t, whole, pipeline.StageExport), outputsOf(t, killed, pipeline.StageExport)
		if len(want) == 0 {
			t.Fatal("the uninterrupted export wrote nothing")
		}
		for p, sum := range want {
			if p == "export/README.md" {
				continue // the card dates the export
			}
			if got[p] != sum {
				t.Errorf("export: %s differs from the uninterrupted run's", p)
			}
			b, err := os.ReadFile(filepath.Join(killed, p))
			if s := sha256.Sum256(b); err != nil || hex.EncodeToString(s[:]) != sum {
				t.Errorf("export: %s on disk is not what the manifest records (%v)", p, err)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("export: %s only in the killed run", p)
			}
		}
		if lo := leftovers(t, killed); len(lo) > 0 {
			t.Errorf("temporary files left after the last export: %v", lo)
		}
		entries, _ := os.ReadDir(filepath.Join(killed, pipeline.ExportDir))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".export-tmp-") {
				t.Errorf("export staging folder left after the last export: %s", e.Name())
			}
		}
	})
	t.Run("index", func(t *testing.T) {
		// A corpus large enough that a build spans many kill windows.
		corpus := filepath.Join(tmp, "corpus.jsonl")
		var b strings.Builder
		for i := range 30000 {
			fmt.Fprintf(&b, `{"title": "Vell %d", "text": "Vell %d is a hamlet on the river Oskel. It has %d houses and a mill."}`+"\n", i, i, i%97)
		}
		if err := os.WriteFile(corpus, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		demo := mustAbs(t, demoCorpus)
		wholeIx, killedIx := filepath.Join(tmp, "ix-whole", "index"), filepath.Join(tmp, "ix-killed", "index")
		span := timed(t, "index", "--corpus", corpus, "--out", wholeIx)
		// The killed one starts from an index of another corpus, which a forced rebuild
		// replaces: after every kill one of the two stands there, whole.
		timed(t, "index", "--corpus", demo, "--out", killedIx)
		old, err := index.ReadInfo(killedIx)
		if err != nil {
			t.Fatal(err)
		}
		want, err := index.ReadInfo(wholeIx)
		if err != nil {
			t.Fatal(err)
		}
		check := func(i int) {
			info, err := index.ReadInfo(killedIx)
			if err != nil {
				// Only the two-rename fallback can leave no index, and a reader puts it back.
				if rerr := index.Recover(killedIx, nil); rerr != nil {
					t.Fatalf("kill %d: no index and no recovery: %v, %v", i, err, rerr)
				}
				if info, err = index.ReadInfo(killedIx); err != nil {
					t.Fatalf("kill %d: the index is lost: %v", i, err)
				}
			}
			if info.Identity != old.Identity && info.Identity != want.Identity {
				t.Fatalf("kill %d: the index is %s, neither the old %s nor the new %s", i, info.Identity, old.Identity, want.Identity)
			}
			ix, err := index.Open(killedIx)
			if err != nil {
				t.Fatalf("kill %d: the index does not open: %v", i, err)
			}
			ix.Close()
		}
		landed := killAtRandom(t, rng, kills, span, check, "index", "--force", "--corpus", corpus, "--out", killedIx)
		timed(t, "index", "--force", "--corpus", corpus, "--out", killedIx)
		t.Logf("%d kills landed within %s", landed, span)
		got, err := index.ReadInfo(killedIx)
		if err != nil || got.Identity != want.Identity || got.Pages != want.Pages || got.Sentences != want.Sentences || got.IndexBytes != want.IndexBytes {
			t.Errorf("index after the kills: %+v %v; uninterrupted: %+v", got, err, want)
		}
		entries, _ := os.ReadDir(filepath.Dir(killedIx))
		if len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("beside the index after the last build: %q, want the index alone", names)
		}
	})
}
