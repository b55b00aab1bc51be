package envserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/reactgen/reactgen/internal/fastjson"
)

// errShuttingDown refuses a session that arrives during the drain.
var errShuttingDown = errors.New("server shutting down")

// session is one WebSocket connection and its episode.
type session struct {
	conn *websocket.Conn
	ep   *episode
	buf  []byte // the message being handled, reused for the next (read)

	mu       sync.Mutex
	busy     bool // handling a message
	draining bool // close once the message in hand is answered
	closed   bool
	idle     *time.Timer
}

// handleWS is OpenEnv's /ws: one session per connection, messages reset, step, state
// and close, replies observation, state and error.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // Accept has answered the request
	}
	conn.SetReadLimit(s.opts.MaxBodyBytes)
	ss := &session{conn: conn, ep: s.newEpisode(), buf: make([]byte, 0, 512)}
	if err := s.admit(ss); err != nil {
		if errors.Is(err, errShuttingDown) {
			s.send(r.Context(), ss, "error", wsError{Message: err.Error(), Code: CodeSessionError})
			conn.Close(websocket.StatusGoingAway, "server shutting down")
			return
		}
		active, max := s.Sessions(), s.opts.MaxSessions
		s.send(r.Context(), ss, "error", wsError{Message: err.Error(), Code: CodeCapacityReached, ActiveSessions: &active, MaxSessions: &max})
		conn.Close(websocket.StatusTryAgainLater, "capacity reached")
		return
	}
	defer s.leave(ss)
	if d := s.opts.IdleTimeout; d > 0 {
		ss.idle = time.AfterFunc(d, func() {
			s.log.Info("session idle: closing it", "idle", d)
			ss.close(websocket.StatusPolicyViolation, "session idle for longer than "+d.String())
		})
		defer ss.idle.Stop()
	}
	// Nothing cancels a hijacked connection's request context while the handler runs, and
	// the drain and expiry close the connection itself: without a cancel, each read and
	// write registers nothing on the context.
	ctx := context.WithoutCancel(r.Context())
	for {
		typ, msg, err := ss.read(ctx)
		if err != nil {
			return // closed by the client, by expiry or by the drain
		}
		if !ss.begin() {
			ss.close(websocket.StatusGoingAway, "server shutting down")
			return
		}
		if ss.idle != nil {
			ss.idle.Stop()
		}
		stop := s.handleMessage(ctx, ss, typ, msg)
		draining := ss.end()
		switch {
		case stop:
			ss.close(websocket.StatusNormalClosure, "")
			return
		case draining:
			ss.close(websocket.StatusGoingAway, "server shutting down")
			return
		}
		if ss.idle != nil {
			ss.idle.Reset(s.opts.IdleTimeout)
		}
	}
}

// keptBuffer is the largest message buffer a session keeps for its next message: a
// session that once received a large message does not hold its size (up to
// MaxBodyBytes) for the rest of its life.
const keptBuffer = 64 << 10

// read reads the next message into the session's buffer; the bytes are valid until the
// next read.
func (ss *session) read(ctx context.Context) (websocket.MessageType, []byte, error) {
	typ, r, err := ss.conn.Reader(ctx)
	if err != nil {
		return 0, nil, err
	}
	b := ss.buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, nil, err
		}
	}
	if cap(b) <= keptBuffer {
		ss.buf = b
	} else {
		ss.buf = nil
	}
	return typ, b, nil
}

// admit registers ss, or refuses it at MaxSessions or while draining.
func (s *Server) admit(ss *session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return errShuttingDown
	}
	if len(s.sessions) >= s.opts.MaxSessions {
		return fmt.Errorf("server at capacity: %d sessions of at most %d", len(s.sessions), s.opts.MaxSessions)
	}
	s.sessions[ss] = struct{}{}
	s.open.Add(1)
	return nil
}

func (s *Server) leave(ss *session) {
	ss.conn.CloseNow()
	s.mu.Lock()
	delete(s.sessions, ss)
	s.mu.Unlock()
	s.open.Done()
}

// drain closes every idle session now and every busy one once its message is answered;
// no session is admitted after it.
func (s *Server) drain() {
	s.mu.Lock()
	s.draining = true
	all := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.mu.Lock()
		ss.draining = true
		idle := !ss.busy
		ss.mu.Unlock()
		if idle {
			go ss.close(websocket.StatusGoingAway, "server shutting down")
		}
	}
}

// closeAll cuts every session still open (the drain's time is up).
func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.sessions {
		ss.conn.CloseNow()
	}
}

// begin marks the session busy; false means it is draining and must close instead.
func (ss *session) begin() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.draining {
		return false
	}
	ss.busy = true
	return true
}

// end marks the session idle and reports whether a drain asked it to close.
func (ss *session) end() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.busy = false
	return ss.draining
}

// close closes the connection with a close handshake, once.
func (ss *session) close(code websocket.StatusCode, reason string) {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return
	}
	ss.closed = true
	ss.mu.Unlock()
	ss.conn.Close(code, reason)
}

// handleMessage answers one message; it reports whether the session ends (close).
func (s *Server) handleMessage(ctx context.Context, ss *session, typ websocket.MessageType, msg []byte) (stop bool) {
	if typ != websocket.MessageText {
		s.send(ctx, ss, "error", wsError{Message: "Invalid JSON: a binary message; want a JSON text message", Code: CodeInvalidJSON})
		return false
	}
	if action, ok := plainStep(msg); ok {
		// The usual message, read in one pass; the general path below would decode it
		// to the same action.
		data, err := ss.ep.step(ctx, action)
		if err != nil {
			s.send(ctx, ss, "error", wsError{Message: err.Error(), Code: CodeExecutionError})
			return false
		}
		s.steps.Add(1)
		s.send(ctx, ss, "observation", data)
		return false
	}
	var m wsMessage
	if err := fastjson.Unmarshal(msg, &m); err != nil || m == nil {
		text := "want a JSON object"
		if err != nil {
			text = err.Error()
		}
		s.send(ctx, ss, "error", wsError{Message: "Invalid JSON: " + text, Code: CodeInvalidJSON})
		return false
	}
	var kind string
	if raw, ok := m["type"]; ok {
		fastjson.Unmarshal(raw, &kind)
	}
	var allowed []string
	switch kind {
	case "reset", "step":
		allowed = withData
	case "state", "close":
		allowed = typeOnly
	default:
		s.send(ctx, ss, "error", wsError{Message: "Unknown message type: " + kind, Code: CodeUnknownType})
		return false
	}
	if verr := extraFields(m, allowed); verr != nil {
		s.send(ctx, ss, "error", wsError{Message: "Invalid message", Code: CodeValidationError, Errors: verr})
		return false
	}
	var (
		reply string
		data  any
		err   error
	)
	switch kind {
	case "reset":
		var p resetParams
		if p, err = parseReset(m["data"], "data"); err == nil {
			data, err = ss.ep.reset(p, "data")
		}
		reply = "observation"
	case "step":
		raw, ok := m["data"]
		if !ok {
			err = invalid("missing", "Field required", rawInput(msg), "data")
		} else {
			var action string
			if action, err = parseAction(raw); err == nil {
				data, err = ss.ep.step(ctx, action)
				if err == nil {
					s.steps.Add(1)
				}
			}
		}
		reply = "observation"
	case "state":
		data, reply = ss.ep.state(), "state"
	case "close":
		return true
	}
	var ve validationError
	switch {
	case errors.As(err, &ve):
		s.send(ctx, ss, "error", wsError{Message: "Invalid message", Code: CodeValidationError, Errors: ve})
	case err != nil:
		s.send(ctx, ss, "error", wsError{Message: err.Error(), Code: CodeExecutionError})
	default:
		s.send(ctx, ss, reply, data)
	}
	return false
}

// The fields of OpenEnv's message models (WSResetMessage and WSStepMessage;
// WSStateMessage and WSCloseMessage).
var (
	withData = []string{"type", "data"}
	typeOnly = []string{"type"}
)

// extraFields is pydantic's extra="forbid" on a message model.
func extraFields(m wsMessage, allowed []string) validationError {
	var errs validationError
	for k, v := range m {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			errs = append(errs, fieldError{Type: "extra_forbidden", Loc: []any{k}, Msg: "Extra inputs are not permitted", Input: rawInput(v)})
		}
	}
	return errs
}

func (s *Server) send(ctx context.Context, ss *session, typ string, data any) {
	b, err := fastjson.Marshal(wsReply{Type: typ, Data: data})
	if err != nil {
		b, _ = fastjson.Marshal(wsReply{Type: "error", Data: wsError{Message: "encode reply: " + err.Error(), Code: CodeExecutionError}})
	}
	if err := ss.conn.Write(ctx, websocket.MessageText, b); err != nil {
		s.log.Debug("write to session", "err", err)
	}
}

// secondsDuration converts OpenEnv's timeout_s.
func secondsDuration(s float64) time.Duration {
	if s > math.MaxInt64/float64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(s * float64(time.Second))
}
