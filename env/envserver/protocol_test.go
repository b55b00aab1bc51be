package envserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envserver"
	"github.com/reactgen/reactgen/env/envtest"
	"github.com/reactgen/reactgen/pipeline"
)

func testServer(t *testing.T, o envserver.Options) (*envserver.Server, string) {
	t.Helper()
	if o.Corpus == nil {
		o.Corpus = envtest.NewMemory(envtest.Pages())
	}
	if o.Questions == nil {
		o.Questions = testQuestions
	}
	if o.Env.Task == "" {
		o.Env.Task = pipeline.TaskHotpotQA
	}
	o.TaskPath = "questions.json"
	srv := newServer(t, o)
	base, _ := serve(t, srv)
	return srv, base
}

func TestInfoRoutes(t *testing.T) {
	_, base := testServer(t, envserver.Options{})
	h := httpClient{base}

	code, b := h.do(t, "GET", "/health", nil)
	var hr healthResponse
	decodeStrict(t, b, &hr)
	if code != 200 || hr.Status != "healthy" {
		t.Errorf("GET /health: %d %s", code, b)
	}

	code, b = h.do(t, "GET", "/schema", nil)
	var sr schemaResponse
	decodeStrict(t, b, &sr)
	if code != 200 {
		t.Fatalf("GET /schema: %d %s", code, b)
	}
	// The action field /schema names is the one /step reads.
	props, _ := sr.Action["properties"].(map[string]any)
	req, _ := sr.Action["required"].([]any)
	if _, ok := props["action"]; !ok || len(req) != 1 || req[0] != "action" || sr.Action["additionalProperties"] != false {
		t.Errorf("action schema: %v, want the required string field action and no other but metadata", sr.Action)
	}
	var fields []string
	for k := range sr.Observation["properties"].(map[string]any) {
		fields = append(fields, k)
	}
	for _, f := range []string{"done", "reward", "metadata", "text", "f1", "answer", "question_id"} {
		if !strings.Contains(" "+strings.Join(fields, " ")+" ", " "+f+" ") {
			t.Errorf("observation schema lacks %s: %v", f, fields)
		}
	}
	if _, ok := sr.State["properties"].(map[string]any)["step_count"]; !ok {
		t.Errorf("state schema lacks step_count: %v", sr.State)
	}

	// Stateless as OpenEnv's: a fresh environment's state.
	code, b = h.do(t, "GET", "/state", nil)
	var st map[string]any
	json.Unmarshal(b, &st)
	if code != 200 || st["step_count"] != 0.0 || st["episode_id"] != nil {
		t.Errorf("GET /state: %d %s", code, b)
	}

	code, b = h.do(t, "GET", "/metadata", nil)
	var md map[string]any
	decodeStrict(t, b, &md)
	if code != 200 || md["name"] == "" {
		t.Errorf("GET /metadata: %d %s", code, b)
	}

	for _, r := range []struct{ method, path string }{{"GET", "/nope"}, {"GET", "/reset"}, {"DELETE", "/step"}, {"POST", "/health"}} {
		code, b := h.do(t, r.method, r.path, nil)
		var e fastAPIError
		if json.Unmarshal(b, &e) != nil || len(e.Detail) == 0 || (code != 404 && code != 405) {
			t.Errorf("%s %s: %d %s, want 404 or 405 with a detail", r.method, r.path, code, b)
		}
	}
}

func TestResetPicksTheQuestion(t *testing.T) {
	_, base := testServer(t, envserver.Options{})
	h := httpClient{base}
	ws := dialWS(t, base)
	for _, tt := range []struct {
		name string
		data map[string]any
		want string
	}{
		{"question_id", map[string]any{"question_id": "ferry"}, "ferry"},
		{"question_id over seed", map[string]any{"question_id": "birds", "seed": 0}, "birds"},
		{"seed is the position", map[string]any{"seed": 2}, "ferry"},
		{"seed 0", map[string]any{"seed": 0, "episode_id": "run-7"}, "lake"},
	} {
		if got := h.reset(t, tt.data); got.Observation.QuestionID != tt.want {
			t.Errorf("%s over HTTP: question %q, want %q", tt.name, got.Observation.QuestionID, tt.want)
		}
		if got := ws.reset(t, tt.data); got.Observation.QuestionID != tt.want || got.Observation.Text != "Question: "+byID(tt.want).Question {
			t.Errorf("%s over /ws: %+v, want question %q", tt.name, got.Observation, tt.want)
		}
	}
	// No question named: the next one, in order, round the list.
	var order []string
	for range 4 {
		order = append(order, ws.reset(t, nil).Observation.QuestionID)
	}
	if strings.Join(order, ",") != "lake,birds,ferry,lake" {
		t.Errorf("resets without a question: %v, want the questions in order", order)
	}
	// episode_id and max_steps are the session's state.
	ws.reset(t, map[string]any{"question_id": "lake", "episode_id": "ep-1", "max_steps": 2})
	var st map[string]any
	json.Unmarshal(ws.call(t, map[string]any{"type": "state"}, "state"), &st)
	if st["episode_id"] != "ep-1" || st["step_count"] != 0.0 || st["question_id"] != "lake" || st["max_steps"] != 2.0 {
		t.Errorf("state after reset: %v", st)
	}
	if r := ws.step(t, "Search[Orla Vint]"); r.Done {
		t.Errorf("step 1 of max 2 is done: %+v", r)
	}
	r := ws.step(t, "Lookup[poet]")
	if !r.Done || !r.Observation.Truncated || r.Reward == nil || *r.Reward != 0 {
		t.Errorf("step 2 of max 2: %+v, want done, truncated, reward 0", r)
	}
	if e := ws.errorReply(t, map[string]any{"type": "step", "data": map[string]any{"action": "Finish[x]"}}); e.Code != envserver.CodeExecutionError {
		t.Errorf("step after the end: %+v, want EXECUTION_ERROR", e)
	}
	json.Unmarshal(ws.call(t, map[string]any{"type": "state"}, "state"), &st)
	if st["step_count"] != 2.0 || st["done"] != true {
		t.Errorf("state at the end: %v", st)
	}
	// No limit unless asked: the official environment has none.
	ws.reset(t, map[string]any{"question_id": "lake"})
	for i := range 30 {
		if r := ws.step(t, "Lookup[poet]"); r.Done {
			t.Fatalf("step %d without max_steps ended the episode", i+1)
		}
	}
	if r := ws.step(t, "Finish[Marrow Lake]"); !r.Done || *r.Reward != 1 || *r.Observation.F1 != 1 {
		t.Errorf("Finish with the gold answer: %+v", r)
	}
	ws.reset(t, map[string]any{"question_id": "birds"})
	if r := ws.step(t, "Finish[herons]"); *r.Reward != 0 || *r.Observation.F1 <= 0 || *r.Observation.F1 >= 1 {
		t.Errorf("Finish with a partial answer: reward %v f1 %v, want 0 and a partial F1", *r.Reward, *r.Observation.F1)
	}
}

func byID(id string) pipeline.Question {
	for _, q := range testQuestions {
		if q.ID == id {
			return q
		}
	}
	return pipeline.Question{}
}

func TestBadHTTPRequests(t *testing.T) {
	ix := openDemo(t)
	_, base := testServer(t, envserver.Options{Corpus: ix, Retriever: ix, MaxBodyBytes: 8 << 10})
	h := httpClient{base}
	many := make([]string, 600)
	for i := range many {
		many[i] = "x"
	}
	for _, tt := range []struct {
		name, path string
		body       any
		code       int
		loc        string // the first error's loc, joined by "."
	}{
		{"reset: not JSON", "/reset", "{seed: 1", 422, "body.1"},
		{"reset: null is the defaults", "/reset", "null", 200, ""},
		{"reset: not an object", "/reset", "[1]", 422, "body"},
		{"reset: negative seed", "/reset", map[string]any{"seed": -1}, 422, "body.seed"},
		{"reset: seed past the questions", "/reset", map[string]any{"seed": 3}, 422, "body.seed"},
		{"reset: seed not an integer", "/reset", map[string]any{"seed": "x"}, 422, "body.seed"},
		{"reset: unknown question", "/reset", map[string]any{"question_id": "nope"}, 422, "body.question_id"},
		{"reset: max_steps 0", "/reset", map[string]any{"max_steps": 0}, 422, "body.max_steps"},
		{"reset: episode_id too long", "/reset", map[string]any{"episode_id": strings.Repeat("x", 256)}, 422, "body.episode_id"},
		{"step: no body", "/step", nil, 422, "body"},
		{"step: no action", "/step", map[string]any{}, 422, "body.action"},
		{"step: action not an object", "/step", map[string]any{"action": "Search[x]"}, 422, "body.action"},
		{"step: action without its field", "/step", map[string]any{"action": map[string]any{"text": "Search[x]"}}, 422, "body.action.action"},
		{"step: action field not a string", "/step", map[string]any{"action": map[string]any{"action": 3}}, 422, "body.action.action"},
		{"step: timeout_s 0", "/step", map[string]any{"action": map[string]any{"action": "Search[x]"}, "timeout_s": 0}, 422, "body.timeout_s"},
		{"step: body over the limit", "/step", map[string]any{"action": map[string]any{"action": strings.Repeat("x", 16<<10)}}, 413, ""},
		{"retrieve: no queries", "/retrieve", map[string]any{"topk": 3}, 422, "body.queries"},
		{"retrieve: queries not a list", "/retrieve", map[string]any{"queries": "lake"}, 422, "body.queries"},
		{"retrieve: topk too large", "/retrieve", map[string]any{"queries": []string{"x"}, "topk": 1000}, 422, "body.topk"},
		{"retrieve: too many documents", "/retrieve", map[string]any{"queries": many, "topk": 100}, 422, "body.queries"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, b := h.do(t, "POST", tt.path, tt.body)
			if code != tt.code {
				t.Fatalf("%d %s, want %d", code, b, tt.code)
			}
			if code == 200 {
				return
			}
			var e fastAPIError
			decodeStrict(t, b, &e)
			if tt.loc == "" {
				var s string
				if json.Unmarshal(e.Detail, &s) != nil || s == "" {
					t.Errorf("detail %s, want a message", e.Detail)
				}
				return
			}
			var list []struct {
				Type  string `json:"type"`
				Loc   []any  `json:"loc"`
				Msg   string `json:"msg"`
				Input any    `json:"input"`
			}
			if err := json.Unmarshal(e.Detail, &list); err != nil || len(list) == 0 {
				t.Fatalf("detail %s, want pydantic's error list", e.Detail)
			}
			var loc []string
			for _, l := range list[0].Loc {
				loc = append(loc, strings.TrimSuffix(strings.TrimSuffix(jsonText(l), ".0"), ""))
			}
			if strings.Join(loc, ".") != tt.loc || list[0].Msg == "" || list[0].Type == "" {
				t.Errorf("error %+v, want loc %s with a type and a message", list[0], tt.loc)
			}
		})
	}
	// The server is still up and answering.
	if r := h.reset(t, nil); r.Observation.Text == "" {
		t.Error("reset after the bad requests answered nothing")
	}
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestBadWSMessages(t *testing.T) {
	_, base := testServer(t, envserver.Options{MaxBodyBytes: 1 << 10})
	ws := dialWS(t, base)
	for _, tt := range []struct {
		name string
		msg  any
		code string
	}{
		{"not JSON", []byte(`{"type": "reset"`), envserver.CodeInvalidJSON},
		{"not an object", []byte(`[1, 2]`), envserver.CodeInvalidJSON},
		{"unknown type", map[string]any{"type": "jump"}, envserver.CodeUnknownType},
		{"no type", map[string]any{"data": map[string]any{}}, envserver.CodeUnknownType},
		{"extra field", map[string]any{"type": "state", "data": 1}, envserver.CodeValidationError},
		{"step without data", map[string]any{"type": "step"}, envserver.CodeValidationError},
		{"step without the action field", map[string]any{"type": "step", "data": map[string]any{"act": "Search[x]"}}, envserver.CodeValidationError},
		{"step with an extra action field", map[string]any{"type": "step", "data": map[string]any{"action": "Search[x]", "x": 1}}, envserver.CodeValidationError},
		{"reset with a bad seed", map[string]any{"type": "reset", "data": map[string]any{"seed": -4}}, envserver.CodeValidationError},
		{"reset with an unknown question", map[string]any{"type": "reset", "data": map[string]any{"question_id": "nope"}}, envserver.CodeValidationError},
	} {
		if e := ws.errorReply(t, tt.msg); e.Code != tt.code || e.Message == "" {
			t.Errorf("%s: %+v, want code %s", tt.name, e, tt.code)
		}
	}
	// The session goes on after every error.
	ws.reset(t, map[string]any{"question_id": "lake"})
	if r := ws.step(t, "Search[Orla Vint]"); !strings.HasPrefix(r.Observation.Text, "Orla Vint") {
		t.Errorf("step after the errors: %q", r.Observation.Text)
	}
	// A message over the limit closes the session with 1009, as the WebSocket protocol
	// says; the server stays up.
	ws.send(t, map[string]any{"type": "step", "data": map[string]any{"action": strings.Repeat("x", 2<<10)}})
	_, _, err := ws.conn.Read(t.Context())
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("a message over the limit: %v, want close 1009", err)
	}
	if r := dialWS(t, base).reset(t, nil); r.Observation.Text == "" {
		t.Error("a new session after the closed one answered nothing")
	}
}

func TestRetrieve(t *testing.T) {
	ix := openDemo(t)
	qs := loadDemo(t, pipeline.TaskHotpotQA)
	_, base := testServer(t, envserver.Options{Corpus: ix, Retriever: ix, Questions: qs})
	h := httpClient{base}
	code, b := h.do(t, "POST", "/retrieve", map[string]any{"queries": []string{"Peiloux Observatory", "Hufyk River city", "zzqx"}, "topk": 2, "return_scores": true})
	if code != 200 {
		t.Fatalf("POST /retrieve: %d %s", code, b)
	}
	var scored struct {
		Result [][]struct {
			Document struct {
				Title    string `json:"title"`
				Text     string `json:"text"`
				Contents string `json:"contents"`
			} `json:"document"`
			Score float64 `json:"score"`
		} `json:"result"`
	}
	decodeStrict(t, b, &scored)
	if len(scored.Result) != 3 || len(scored.Result[0]) != 2 || len(scored.Result[2]) != 0 {
		t.Fatalf("result: %s, want 2, 2 and 0 documents", b)
	}
	top := scored.Result[0][0]
	if top.Document.Title != "Peiloux" || top.Score <= 0 || top.Score < scored.Result[0][1].Score {
		t.Errorf("best for Peiloux Observatory: %+v", scored.Result[0])
	}
	// Search-R1 reads the title as the first line of contents, quotes stripped, and the
	// text as the rest (generation.py, _passages2string).
	lines := strings.SplitN(top.Document.Contents, "\n", 2)
	if lines[0] != `"Peiloux"` || lines[1] != top.Document.Text || !strings.HasPrefix(top.Document.Text, "Peiloux is a city") {
		t.Errorf("contents %q, want \"Peiloux\" then the page's text", top.Document.Contents)
	}
	// Without scores: lists of documents; topk unset is Search-R1's default 3.
	code, b = h.do(t, "POST", "/retrieve", map[string]any{"queries": []string{"city river"}})
	var plain struct {
		Result [][]map[string]string `json:"result"`
	}
	decodeStrict(t, b, &plain)
	if code != 200 || len(plain.Result) != 1 || len(plain.Result[0]) != envserver.DefaultTopK || plain.Result[0][0]["contents"] == "" {
		t.Errorf("POST /retrieve without scores: %d %s", code, b)
	}
}

func TestRetrieveNeedsAnIndex(t *testing.T) {
	_, base := testServer(t, envserver.Options{})
	code, b := httpClient{base}.do(t, "POST", "/retrieve", map[string]any{"queries": []string{"x"}})
	var e fastAPIError
	decodeStrict(t, b, &e)
	if code != http.StatusNotImplemented {
		t.Errorf("POST /retrieve without a retriever: %d %s, want 501", code, b)
	}
}

func TestSessionCap(t *testing.T) {
	srv, base := testServer(t, envserver.Options{MaxSessions: 3})
	var open []*wsClient
	for range 3 {
		ws := dialWS(t, base)
		ws.reset(t, nil)
		open = append(open, ws)
	}
	extra := dialWS(t, base)
	r := extra.recv(t)
	var e wsErrorData
	decodeStrict(t, r.Data, &e)
	if r.Type != "error" || e.Code != envserver.CodeCapacityReached || e.MaxSessions == nil || *e.MaxSessions != 3 || *e.ActiveSessions != 3 {
		t.Fatalf("the fourth session: %s %s, want CAPACITY_REACHED at 3", r.Type, r.Data)
	}
	// Closing a session frees its place.
	open[0].call(t, map[string]any{"type": "state"}, "state")
	open[0].send(t, map[string]any{"type": "close"})
	_, _, err := open[0].conn.Read(t.Context())
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("close: %v, want a normal closure", err)
	}
	waitFor(t, func() bool { return srv.Sessions() == 2 })
	dialWS(t, base).reset(t, nil)
}

func TestIdleSessionsExpire(t *testing.T) {
	srv, base := testServer(t, envserver.Options{IdleTimeout: 150 * time.Millisecond})
	busy, idle := dialWS(t, base), dialWS(t, base)
	busy.reset(t, nil)
	idle.reset(t, nil)
	// The busy session keeps sending for longer than the timeout; the idle one does not.
	for range 6 {
		busy.call(t, map[string]any{"type": "state"}, "state")
		time.Sleep(50 * time.Millisecond)
	}
	_, _, err := idle.conn.Read(t.Context())
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("idle session: %v, want closed 1008 (idle)", err)
	}
	if r := busy.step(t, "Search[Orla Vint]"); r.Observation.Text == "" {
		t.Error("the busy session was closed")
	}
	waitFor(t, func() bool { return srv.Sessions() == 1 })
}

// TestDrain stops the server while a step is in flight: the step is answered, then every
// session is closed with 1001 and Serve returns.
func TestDrain(t *testing.T) {
	slow := &slowCorpus{Corpus: envtest.NewMemory(envtest.Pages()), started: make(chan struct{}), release: make(chan struct{})}
	srv := newServer(t, envserver.Options{Corpus: slow, Env: env.Options{Task: pipeline.TaskHotpotQA}, Questions: testQuestions, TaskPath: "q"})
	base, stop := serve(t, srv)
	inFlight, idle := dialWS(t, base), dialWS(t, base)
	inFlight.reset(t, nil)
	idle.reset(t, nil)
	inFlight.send(t, map[string]any{"type": "step", "data": map[string]any{"action": "Search[Orla Vint]"}})
	<-slow.started
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	_, _, err := idle.conn.Read(t.Context())
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("idle session at the drain: %v, want 1001", err)
	}
	close(slow.release)
	if r := inFlight.recv(t); r.Type != "observation" || !strings.Contains(string(r.Data), "Orla Vint (born 1950)") {
		t.Errorf("the step in flight at the drain: %s %s, want its observation", r.Type, r.Data)
	}
	_, _, err = inFlight.conn.Read(t.Context())
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("the busy session after its reply: %v, want 1001", err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, _, err := websocket.Dial(ctx, strings.Replace(base, "http", "ws", 1)+"/ws", nil); err == nil {
		t.Error("a new session was accepted after the drain")
	}
}

// slowCorpus holds its first Page call until release.
type slowCorpus struct {
	env.Corpus
	started, release chan struct{}
	once             bool
}

func (c *slowCorpus) Page(ctx context.Context, title string, m env.Match) (env.Page, bool, error) {
	if !c.once {
		c.once = true
		close(c.started)
		select {
		case <-c.release:
		case <-ctx.Done():
			return env.Page{}, false, ctx.Err()
		}
	}
	return c.Corpus.Page(ctx, title, m)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(errors.New("condition not reached in 10s"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// FEVER's ids are numbers in its files; a client may send one as a JSON number.
func TestNumericQuestionID(t *testing.T) {
	_, base := testServer(t, envserver.Options{Env: env.Options{Task: pipeline.TaskFEVER}, Questions: feverQuestions})
	ws := dialWS(t, base)
	r := ws.reset(t, map[string]any{"question_id": 102})
	if r.Observation.QuestionID != "102" || r.Observation.Text != "Claim: "+feverQuestions[1].Question {
		t.Errorf("reset with question_id 102: %+v", r.Observation)
	}
	if f := ws.step(t, "Finish[REFUTES]"); *f.Reward != 1 || *f.Observation.F1 != 1 || *f.Observation.Answer != "REFUTES" {
		t.Errorf("Finish[REFUTES] on a REFUTES claim: reward %v f1 %v answer %q", *f.Reward, *f.Observation.F1, *f.Observation.Answer)
	}
	if e := ws.errorReply(t, map[string]any{"type": "reset", "data": map[string]any{"question_id": true}}); e.Code != envserver.CodeValidationError {
		t.Errorf("question_id true: %+v, want VALIDATION_ERROR", e)
	}
}

// TestThousandsOfSessions holds 2,000 sessions open at once (OpenEnv's own default is
// one), each mid-episode, then plays a step in every one: each gets its own episode.
func TestThousandsOfSessions(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	srv, base := testServer(t, envserver.Options{})
	clients := make([]*wsClient, n)
	for i := range clients {
		clients[i] = dialWS(t, base)
		clients[i].reset(t, map[string]any{"seed": i % len(testQuestions)})
		clients[i].step(t, "Search[Marrow Lake]")
	}
	if got := srv.Sessions(); got != n {
		t.Fatalf("open sessions: %d, want %d", got, n)
	}
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			b, _ := json.Marshal(map[string]any{"type": "step", "data": map[string]any{"action": "Lookup[heron]"}})
			if err := c.conn.Write(t.Context(), websocket.MessageText, b); err != nil {
				errs <- err
				return
			}
			_, reply, err := c.conn.Read(t.Context())
			if err != nil {
				errs <- err
				return
			}
			var r wsResponse
			var res stepResult
			if json.Unmarshal(reply, &r) != nil || json.Unmarshal(r.Data, &res) != nil ||
				res.Observation.Text != "(Result 1 / 3) Its reed beds shelter a colony of grey herons." || res.Observation.Step != 2 ||
				res.Observation.QuestionID != testQuestions[i%len(testQuestions)].ID {
				errs <- fmt.Errorf("session %d: %s", i, reply)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDrainHTTP stops the server while an HTTP step is in flight: the step is answered.
func TestDrainHTTP(t *testing.T) {
	slow := &slowCorpus{Corpus: envtest.NewMemory(envtest.Pages()), started: make(chan struct{}), release: make(chan struct{})}
	srv := newServer(t, envserver.Options{Corpus: slow, Env: env.Options{Task: pipeline.TaskHotpotQA}, Questions: testQuestions, TaskPath: "q"})
	base, stop := serve(t, srv)
	type reply struct {
		code int
		body []byte
	}
	got := make(chan reply, 1)
	go func() {
		resp, err := http.Post(base+"/step", "application/json", strings.NewReader(`{"action": {"action": "Search[Orla Vint]"}}`))
		if err != nil {
			got <- reply{0, []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- reply{resp.StatusCode, b}
	}()
	<-slow.started
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	time.Sleep(50 * time.Millisecond) // the drain has begun and waits for the request
	close(slow.release)
	r := <-got
	if r.code != 200 || !strings.Contains(string(r.body), "Orla Vint (born 1950)") {
		t.Errorf("the HTTP step in flight at the drain: %d %s", r.code, r.body)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
