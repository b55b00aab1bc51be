// Package agentgymtest serves fake AgentGym environment servers on 127.0.0.1 for tests:
// ALFWorld and WebShop with the routes, request bodies and reply shapes of
// agentenv-alfworld and agentenv-webshop (WooooDyy/AgentGym), over a small fictional
// household and shop written here, each game with a known solution. ALFWorld answers
// its errors as {"error": …} with status 200, as its server does; WebShop answers a
// reset with [observation, null] and a step with {state, reward, done, info}.
//
// It consumes the games (Household, Shop, or a test's own) and produces an
// httptest.Server with a log of the actions it received, and faults a test can turn on:
// a server that fails the next requests with 503, answers slowly, or is gone.
package agentgymtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a fake AgentGym server.
type Server struct {
	*httptest.Server

	mu      sync.Mutex
	actions map[int][]string // per environment, every action stepped, in order
	created int
	resets  []int // the games reset, in order

	fail  atomic.Int64 // the next n requests answer 503
	delay atomic.Int64 // each request waits this long (nanoseconds) first
}

// AllActions returns every action received, per environment.
func (s *Server) AllActions() map[int][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int][]string{}
	for k, v := range s.actions {
		out[k] = slices.Clone(v)
	}
	return out
}

// Created is how many environments /create made.
func (s *Server) Created() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created
}

// FailNext makes the next n requests answer 503 Service Unavailable.
func (s *Server) FailNext(n int) { s.fail.Store(int64(n)) }

// Delay makes every request wait d before it is served.
func (s *Server) Delay(d time.Duration) { s.delay.Store(int64(d)) }

func (s *Server) gate(w http.ResponseWriter, r *http.Request) bool {
	if d := time.Duration(s.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return false
		}
	}
	for {
		n := s.fail.Load()
		if n <= 0 {
			return true
		}
		if s.fail.CompareAndSwap(n, n-1) {
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
			return false
		}
	}
}

// request gates r and decodes its JSON body into v; it reports false when it answered
// r already (a fault, or a body that does not fit).
func (s *Server) request(w http.ResponseWriter, r *http.Request, v any) bool {
	return s.gate(w, r) && decode(w, r, v)
}

// noteCreated counts an environment /create made.
func (s *Server) noteCreated() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created++
}

// noteReset records that game was reset.
func (s *Server) noteReset(game int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resets = append(s.resets, game)
}

func (s *Server) record(id int, action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.actions == nil {
		s.actions = map[int][]string{}
	}
	s.actions[id] = append(s.actions[id], action)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body into v, answering FastAPI's 422 when it does not fit.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(map[string]any{"detail": []map[string]any{{"msg": err.Error(), "type": "value_error"}}})
		return false
	}
	return true
}
