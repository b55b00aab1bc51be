// Package finetunetest is a fake of OpenAI's Files and fine-tuning endpoints for tests.
// It consumes requests in OpenAI's wire format (multipart uploads on POST /v1/files,
// JSON on /v1/fine_tuning/jobs) and produces OpenAI's objects ("file",
// "fine_tuning.job", "fine_tuning.job.event" lists, error objects). A job advances one
// state each time it is retrieved: validating_files, queued, running for Steps
// retrievals (one metrics event each), then succeeded, or failed when the plan says so.
// It listens on 127.0.0.1 only and records what it was sent.
package finetunetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Plan is how the server's next jobs go.
type Plan struct {
	Steps   int    // retrievals spent running (default 2)
	Fail    string // when set, the job fails with this message instead of succeeding
	Pending int    // retrievals of an upload that answer "uploaded" before "processed"
}

// File is an uploaded file as the server keeps it.
type File struct {
	ID, Name, Purpose string
	Data              []byte
}

// Job is a fine-tuning job as the server keeps it.
type Job struct {
	ID             string
	Request        map[string]any // the decoded create request
	Status         string
	Model          string
	FineTunedModel string
	plan           Plan
	step           int
	events         []event
}

type event struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created_at"`
	Level   string `json:"level"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Data    any    `json:"data"`
}

// Server is the fake.
type Server struct {
	URL string // the API root, ending in /v1
	Key string // when set, requests without "Authorization: Bearer Key" get 401

	mu      sync.Mutex
	plan    Plan
	files   map[string]*File
	pending map[string]int // uploads' retrievals left before "processed"
	jobs    map[string]*Job
	order   []string
	headers []http.Header
	// FailGets makes the next n job retrievals answer 500 (a flaky service).
	failGets int
	// Echo401 makes unauthorised answers quote the Authorization header, as some proxies do.
	Echo401 bool
	// NoJobList answers GET /v1/fine_tuning/jobs with 404, as a server without the list.
	NoJobList bool
	// NoMetadata drops the metadata of created jobs, as a server that keeps none.
	NoMetadata bool
	// LieFile, when set, is the training_file every job answer reports instead of its own.
	LieFile string
	hold    map[string]bool // operations ("upload", "create") whose answer is withheld
	held    chan string
	srv     *httptest.Server
	clock   int64
}

// Hold makes the server carry out op ("upload" or "create") and then withhold its answer
// until the client goes away, reporting on the returned channel each time it does: the
// window in which a client killed has paid for something it has no record of.
func (s *Server) Hold(op string) <-chan string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold == nil {
		s.hold = map[string]bool{}
		s.held = make(chan string, 16)
	}
	s.hold[op] = true
	return s.held
}

// Release stops withholding answers to op.
func (s *Server) Release(op string) {
	s.mu.Lock()
	delete(s.hold, op)
	s.mu.Unlock()
}

// withhold blocks, with s.mu released, until the client of r leaves, when op is held.
// It reports whether it did (the answer is then not written).
func (s *Server) withhold(op string, r *http.Request) bool {
	if !s.hold[op] {
		return false
	}
	held := s.held
	s.mu.Unlock()
	held <- op
	<-r.Context().Done()
	s.mu.Lock()
	return true
}

// New starts a server on 127.0.0.1 with the given plan for its jobs; it stops with the test.
func New(t testing.TB, plan Plan) *Server {
	t.Helper()
	s := &Server{plan: plan, files: map[string]*File{}, pending: map[string]int{}, jobs: map[string]*Job{}, clock: time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC).Unix()}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// SetPlan changes the plan of jobs created from now on.
func (s *Server) SetPlan(p Plan) {
	s.mu.Lock()
	s.plan = p
	s.mu.Unlock()
}

// FailGets makes the next n job retrievals answer 500.
func (s *Server) FailGets(n int) {
	s.mu.Lock()
	s.failGets = n
	s.mu.Unlock()
}

// Jobs returns the jobs created, oldest first.
func (s *Server) Jobs() []Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Job, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, *s.jobs[id])
	}
	return out
}

// Files returns the uploaded files.
func (s *Server) Files() []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]File, 0, len(s.files))
	for i := 1; i <= len(s.files); i++ {
		out = append(out, *s.files[fmt.Sprintf("file-%04d", i)])
	}
	return out
}

// Headers returns the headers of every request seen.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

func (s *Server) now() int64 {
	s.clock += 7
	return s.clock
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.headers = append(s.headers, r.Header.Clone())
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		msg := "Incorrect API key provided."
		if s.Echo401 {
			msg = "Incorrect API key provided: " + r.Header.Get("Authorization")
		}
		apiError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", msg)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodPost && p == "/files":
		s.upload(w, r)
	case r.Method == http.MethodGet && p == "/files":
		s.listFiles(w, r)
	case r.Method == http.MethodGet && p == "/fine_tuning/jobs":
		if s.NoJobList {
			apiError(w, http.StatusNotFound, "invalid_request_error", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
			return
		}
		s.listJobs(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/files/"):
		f, ok := s.files[strings.TrimPrefix(p, "/files/")]
		if !ok {
			apiError(w, http.StatusNotFound, "invalid_request_error", "", "No such File object: "+strings.TrimPrefix(p, "/files/"))
			return
		}
		writeJSON(w, http.StatusOK, s.fileObject(f, true))
	case r.Method == http.MethodPost && p == "/fine_tuning/jobs":
		s.create(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/fine_tuning/jobs/") && strings.HasSuffix(p, "/events"):
		s.listEvents(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/fine_tuning/jobs/"), "/events"))
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/fine_tuning/jobs/"):
		if s.failGets > 0 {
			s.failGets--
			apiError(w, http.StatusInternalServerError, "server_error", "", "The server had an error while processing your request.")
			return
		}
		s.retrieve(w, strings.TrimPrefix(p, "/fine_tuning/jobs/"))
	default:
		apiError(w, http.StatusNotFound, "invalid_request_error", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
	}
}

func (s *Server) fileObject(f *File, advance bool) map[string]any {
	status := "processed"
	if s.pending[f.ID] > 0 {
		status = "uploaded"
		if advance {
			s.pending[f.ID]--
		}
	}
	return map[string]any{"id": f.ID, "object": "file", "bytes": len(f.Data), "created_at": s.now(), "filename": f.Name,
		"purpose": f.Purpose, "status": status, "status_details": nil}
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(64 << 20); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "Expected a multipart form: "+err.Error())
		return
	}
	purpose := r.FormValue("purpose")
	if purpose != "fine-tune" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", fmt.Sprintf("'%s' is not one of ['fine-tune', 'assistants', 'batch', ...] - 'purpose'", purpose))
		return
	}
	fh, hdr, err := r.FormFile("file")
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "Missing file")
		return
	}
	defer fh.Close()
	data, _ := io.ReadAll(fh)
	// OpenAI checks every line of a fine-tune upload is a JSON object with messages.
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		var row struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil || len(row.Messages) == 0 {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "", fmt.Sprintf("Invalid file format. Line %d is not a chat example with messages.", i+1))
			return
		}
	}
	f := &File{ID: fmt.Sprintf("file-%04d", len(s.files)+1), Name: hdr.Filename, Purpose: purpose, Data: data}
	s.files[f.ID] = f
	s.pending[f.ID] = s.plan.Pending
	if s.withhold("upload", r) {
		return
	}
	writeJSON(w, http.StatusOK, s.fileObject(f, false))
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request.")
		return
	}
	tf, _ := req["training_file"].(string)
	if f, ok := s.files[tf]; !ok {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "invalid_training_file", "invalid training_file: "+tf)
		return
	} else if s.pending[f.ID] > 0 {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "file_not_ready", "File "+tf+" is still being processed.")
		return
	}
	if vf, _ := req["validation_file"].(string); vf != "" {
		if _, ok := s.files[vf]; !ok {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "invalid_validation_file", "invalid validation_file: "+vf)
			return
		}
	}
	model, _ := req["model"].(string)
	if model == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "Missing required parameter: 'model'.")
		return
	}
	plan := s.plan
	if plan.Steps == 0 {
		plan.Steps = 2
	}
	j := &Job{ID: fmt.Sprintf("ftjob-%04d", len(s.jobs)+1), Request: req, Status: "validating_files", Model: model, plan: plan}
	s.jobs[j.ID] = j
	s.order = append(s.order, j.ID)
	s.addEvent(j, "info", "Validating training file: "+tf, "message", nil)
	if s.withhold("create", r) {
		return
	}
	writeJSON(w, http.StatusOK, s.jobObject(j))
}

func (s *Server) addEvent(j *Job, level, msg, typ string, data any) {
	j.events = append(j.events, event{ID: fmt.Sprintf("ftevent-%s-%d", j.ID, len(j.events)+1), Object: "fine_tuning.job.event",
		Created: s.now(), Level: level, Message: msg, Type: typ, Data: data})
}

// advance moves a job one state on, as if time had passed.
func (s *Server) advance(j *Job) {
	switch j.Status {
	case "validating_files":
		j.Status = "queued"
		s.addEvent(j, "info", "Files validated, moving job to queued state", "message", nil)
	case "queued":
		j.Status = "running"
		s.addEvent(j, "info", "Fine-tuning job started", "message", nil)
	case "running":
		j.step++
		if j.step <= j.plan.Steps {
			s.addEvent(j, "info", fmt.Sprintf("Step %d/%d: training loss=%.2f", j.step, j.plan.Steps, 2.0/float64(j.step)), "metrics",
				map[string]any{"step": j.step, "train_loss": 2.0 / float64(j.step), "total_steps": j.plan.Steps})
			return
		}
		if j.plan.Fail != "" {
			j.Status = "failed"
			s.addEvent(j, "error", "Fine-tuning job failed: "+j.plan.Fail, "message", nil)
			return
		}
		j.Status = "succeeded"
		suffix, _ := req(j, "suffix")
		j.FineTunedModel = fmt.Sprintf("ft:%s:reactgen-test:%s:%s", j.Model, suffix, j.ID)
		s.addEvent(j, "info", "New fine-tuned model created", "message", nil)
		s.addEvent(j, "info", "The job has successfully completed", "message", nil)
	}
}

func req(j *Job, k string) (string, bool) {
	v, ok := j.Request[k].(string)
	return v, ok
}

func (s *Server) jobObject(j *Job) map[string]any {
	hp := map[string]any{"n_epochs": "auto", "batch_size": "auto", "learning_rate_multiplier": "auto"}
	if h, ok := j.Request["hyperparameters"].(map[string]any); ok {
		for k, v := range h {
			hp[k] = v
		}
	}
	vf, _ := req(j, "validation_file")
	tf, _ := req(j, "training_file")
	o := map[string]any{
		"object": "fine_tuning.job", "id": j.ID, "model": j.Model, "created_at": s.clock, "finished_at": nil,
		"fine_tuned_model": nil, "organization_id": "org-test", "result_files": []string{}, "status": j.Status,
		"validation_file": nil, "training_file": tf, "hyperparameters": hp, "trained_tokens": nil, "error": map[string]any{},
		"seed": 42, "estimated_finish": nil, "integrations": []any{},
	}
	if vf != "" {
		o["validation_file"] = vf
	}
	if s.LieFile != "" {
		o["training_file"] = s.LieFile
	}
	o["metadata"] = nil
	if md, ok := j.Request["metadata"].(map[string]any); ok && !s.NoMetadata {
		o["metadata"] = md
	}
	switch j.Status {
	case "succeeded":
		o["fine_tuned_model"], o["finished_at"], o["trained_tokens"] = j.FineTunedModel, s.clock, 1000*j.plan.Steps
		o["result_files"] = []string{"file-result-" + j.ID}
	case "failed":
		o["finished_at"] = s.clock
		o["error"] = map[string]any{"code": "invalid_training_file", "message": j.plan.Fail, "param": "training_file"}
	}
	return o
}

func (s *Server) retrieve(w http.ResponseWriter, id string) {
	j, ok := s.jobs[id]
	if !ok {
		apiError(w, http.StatusNotFound, "invalid_request_error", "", "Could not find fine-tune: "+id)
		return
	}
	s.advance(j)
	writeJSON(w, http.StatusOK, s.jobObject(j))
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, id string) {
	j, ok := s.jobs[id]
	if !ok {
		apiError(w, http.StatusNotFound, "invalid_request_error", "", "Could not find fine-tune: "+id)
		return
	}
	limit := 20
	if v := r.URL.Query().Get("limit"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			limit = n
		}
	}
	data := make([]event, 0, limit)
	for i := len(j.events) - 1; i >= 0 && len(data) < limit; i-- { // newest first, as OpenAI lists them
		data = append(data, j.events[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": len(j.events) > len(data)})
}

// page cuts a list, newest first, after the id named by the after parameter, to limit
// items (OpenAI's cursor pagination), reporting whether more follow.
func page(r *http.Request, ids []string) ([]string, bool) {
	limit := 20
	if v := r.URL.Query().Get("limit"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			limit = n
		}
	}
	if after := r.URL.Query().Get("after"); after != "" {
		for i, id := range ids {
			if id == after {
				ids = ids[i+1:]
				break
			}
		}
	}
	if len(ids) > limit {
		return ids[:limit], true
	}
	return ids, false
}

// listJobs answers GET /v1/fine_tuning/jobs: the jobs newest first, paginated by after
// and limit, each with its metadata.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	ids := make([]string, 0, len(s.order))
	for i := len(s.order) - 1; i >= 0; i-- {
		ids = append(ids, s.order[i])
	}
	ids, more := page(r, ids)
	data := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		data = append(data, s.jobObject(s.jobs[id]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": more})
}

// listFiles answers GET /v1/files: the files of the purpose asked (all without one),
// newest first, paginated by after and limit.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	purpose := r.URL.Query().Get("purpose")
	var ids []string
	for i := len(s.files); i >= 1; i-- {
		id := fmt.Sprintf("file-%04d", i)
		if purpose == "" || s.files[id].Purpose == purpose {
			ids = append(ids, id)
		}
	}
	ids, more := page(r, ids)
	data := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		data = append(data, s.fileObject(s.files[id], false))
	}
	o := map[string]any{"object": "list", "data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(ids) > 0 {
		o["first_id"], o["last_id"] = ids[0], ids[len(ids)-1]
	}
	writeJSON(w, http.StatusOK, o)
}
