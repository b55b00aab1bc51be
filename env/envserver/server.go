// Package envserver serves the ReAct environment of package env over the network, so
// that trainers which reach environments as services can use the paper's exact
// Wikipedia environment: OpenEnv's protocol (meta-pytorch/OpenEnv's env server: HTTP
// /reset, /step, /state, /schema, /health, /metadata, each request on a fresh
// environment, and the WebSocket session protocol on /ws, a session per connection)
// and Search-R1's retrieval API (POST /retrieve) over the same index.
//
// It consumes a Corpus, a Retriever over the same pages, the environment's options and
// the task's questions, and produces JSON in those protocols' wire shapes. Memory is
// bounded: request bodies and WebSocket messages have a size limit, sessions a cap,
// connections a cap beyond it, idle sessions expire, and /retrieve bounds its queries,
// topk and the requests it answers at once. Run is `reactgen serve-env`: it serves a
// config's environment, opening its backend (the local index, built when missing, or
// what the command line hands in for MediaWiki).
//
// Imports: env, index (the local backend and /retrieve), pipeline and the internal/
// libraries; never a stage that generates, filters or exports.
package envserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/pipeline"
)

// Defaults of Options.
const (
	DefaultMaxSessions  = 4096
	DefaultMaxBodyBytes = 4 << 20
	// DefaultTopK is Search-R1's retrieval_server.py default topk.
	DefaultTopK = 3
	// MaxTopK, MaxQueries and MaxDocuments (queries times topk) bound one /retrieve
	// request; at most retrieveSlots requests are answered at once, the others wait.
	MaxTopK       = 100
	MaxQueries    = 10000
	MaxDocuments  = 50000
	retrieveSlots = 4
	// extraConns is how many connections beyond MaxSessions are accepted at once (HTTP
	// requests, and sessions to be told CAPACITY_REACHED); more wait in the backlog.
	extraConns = 1024
)

// Retriever ranks the corpus's pages for a query, best first (index.Index). It is safe
// for concurrent use; an empty result means nothing matched.
type Retriever interface {
	Retrieve(ctx context.Context, query string, k int) ([]index.Hit, error)
}

// Options configure a Server.
type Options struct {
	Corpus env.Corpus
	// Retriever serves /retrieve; nil answers it 501 (a MediaWiki backend).
	Retriever Retriever
	// Env are the environment's options (Task, observation and action modes); Gold is
	// set per episode from its question.
	Env       env.Options
	Questions []pipeline.Question
	// TaskPath names the questions' file in errors.
	TaskPath string
	// MaxSessions caps the WebSocket sessions open at once (0: DefaultMaxSessions); a
	// connection beyond it gets CAPACITY_REACHED and is closed.
	MaxSessions int
	// IdleTimeout closes a WebSocket session that sent nothing for this long (0: never).
	IdleTimeout time.Duration
	// MaxBodyBytes bounds an HTTP request body and a WebSocket message (0:
	// DefaultMaxBodyBytes).
	MaxBodyBytes int64
	Logger       *slog.Logger
}

// Server serves one environment. Its handlers are safe for concurrent use.
type Server struct {
	opts  Options
	byID  map[string]int
	next  atomic.Uint64 // the next question of a reset that names none
	log   *slog.Logger
	mux   *http.ServeMux
	steps atomic.Int64
	// retrieving holds a slot per /retrieve request being answered.
	retrieving chan struct{}

	mu       sync.Mutex
	sessions map[*session]struct{}
	draining bool
	open     sync.WaitGroup // WebSocket sessions still open
}

// New returns a server for opts. It fails when there is no question or two questions
// share an id.
func New(opts Options) (*Server, error) {
	if opts.Corpus == nil {
		return nil, errors.New("envserver: no corpus")
	}
	if len(opts.Questions) == 0 {
		return nil, fmt.Errorf("envserver: %s holds no question", opts.TaskPath)
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, byID: make(map[string]int, len(opts.Questions)), log: opts.Logger, sessions: map[*session]struct{}{},
		retrieving: make(chan struct{}, retrieveSlots)}
	for i, q := range opts.Questions {
		if _, dup := s.byID[q.ID]; dup {
			return nil, fmt.Errorf("envserver: %s: question id %q twice", opts.TaskPath, q.ID)
		}
		s.byID[q.ID] = i
	}
	s.routes()
	return s, nil
}

// pick returns the question of a reset: question_id, else seed as a position, else the
// next question in order (round robin).
func (s *Server) pick(p resetParams, loc string) (*pipeline.Question, error) {
	qs := s.opts.Questions
	switch {
	case p.questionID != nil:
		i, ok := s.byID[*p.questionID]
		if !ok {
			return nil, invalid("value_error", fmt.Sprintf("no question with id %q in %s", *p.questionID, s.opts.TaskPath), *p.questionID, loc, "question_id")
		}
		return &qs[i], nil
	case p.seed != nil:
		if *p.seed >= len(qs) {
			return nil, invalid("less_than", fmt.Sprintf("seed is the question's position: want 0 to %d (%s holds %d questions)", len(qs)-1, s.opts.TaskPath, len(qs)), *p.seed, loc, "seed")
		}
		return &qs[*p.seed], nil
	}
	i := (s.next.Add(1) - 1) % uint64(len(qs))
	return &qs[i], nil
}

// Steps is how many steps the server has performed, over HTTP and /ws.
func (s *Server) Steps() int64 { return s.steps.Load() }

// Sessions is how many WebSocket sessions are open.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Serve serves on ln until ctx ends, then drains: it stops accepting connections, lets
// HTTP requests in flight finish, answers the message each WebSocket session is
// handling and closes the session (1001, going away), and closes what is left after
// drain (0: no limit). It returns nil after a drain, or the listener's error.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	hs := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	ln = netutil.LimitListener(ln, s.opts.MaxSessions+extraConns)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("draining", "sessions", s.Sessions())
	dctx, cancel := context.Background(), func() {}
	if drain > 0 {
		dctx, cancel = context.WithTimeout(dctx, drain)
	}
	defer cancel()
	s.drain()
	err := hs.Shutdown(dctx) // closes the listener, waits for HTTP requests
	done := make(chan struct{})
	go func() { s.open.Wait(); close(done) }()
	select {
	case <-done:
	case <-dctx.Done():
		s.closeAll()
		<-done
	}
	if err != nil {
		hs.Close()
		s.log.Warn("drain cut short", "err", err)
	}
	<-errc
	return nil
}
