package envserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reactgen/reactgen/env/envserver"
)

// An OpenEnv client written from OpenEnv's own models (meta-pytorch/OpenEnv,
// src/openenv/core/env_server/types.py and serialization.py; env_client.py for the
// WebSocket exchange). The reply models OpenEnv declares with extra="forbid" are
// decoded strictly, so a field the protocol does not have fails the test.

// stepResult is ResetResponse and StepResponse (extra="forbid"), and the data of a
// WSObservationResponse: serialize_observation's dict.
type stepResult struct {
	Observation observation `json:"observation"`
	Reward      *float64    `json:"reward"`
	Done        bool        `json:"done"`
}

// observation is the environment's observation dict as /schema names its fields.
type observation struct {
	Text       string   `json:"text"`
	Action     string   `json:"action"`
	QuestionID string   `json:"question_id"`
	Question   string   `json:"question"`
	Answer     *string  `json:"answer"`
	F1         *float64 `json:"f1"`
	Step       int      `json:"step"`
	Truncated  bool     `json:"truncated"`
}

// wsResponse is WSObservationResponse, WSStateResponse and WSErrorResponse (each
// extra="forbid": type and data only).
type wsResponse struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// wsErrorData is a WSErrorResponse's data: message and code, with the extras
// http_server.py adds per code.
type wsErrorData struct {
	Message        string `json:"message"`
	Code           string `json:"code"`
	Errors         []any  `json:"errors"`
	ActiveSessions *int   `json:"active_sessions"`
	MaxSessions    *int   `json:"max_sessions"`
}

// schemaResponse is SchemaResponse (extra="forbid").
type schemaResponse struct {
	Action      map[string]any `json:"action"`
	Observation map[string]any `json:"observation"`
	State       map[string]any `json:"state"`
}

// healthResponse is HealthResponse (extra="forbid").
type healthResponse struct {
	Status string `json:"status"`
}

// fastAPIError is FastAPI's error body: detail, a string or a list of pydantic errors.
type fastAPIError struct {
	Detail json.RawMessage `json:"detail"`
}

func decodeStrict(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, b, err)
	}
}

// httpClient speaks OpenEnv's HTTP routes.
type httpClient struct{ base string }

func (c httpClient) do(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, c.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// reset is POST /reset with a ResetRequest body.
func (c httpClient) reset(t *testing.T, req map[string]any) stepResult {
	t.Helper()
	return c.post(t, "/reset", req)
}

// step is POST /step with a StepRequest body.
func (c httpClient) step(t *testing.T, req map[string]any) stepResult {
	t.Helper()
	return c.post(t, "/step", req)
}

// post sends req to path, wants 200 and decodes the reply strictly.
func (c httpClient) post(t *testing.T, path string, req map[string]any) stepResult {
	t.Helper()
	code, b := c.do(t, "POST", path, req)
	if code != http.StatusOK {
		t.Fatalf("POST %s %v: %d %s", path, req, code, b)
	}
	var r stepResult
	decodeStrict(t, b, &r)
	return r
}

// wsClient is EnvClient's exchange: one message, one reply.
type wsClient struct {
	conn *websocket.Conn
}

func dialWS(t testing.TB, base string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(base, "http://", "ws://", 1)+"/ws", nil)
	if err != nil {
		t.Fatalf("dial /ws: %v", err)
	}
	conn.SetReadLimit(100 << 20) // EnvClient's max_message_size_mb default
	t.Cleanup(func() { conn.CloseNow() })
	return &wsClient{conn: conn}
}

func (c *wsClient) send(t testing.TB, msg any) {
	t.Helper()
	b, ok := msg.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(msg); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("send %s: %v", b, err)
	}
}

func (c *wsClient) recv(t testing.TB) wsResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, b, err := c.conn.Read(ctx)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if typ != websocket.MessageText {
		t.Fatalf("receive: a %v message, want text", typ)
	}
	var r wsResponse
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("decode reply %s: %v", b, err)
	}
	return r
}

// call sends msg and returns the reply of type want, failing on an error reply.
func (c *wsClient) call(t testing.TB, msg any, want string) json.RawMessage {
	t.Helper()
	c.send(t, msg)
	r := c.recv(t)
	if r.Type != want {
		t.Fatalf("reply to %v: type %q (%s), want %q", msg, r.Type, r.Data, want)
	}
	return r.Data
}

func (c *wsClient) reset(t testing.TB, data map[string]any) stepResult {
	t.Helper()
	if data == nil {
		data = map[string]any{}
	}
	var r stepResult
	decodeStrictTB(t, c.call(t, map[string]any{"type": "reset", "data": data}, "observation"), &r)
	return r
}

func (c *wsClient) step(t testing.TB, action string) stepResult {
	t.Helper()
	var r stepResult
	decodeStrictTB(t, c.call(t, map[string]any{"type": "step", "data": map[string]any{"action": action}}, "observation"), &r)
	return r
}

// errorReply sends msg and returns the error reply it must get.
func (c *wsClient) errorReply(t testing.TB, msg any) wsErrorData {
	t.Helper()
	c.send(t, msg)
	r := c.recv(t)
	if r.Type != "error" {
		t.Fatalf("reply to %v: type %q (%s), want error", msg, r.Type, r.Data)
	}
	var e wsErrorData
	decodeStrictTB(t, r.Data, &e)
	return e
}

func decodeStrictTB(t testing.TB, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, b, err)
	}
}

// serve runs srv on 127.0.0.1 until the test ends (or stop is called) and returns its
// base URL.
func serve(t testing.TB, srv *envserver.Server) (base string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 10*time.Second) }()
	var stopped bool
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() })
	return "http://" + ln.Addr().String(), stop
}
