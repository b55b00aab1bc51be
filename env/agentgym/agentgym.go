// Package agentgym is a client of AgentGym's environment servers (WooooDyy/AgentGym,
// agentenv-*): text environments served over HTTP, one numbered environment per
// POST /create, a game loaded into it by POST /reset, actions sent by POST /step. The
// servers share that shape and differ in its details, which a Dialect names: the field
// that carries the environment's number (ALFWorld's "id", WebShop's "env_idx"), the reset
// field that picks the game ("game", "session_id", "data_idx"), the shape of the replies
// (ALFWorld answers an object, WebShop's reset a [observation, null] pair and its step a
// "state"), and whether a /close route exists.
//
// It consumes a server URL and a Dialect and produces, per game, a Session whose Step
// sends one action and returns the server's observation verbatim, with its reward and
// done flag. Environments are pooled: a Session's environment goes back to the Client
// when it is released and the next game resets it, as AgentGym's own clients reuse one
// environment per worker (creating a WebShop environment loads its product index).
package agentgym

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reactgen/reactgen/internal/redact"
	"github.com/reactgen/reactgen/internal/retry"
	"github.com/reactgen/reactgen/internal/safefile"
)

// Dialect is what one AgentGym server speaks over the shared routes.
type Dialect struct {
	Name string
	// IDField names the environment's number in request bodies and query strings.
	IDField string
	// GameField names the game index in the reset body.
	GameField string
	// ResetExtra are further reset fields (ALFWorld's world_type).
	ResetExtra map[string]any
	// StepObservation names the observation in the step reply.
	StepObservation string
	// Close is whether the server has POST /close; without it an environment is only
	// ever reset again.
	Close bool
}

// The dialects of the servers reactgen plays. Their routes and fields are those of
// agentenv-alfworld (server.py, model.py, env_wrapper.py) and agentenv-webshop
// (server.py, model.py, environment.py); Generic is the shape of agentenv-sciworld,
// -babyai and -textcraft.
var (
	ALFWorld = Dialect{Name: "alfworld", IDField: "id", GameField: "game",
		ResetExtra: map[string]any{"world_type": "Text"}, StepObservation: "observation"}
	WebShop = Dialect{Name: "webshop", IDField: "env_idx", GameField: "session_id", StepObservation: "state"}
	Generic = Dialect{Name: "generic", IDField: "id", GameField: "data_idx", StepObservation: "observation", Close: true}
)

// DialectFor returns the dialect of a task name (alfworld, webshop), else Generic.
func DialectFor(task string) Dialect {
	switch task {
	case ALFWorld.Name:
		return ALFWorld
	case WebShop.Name:
		return WebShop
	}
	return Generic
}

// Start is a reset's answer: the game's first observation and, where the server
// names them, its task type (ALFWorld: "pick_and_place_simple-…/trial_…") and admissible
// actions.
type Start struct {
	Observation string
	TaskType    string
	Actions     []string
}

// Result is a step's answer, the observation verbatim.
type Result struct {
	Observation string
	Reward      float64
	Done        bool
	Actions     []string
}

// ServerError is an error the server answered: an {"error": …} reply (ALFWorld answers
// its errors with status 200) or a status that asking again would not change.
type ServerError struct {
	Route   string
	Status  int
	Message string
}

func (e *ServerError) Error() string {
	if e.Status != 0 && e.Status != http.StatusOK {
		return fmt.Sprintf("agentgym %s: HTTP %d: %s", e.Route, e.Status, e.Message)
	}
	return fmt.Sprintf("agentgym %s: %s", e.Route, e.Message)
}

// Options configure a Client.
type Options struct {
	URL     string // the server's base URL, e.g. http://127.0.0.1:36001
	Dialect Dialect
	// Timeout bounds one request (AgentGym's own clients wait 300 s; a WebShop /create
	// loads a product index).
	Timeout time.Duration
	// MaxRetries retries a request the server may answer later: a connection refused or
	// reset, a timeout, a 5xx. A step is retried only when it provably never reached the
	// server (a refused connection, a 503), since a step carried out twice would change
	// the game; any other failed step ends its episode with the error.
	MaxRetries int
	Backoff    time.Duration // the first retry's wait; 0 means 500ms
	HTTP       *http.Client  // nil: a client of its own
	// Sleep replaces the retry waits (tests).
	Sleep func(ctx context.Context, d time.Duration) error
}

// maxBody bounds a reply; a WebShop page is a few kilobytes.
const maxBody = 8 << 20

// Client talks to one server. It is safe for concurrent use.
type Client struct {
	base   string
	o      Options
	http   *http.Client
	policy retry.Policy

	mu   sync.Mutex
	free []int // environments created and released, ready for the next reset
}

// New checks the URL and builds the client. It sends nothing.
func New(o Options) (*Client, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("AgentGym server URL %q is not an http(s) URL such as http://127.0.0.1:36001", redact.URL(o.URL))
	}
	if o.Dialect.IDField == "" {
		return nil, errors.New("agentgym: a dialect is required")
	}
	if o.Timeout <= 0 {
		o.Timeout = 300 * time.Second
	}
	hc := o.HTTP
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: strings.TrimRight(o.URL, "/"), o: o, http: hc,
		policy: retry.Policy{MaxRetries: o.MaxRetries, Base: o.Backoff, Max: 30 * time.Second, Jitter: retry.QuarterAdded, Sleep: o.Sleep}}, nil
}

// Create makes a new environment on the server and returns its number.
func (c *Client) Create(ctx context.Context) (int, error) {
	var raw json.RawMessage
	if err := c.post(ctx, "create", nil, &raw, true); err != nil {
		return 0, err
	}
	var n int
	if json.Unmarshal(raw, &n) == nil { // WebShop: the bare number
		return n, nil
	}
	var obj struct {
		ID    *int    `json:"id"`
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || (obj.ID == nil && obj.Error == nil) {
		return 0, &ServerError{Route: "create", Message: fmt.Sprintf("reply %s is neither a number nor {\"id\": n}", clip(raw))}
	}
	if obj.Error != nil {
		return 0, &ServerError{Route: "create", Message: *obj.Error}
	}
	return *obj.ID, nil
}

// Reset loads game into environment id.
func (c *Client) Reset(ctx context.Context, id, game int) (Start, error) {
	body := map[string]any{c.o.Dialect.IDField: id, c.o.Dialect.GameField: game}
	for k, v := range c.o.Dialect.ResetExtra {
		body[k] = v
	}
	var raw json.RawMessage
	if err := c.post(ctx, "reset", body, &raw, true); err != nil {
		return Start{}, err
	}
	var pair []json.RawMessage
	if json.Unmarshal(raw, &pair) == nil { // WebShop: [observation, null]
		var s Start
		if len(pair) == 0 || json.Unmarshal(pair[0], &s.Observation) != nil {
			return Start{}, &ServerError{Route: "reset", Message: fmt.Sprintf("reply %s has no observation first", clip(raw))}
		}
		return s, nil
	}
	var obj struct {
		Observation *string  `json:"observation"`
		TaskType    string   `json:"task_type"`
		Actions     []string `json:"available_actions"`
		Error       *string  `json:"error"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Start{}, &ServerError{Route: "reset", Message: fmt.Sprintf("reply %s is not JSON of a reset", clip(raw))}
	}
	if obj.Error != nil {
		return Start{}, &ServerError{Route: "reset", Message: *obj.Error}
	}
	if obj.Observation == nil {
		return Start{}, &ServerError{Route: "reset", Message: fmt.Sprintf("reply %s has no observation", clip(raw))}
	}
	return Start{Observation: *obj.Observation, TaskType: obj.TaskType, Actions: obj.Actions}, nil
}

// Step sends one action to environment id, as written.
func (c *Client) Step(ctx context.Context, id int, action string) (Result, error) {
	var obj map[string]json.RawMessage
	if err := c.post(ctx, "step", map[string]any{c.o.Dialect.IDField: id, "action": action}, &obj, false); err != nil {
		return Result{}, err
	}
	if e, ok := obj["error"]; ok {
		var msg string
		if json.Unmarshal(e, &msg) != nil {
			msg = string(e)
		}
		return Result{}, &ServerError{Route: "step", Message: msg}
	}
	var r Result
	ob, ok := obj[c.o.Dialect.StepObservation]
	if !ok || json.Unmarshal(ob, &r.Observation) != nil {
		return Result{}, &ServerError{Route: "step", Message: fmt.Sprintf("reply has no string %q", c.o.Dialect.StepObservation)}
	}
	if v, ok := obj["reward"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &r.Reward); err != nil {
			return Result{}, &ServerError{Route: "step", Message: fmt.Sprintf("reward %s is not a number", clip(v))}
		}
	}
	if v, ok := obj["done"]; ok {
		if err := json.Unmarshal(v, &r.Done); err != nil {
			return Result{}, &ServerError{Route: "step", Message: fmt.Sprintf("done %s is not a boolean", clip(v))}
		}
	}
	if v, ok := obj["available_actions"]; ok {
		_ = json.Unmarshal(v, &r.Actions) // informative only
	}
	return r, nil
}

// Close ends environment id on a server that has POST /close; elsewhere it does nothing.
func (c *Client) Close(ctx context.Context, id int) error {
	if !c.o.Dialect.Close {
		return nil
	}
	var raw json.RawMessage
	return c.post(ctx, "close", map[string]any{c.o.Dialect.IDField: id}, &raw, true)
}

// Session is one game in one environment. Step is not safe for concurrent use.
type Session struct {
	c      *Client
	id     int
	broken bool
}

// Open takes an environment from the pool (creating one when none is free), resets it
// to game and returns the session with the game's start.
func (c *Client) Open(ctx context.Context, game int) (*Session, Start, error) {
	c.mu.Lock()
	id, ok := -1, false
	if n := len(c.free); n > 0 {
		id, ok = c.free[n-1], true
		c.free = c.free[:n-1]
	}
	c.mu.Unlock()
	if !ok {
		var err error
		if id, err = c.Create(ctx); err != nil {
			return nil, Start{}, err
		}
	}
	st, err := c.Reset(ctx, id, game)
	if err != nil {
		// An environment that failed its reset is not handed out again.
		_ = c.Close(context.WithoutCancel(ctx), id)
		return nil, Start{}, fmt.Errorf("game %d: %w", game, err)
	}
	return &Session{c: c, id: id}, st, nil
}

// Step sends one action. A failed step leaves the environment in an unknown state: it
// is not pooled again.
func (s *Session) Step(ctx context.Context, action string) (Result, error) {
	r, err := s.c.Step(ctx, s.id, action)
	if err != nil {
		s.broken = true
	}
	return r, err
}

// Release hands the environment back for the next game (a broken one is closed).
func (s *Session) Release(ctx context.Context) {
	if s.broken {
		_ = s.c.Close(ctx, s.id)
		return
	}
	s.c.mu.Lock()
	s.c.free = append(s.c.free, s.id)
	s.c.mu.Unlock()
}

// again is a failure worth another try.
type again struct{ err error }

func (e *again) Error() string { return e.err.Error() }
func (e *again) Unwrap() error { return e.err }

// post sends body to route and decodes the reply into out. idempotent says whether a
// request that may have reached the server can be sent again.
func (c *Client) post(ctx context.Context, route string, body any, out any, idempotent bool) error {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return err
		}
	}
	var reply []byte
	_, err := retry.Do(ctx, c.policy, func(ctx context.Context) error {
		var err error
		reply, err = c.once(ctx, route, data, idempotent)
		return err
	}, func(err error) (retry.Verdict, time.Duration) {
		var a *again
		if errors.As(err, &a) {
			return retry.Again, 0
		}
		return retry.Permanent, 0
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("AgentGym server %s: %w", redact.URL(c.base), err)
	}
	if err := json.Unmarshal(reply, out); err != nil {
		return &ServerError{Route: route, Status: http.StatusOK, Message: fmt.Sprintf("reply %s is not JSON: %v", clip(reply), err)}
	}
	return nil
}

// once makes one request. A failure worth retrying comes back as *again.
func (c *Client) once(ctx context.Context, route string, data []byte, idempotent bool) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/"+route, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		err = fmt.Errorf("POST /%s: %w", route, err)
		if idempotent || notSent(err) {
			return nil, &again{err: err}
		}
		return nil, err
	}
	defer resp.Body.Close()
	reply, err := safefile.ReadBounded(resp.Body, "AgentGym /"+route+" reply", maxBody)
	if resp.StatusCode == http.StatusOK {
		if err != nil {
			var tl *safefile.TooLargeError
			if idempotent && !errors.As(err, &tl) {
				return nil, &again{err: err}
			}
			return nil, err
		}
		return reply, nil
	}
	serr := &ServerError{Route: route, Status: resp.StatusCode, Message: strings.TrimSpace(string(clip(reply)))}
	if resp.StatusCode == http.StatusServiceUnavailable || (idempotent && retry.TransientStatus(resp.StatusCode)) {
		return nil, &again{err: serr}
	}
	return nil, serr
}

// notSent reports whether a transport error proves the request never reached the
// server: the connection was refused (or never made).
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func clip(b []byte) []byte {
	if len(b) > 200 {
		return append(append([]byte(nil), b[:200]...), "..."...)
	}
	return b
}

// GameID is the question id reactgen gives AgentGym game n of a task.
func GameID(task string, n int) string { return task + "-" + strconv.Itoa(n) }

// ParseGameID reads the game number back from a GameID.
func ParseGameID(task, id string) (int, error) {
	rest, ok := strings.CutPrefix(id, task+"-")
	n, err := strconv.Atoi(rest)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("question id %q is not a %s game id (%s-<n>)", id, task, task)
	}
	return n, nil
}
