package envserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/fastjson"
)

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /reset", s.handleReset)
	m.HandleFunc("POST /step", s.handleStep)
	m.HandleFunc("GET /state", s.handleState)
	m.HandleFunc("GET /schema", s.handleSchema)
	m.HandleFunc("GET /health", s.handleHealth)
	m.HandleFunc("GET /metadata", s.handleMetadata)
	m.HandleFunc("POST /retrieve", s.handleRetrieve)
	m.HandleFunc("GET /ws", s.handleWS)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, detail("Not Found"))
	})
	s.mux = m
}

// detail is FastAPI's error body for an HTTPException: {"detail": message}.
func detail(msg string) map[string]any { return map[string]any{"detail": msg} }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := fastjson.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"detail":"encode reply"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// writeError answers err in FastAPI's shapes: a validation error 422 with its list, a
// body over the limit 413, anything else 500 with its message.
func writeError(w http.ResponseWriter, err error) {
	var ve validationError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &ve):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []fieldError(ve)})
	case errors.As(err, &tooBig):
		writeJSON(w, http.StatusRequestEntityTooLarge, detail(fmt.Sprintf("request body larger than %d bytes", tooBig.Limit)))
	case errors.Is(err, errEpisodeDone):
		writeJSON(w, http.StatusConflict, detail(err.Error()))
	default:
		writeJSON(w, http.StatusInternalServerError, detail(err.Error()))
	}
}

// readBody reads a JSON request body of at most MaxBodyBytes. An empty body is nil; a
// body that is not JSON is FastAPI's json_invalid error.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (json.RawMessage, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, nil
	}
	if !json.Valid(b) {
		var x any
		jerr := json.Unmarshal(b, &x)
		pos := 0
		var se *json.SyntaxError
		if errors.As(jerr, &se) && se.Offset > 0 {
			pos = int(se.Offset) - 1 // the offending byte, where Python's json points
		}
		return nil, validationError{{Type: "json_invalid", Loc: []any{"body", pos}, Msg: "JSON decode error", Input: map[string]any{}}}
	}
	return b, nil
}

// bodyObject splits a JSON object body into its fields; an empty body is an empty
// object when empty is allowed (ResetRequest defaults).
func bodyObject(b json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := fastjson.Unmarshal(b, &m); err != nil || m == nil {
		return nil, invalid("model_attributes_type", "Input should be a valid dictionary or object to extract fields from", rawInput(b), "body")
	}
	return m, nil
}

// handleReset is POST /reset: a fresh environment, reset with the body's parameters
// (ResetRequest: seed, episode_id and this environment's question_id and max_steps).
func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	b, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	if b != nil && string(b) != "null" { // no body, or null: ResetRequest's defaults
		if _, err := bodyObject(b); err != nil {
			writeError(w, err)
			return
		}
	}
	p, err := parseReset(b, "body")
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := s.newEpisode().reset(p, "body")
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// handleStep is POST /step: a fresh environment (as OpenEnv's HTTP step is) performs
// the action (StepRequest: action, timeout_s, request_id). A question_id beside them
// makes the fresh episode that question's, so that a Finish is scored.
func (s *Server) handleStep(w http.ResponseWriter, r *http.Request) {
	b, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	if b == nil {
		writeError(w, invalid("missing", "Field required", nil, "body"))
		return
	}
	m, err := bodyObject(b)
	if err != nil {
		writeError(w, err)
		return
	}
	raw, ok := m["action"]
	if !ok {
		writeError(w, invalid("missing", "Field required", rawInput(b), "body", "action"))
		return
	}
	action, err := parseAction(raw, "body", "action")
	if err != nil {
		writeError(w, err)
		return
	}
	ctx := r.Context()
	if v, ok := m["timeout_s"]; ok && string(v) != "null" {
		var t float64
		if fastjson.Unmarshal(v, &t) != nil || t <= 0 {
			writeError(w, invalid("greater_than", "Input should be greater than 0", rawInput(v), "body", "timeout_s"))
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, secondsDuration(t))
		defer cancel()
	}
	e := s.newEpisode()
	if v, ok := m["question_id"]; ok && string(v) != "null" {
		p, err := parseReset(json.RawMessage(`{"question_id":`+string(v)+`}`), "body")
		if err == nil {
			_, err = e.reset(p, "body")
		}
		if err != nil {
			writeError(w, err)
			return
		}
	}
	res, err := e.step(ctx, action)
	if err != nil {
		writeError(w, err)
		return
	}
	s.steps.Add(1)
	writeJSON(w, http.StatusOK, res)
}

// handleState is GET /state: the state of a fresh environment, as OpenEnv's stateless
// HTTP state is; a session's state is the /ws state message.
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.newEpisode().state())
}

func (s *Server) handleSchema(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, schemaResponse)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, health{Status: "healthy"})
}

func (s *Server) handleMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, metadata{Name: "reactgen-wikipedia",
		Description: fmt.Sprintf("The ReAct paper's Wikipedia environment (Search, Lookup, Finish) for %s, %s observations, %s actions, %d questions.",
			s.opts.Env.Task, orDefault(s.opts.Env.Observations, env.ObservationsPaper), orDefault(s.opts.Env.Actions, env.ActionsPaper), len(s.opts.Questions))})
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// retrieveRequest is Search-R1's QueryRequest.
type retrieveRequest struct {
	Queries      []string `json:"queries"`
	TopK         *int     `json:"topk"`
	ReturnScores bool     `json:"return_scores"`
}

// document is a retrieved passage as Search-R1's BM25 retriever returns it.
type document struct {
	Title    string `json:"title"`
	Text     string `json:"text"`
	Contents string `json:"contents"`
}

type scored struct {
	Document document `json:"document"`
	Score    float64  `json:"score"`
}

// handleRetrieve is Search-R1's POST /retrieve: for each query the topk pages by bm25
// relevance, as {"result": [[doc, ...], ...]}, or with return_scores
// [[{"document": doc, "score": s}, ...], ...]. A document's contents is "\"Title\"\n"
// and the page's text, the layout of Search-R1's wiki corpus.
func (s *Server) handleRetrieve(w http.ResponseWriter, r *http.Request) {
	if s.opts.Retriever == nil {
		writeJSON(w, http.StatusNotImplemented, detail("/retrieve needs the local index (env.backend: local)"))
		return
	}
	b, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := parseRetrieve(b)
	if err != nil {
		writeError(w, err)
		return
	}
	k := DefaultTopK
	if req.TopK != nil && *req.TopK > 0 {
		k = *req.TopK
	}
	if n := len(req.Queries) * k; n > MaxDocuments {
		writeError(w, invalid("too_long", fmt.Sprintf("queries times topk is %d documents, at most %d in one request", n, MaxDocuments), n, "body", "queries"))
		return
	}
	select {
	case s.retrieving <- struct{}{}:
		defer func() { <-s.retrieving }()
	case <-r.Context().Done():
		return
	}
	docs := make([][]scored, len(req.Queries))
	g, ctx := errgroup.WithContext(r.Context())
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, q := range req.Queries {
		g.Go(func() error {
			hits, err := s.opts.Retriever.Retrieve(ctx, q, k)
			if err != nil {
				return fmt.Errorf("retrieve %q: %w", q, err)
			}
			out := make([]scored, 0, len(hits))
			for _, h := range hits {
				p, ok, err := s.opts.Corpus.Page(ctx, h.Title, env.MatchPaper)
				if err != nil {
					return fmt.Errorf("retrieve %q: page %q: %w", q, h.Title, err)
				}
				if !ok {
					continue
				}
				text := env.PageText(p)
				out = append(out, scored{Document: document{Title: p.Title, Text: text, Contents: `"` + p.Title + "\"\n" + text}, Score: h.Score})
			}
			docs[i] = out
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		writeError(w, err)
		return
	}
	result := make([]any, len(docs))
	for i, d := range docs {
		if req.ReturnScores {
			result[i] = d
			continue
		}
		plain := make([]document, len(d))
		for j, x := range d {
			plain[j] = x.Document
		}
		result[i] = plain
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": result})
}

// parseRetrieve validates a QueryRequest: queries a list of strings (required), topk an
// integer or null, return_scores a boolean; within MaxQueries and MaxTopK.
func parseRetrieve(b json.RawMessage) (retrieveRequest, error) {
	var req retrieveRequest
	if b == nil {
		return req, invalid("missing", "Field required", nil, "body")
	}
	m, err := bodyObject(b)
	if err != nil {
		return req, err
	}
	var errs validationError
	if v, ok := m["queries"]; !ok {
		errs = append(errs, fieldError{Type: "missing", Loc: []any{"body", "queries"}, Msg: "Field required", Input: rawInput(b)})
	} else if fastjson.Unmarshal(v, &req.Queries) != nil || req.Queries == nil {
		errs = append(errs, fieldError{Type: "list_type", Loc: []any{"body", "queries"}, Msg: "Input should be a valid list of strings", Input: rawInput(v)})
	} else if len(req.Queries) > MaxQueries {
		errs = append(errs, fieldError{Type: "too_long", Loc: []any{"body", "queries"}, Msg: fmt.Sprintf("List should have at most %d items, not %d", MaxQueries, len(req.Queries)), Input: len(req.Queries)})
	}
	if v, ok := m["topk"]; ok && string(v) != "null" {
		n, err := nonNegativeInt(v)
		switch {
		case err != nil:
			errs = append(errs, fieldError{Type: "int_parsing", Loc: []any{"body", "topk"}, Msg: err.Error(), Input: rawInput(v)})
		case n > MaxTopK:
			errs = append(errs, fieldError{Type: "less_than_equal", Loc: []any{"body", "topk"}, Msg: fmt.Sprintf("Input should be less than or equal to %d", MaxTopK), Input: n})
		default:
			req.TopK = &n
		}
	}
	if v, ok := m["return_scores"]; ok && fastjson.Unmarshal(v, &req.ReturnScores) != nil {
		errs = append(errs, fieldError{Type: "bool_type", Loc: []any{"body", "return_scores"}, Msg: "Input should be a valid boolean", Input: rawInput(v)})
	}
	if len(errs) > 0 {
		return req, errs
	}
	return req, nil
}
