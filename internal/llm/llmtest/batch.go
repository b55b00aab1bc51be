package llmtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reactgen/reactgen/internal/jsonl"
)

// BatchFault is how the fake runs one batch of the Batch API.
type BatchFault int

// The batch faults. BatchOK runs every line.
const (
	BatchOK               BatchFault = iota
	BatchPartlyFailed                // every third line fails with a 500, in the error file
	BatchExpired                     // expires with half of its lines run; the rest are batch_expired in the error file
	BatchCancelled                   // is cancelled with half of its lines run; the rest are in neither file
	BatchValidationFailed            // fails validation: no line runs
)

// BatchInfo is one batch as the fake saw it.
type BatchInfo struct {
	ID, InputFileID, Endpoint, Status string
	Lines                             int
	Fault                             BatchFault
}

// batchRecord is one batch's state in the fake.
type batchRecord struct {
	info     BatchInfo
	polls    int
	created  int64
	output   string // file ids, once final
	errors   string
	running  bool // its lines are running
	done     int
	failed   int
	problems []map[string]any
}

// batches is the fake's Files and Batches API state.
type batches struct {
	mu     sync.Mutex
	files  map[string][]byte
	order  []string // batch ids, oldest first
	byID   map[string]*batchRecord
	faults func(n int) BatchFault
	tamper func(n int, out, errs []byte) ([]byte, []byte)
	noList bool
	next   int
	// pollsToFinish is how many status reads a batch takes from validating to final.
	pollsToFinish int
}

// TamperBatchFiles makes the output and error files of batch n (1-based) what tamper
// returns from the files the batch's lines produced, as a server gone wrong would write
// them (repeated, unreadable or oversized lines).
func (s *Server) TamperBatchFiles(tamper func(n int, out, errs []byte) ([]byte, []byte)) {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	s.batch.tamper = tamper
}

// NoBatchList answers GET /v1/batches with 404, as a server without the list does.
func (s *Server) NoBatchList() {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	s.batch.noList = true
}

// BatchLineIDs counts, for each custom_id, the batches created whose input holds it: a
// count over 1 is a line bought twice.
func (s *Server) BatchLineIDs() map[string]int {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	out := map[string]int{}
	for _, id := range s.batch.order {
		inputLines(s.batch.files[s.batch.byID[id].info.InputFileID], func(_ int, b []byte) {
			var l struct {
				CustomID string `json:"custom_id"`
			}
			if json.Unmarshal(b, &l) == nil {
				out[l.CustomID]++
			}
		})
	}
	return out
}

// SetBatchFaults makes batch n (1-based, in creation order) run with faults(n).
func (s *Server) SetBatchFaults(faults func(n int) BatchFault) {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	s.batch.faults = faults
}

// Batches returns every batch created so far, oldest first.
func (s *Server) Batches() []BatchInfo {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	out := make([]BatchInfo, len(s.batch.order))
	for i, id := range s.batch.order {
		out[i] = s.batch.byID[id].info
	}
	return out
}

// Uploads returns how many files were uploaded.
func (s *Server) Uploads() int {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	n := 0
	for id := range s.batch.files {
		if strings.HasPrefix(id, "file-in-") {
			n++
		}
	}
	return n
}

// serveBatch answers the Files and Batches endpoints; it reports false for other paths.
// A batch moves one state per status read: validating, in_progress, finalizing, then its
// final state, when its lines run through the Handler as online requests would.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimPrefix(r.URL.Path, "/v1")
	b := &s.batch
	switch {
	case p == "/files" && r.Method == http.MethodPost:
		b.upload(w, r)
	case strings.HasPrefix(p, "/files/") && strings.HasSuffix(p, "/content") && r.Method == http.MethodGet:
		b.content(w, strings.TrimSuffix(strings.TrimPrefix(p, "/files/"), "/content"))
	case p == "/batches" && r.Method == http.MethodPost:
		b.create(w, r)
	case p == "/batches" && r.Method == http.MethodGet:
		b.list(w, r)
	case strings.HasPrefix(p, "/batches/") && strings.HasSuffix(p, "/cancel") && r.Method == http.MethodPost:
		b.cancel(w, strings.TrimSuffix(strings.TrimPrefix(p, "/batches/"), "/cancel"))
	case strings.HasPrefix(p, "/batches/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(p, "/batches/")
		b.mu.Lock()
		rec, ok := b.byID[id]
		b.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, "No batch found with id '"+id+"'.", "invalid_request_error", "")
			return true
		}
		s.advance(r.Context(), rec)
		b.mu.Lock()
		body := b.wire(rec)
		b.mu.Unlock()
		writeJSON(w, http.StatusOK, body)
	default:
		return false
	}
	return true
}

// upload answers POST /v1/files: a file with purpose batch.
func (b *batches) upload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(256 << 20); err != nil {
		writeError(w, http.StatusBadRequest, "could not read the upload: "+err.Error(), "invalid_request_error", "")
		return
	}
	f, hdr, err := r.FormFile("file")
	if err != nil || r.FormValue("purpose") != "batch" {
		writeError(w, http.StatusBadRequest, "want a file with purpose batch", "invalid_request_error", "")
		return
	}
	data, _ := io.ReadAll(f)
	b.mu.Lock()
	b.next++
	id := fmt.Sprintf("file-in-%d", b.next)
	b.files[id] = data
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "file", "bytes": len(data), "created_at": time.Now().Unix(),
		"filename": hdr.Filename, "purpose": "batch", "status": "processed"})
}

// content answers GET /v1/files/{id}/content.
func (b *batches) content(w http.ResponseWriter, id string) {
	b.mu.Lock()
	data, ok := b.files[id]
	b.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "No such File object: "+id, "invalid_request_error", "")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}

// create answers POST /v1/batches, refusing an argument the Batch API does not take.
func (b *batches) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputFileID      string `json:"input_file_id"`
		Endpoint         string `json:"endpoint"`
		CompletionWindow string `json:"completion_window"`
	}
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad JSON", "invalid_request_error", "")
		return
	}
	var unknown map[string]any
	_ = json.Unmarshal(raw, &unknown)
	for k := range unknown {
		if k != "input_file_id" && k != "endpoint" && k != "completion_window" && k != "metadata" {
			writeError(w, http.StatusBadRequest, "Unrecognized request argument supplied: "+k, "invalid_request_error", "")
			return
		}
	}
	b.mu.Lock()
	data, ok := b.files[req.InputFileID]
	if !ok {
		b.mu.Unlock()
		writeError(w, http.StatusBadRequest, "No such File object: "+req.InputFileID, "invalid_request_error", "")
		return
	}
	b.next++
	rec := &batchRecord{info: BatchInfo{ID: fmt.Sprintf("batch_%d", b.next), InputFileID: req.InputFileID,
		Endpoint: req.Endpoint, Status: "validating", Lines: bytes.Count(data, []byte("\n"))}, created: time.Now().Unix()}
	if b.faults != nil {
		rec.info.Fault = b.faults(len(b.order) + 1)
	}
	b.order = append(b.order, rec.info.ID)
	b.byID[rec.info.ID] = rec
	body := b.wire(rec)
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, body)
}

// list answers GET /v1/batches: newest first, after the ?after= batch.
func (b *batches) list(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	if b.noList {
		b.mu.Unlock()
		writeError(w, http.StatusNotFound, "Invalid URL (GET /v1/batches)", "invalid_request_error", "")
		return
	}
	after := r.URL.Query().Get("after")
	var data []map[string]any
	started := after == ""
	for i := len(b.order) - 1; i >= 0; i-- { // newest first, as OpenAI lists them
		id := b.order[i]
		if !started {
			started = id == after
			continue
		}
		data = append(data, b.wire(b.byID[id]))
	}
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": false})
}

// cancel answers POST /v1/batches/{id}/cancel: a batch not final yet is cancelling.
func (b *batches) cancel(w http.ResponseWriter, id string) {
	b.mu.Lock()
	rec, ok := b.byID[id]
	if ok && !finalState(rec.info.Status) {
		rec.info.Fault, rec.info.Status = BatchCancelled, "cancelling"
	}
	var body map[string]any
	if ok {
		body = b.wire(rec)
	}
	b.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "No batch found with id '"+id+"'.", "invalid_request_error", "")
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func finalState(st string) bool {
	return st == "completed" || st == "failed" || st == "expired" || st == "cancelled"
}

// advance moves a batch one state on, running its lines when it becomes final.
func (s *Server) advance(ctx context.Context, rec *batchRecord) {
	b := &s.batch
	b.mu.Lock()
	if finalState(rec.info.Status) || rec.running {
		b.mu.Unlock()
		return
	}
	rec.polls++
	fault := rec.info.Fault
	switch {
	case fault == BatchValidationFailed:
		rec.info.Status = "failed"
		line := 1
		rec.problems = []map[string]any{{"code": "invalid_request", "message": "the fake refused the batch", "line": line}}
		b.mu.Unlock()
		return
	case rec.info.Status == "cancelling":
	case rec.polls < b.pollsToFinish:
		rec.info.Status = []string{"validating", "in_progress", "finalizing"}[min(rec.polls, 2)]
		b.mu.Unlock()
		return
	}
	input := b.files[rec.info.InputFileID]
	rec.running = true
	b.mu.Unlock()

	var out, errs bytes.Buffer
	done, failed := 0, 0
	inputLines(input, func(n int, b []byte) {
		var line batchLine
		if json.Unmarshal(b, &line) != nil {
			return
		}
		switch s.runLine(ctx, &out, &errs, line, n, fault, n > rec.info.Lines/2) {
		case lineDone:
			done++
		case lineFailed:
			failed++
		}
	})
	b.finish(rec, fault, &out, &errs, done, failed)
}

// inputLines calls fn with each line of a batch's input file and its number, from 1, up
// to the end or the first line over 64 MiB.
func inputLines(input []byte, fn func(n int, line []byte)) {
	lines := jsonl.NewReader(bufio.NewReaderSize(bytes.NewReader(input), 1<<20), 64<<20)
	for {
		b, err := lines.Next()
		if err != nil {
			return
		}
		fn(lines.Line(), b)
	}
}

// batchLine is one line of a batch's input file.
type batchLine struct {
	CustomID string          `json:"custom_id"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// What became of a batch's line.
const (
	lineDone    = iota // in the output file
	lineFailed         // in the error file
	lineSkipped        // in neither (cancelled, or unreadable)
)

// runLine runs line n of a batch with fault (late: in the batch's second half) through
// the Handler, as online, and writes its result to out or errs.
func (s *Server) runLine(ctx context.Context, out, errs *bytes.Buffer, line batchLine, n int, fault BatchFault, late bool) int {
	switch {
	case fault == BatchExpired && late:
		writeLine(errs, line.CustomID, n, 0, nil, map[string]any{"code": "batch_expired", "message": "This request could not be executed before the completion window expired."})
		return lineFailed
	case fault == BatchCancelled && late:
		return lineSkipped
	case fault == BatchPartlyFailed && n%3 == 0:
		writeLine(errs, line.CustomID, n, http.StatusInternalServerError, map[string]any{"error": map[string]any{
			"message": "The server had an error processing your request.", "type": "server_error"}}, nil)
		return lineFailed
	}
	req, err := decodeRequest(line.Body)
	if err != nil {
		writeLine(errs, line.CustomID, n, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "bad body", "type": "invalid_request_error"}}, nil)
		return lineFailed
	}
	req.Endpoint = "chat"
	if strings.HasSuffix(line.URL, "/v1/completions") {
		req.Endpoint = "completions"
	}
	s.n.Add(1)
	rep := s.h(ctx, req)
	if rep.Fault == FaultNone && rep.Status >= 400 && json.Valid([]byte(rep.Body)) {
		// An error body of the handler's own (one that may echo a header, say) goes
		// into the error file verbatim, as online.
		writeLine(errs, line.CustomID, n, rep.Status, json.RawMessage(rep.Body), nil)
		return lineFailed
	}
	switch rep.Fault {
	case FaultNone, FaultEmpty:
	case FaultModelNotFound:
		writeLine(errs, line.CustomID, n, http.StatusNotFound, map[string]any{"error": map[string]any{
			"message": "The model `" + req.Model + "` does not exist", "type": "invalid_request_error", "code": "model_not_found"}}, nil)
		return lineFailed
	default:
		writeLine(errs, line.CustomID, n, http.StatusInternalServerError, map[string]any{"error": map[string]any{
			"message": "The server had an error processing your request.", "type": "server_error"}}, nil)
		return lineFailed
	}
	if rep.Fault == FaultEmpty {
		rep.Texts = []string{""}
	}
	if rep.Body != "" { // sent verbatim, as online
		writeLine(out, line.CustomID, n, http.StatusOK, json.RawMessage(rep.Body), nil)
		return lineDone
	}
	writeLine(out, line.CustomID, n, http.StatusOK, s.completion(req, rep), nil)
	return lineDone
}

// finish makes a batch whose lines ran final, with its output and error files (as the
// tamper function makes them).
func (b *batches) finish(rec *batchRecord, fault BatchFault, out, errs *bytes.Buffer, done, failed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec.running = false
	switch fault {
	case BatchExpired:
		rec.info.Status = "expired"
	case BatchCancelled:
		rec.info.Status = "cancelled"
	default:
		rec.info.Status = "completed"
	}
	rec.done, rec.failed = done, failed
	if b.tamper != nil {
		o, e := b.tamper(slices.Index(b.order, rec.info.ID)+1, out.Bytes(), errs.Bytes())
		out.Reset()
		out.Write(o)
		errs.Reset()
		errs.Write(e)
	}
	b.next++
	if out.Len() > 0 {
		rec.output = fmt.Sprintf("file-out-%d", b.next)
		b.files[rec.output] = out.Bytes()
	}
	if errs.Len() > 0 {
		rec.errors = fmt.Sprintf("file-err-%d", b.next)
		b.files[rec.errors] = errs.Bytes()
	}
}

func writeLine(buf *bytes.Buffer, customID string, n, status int, body any, lineErr map[string]any) {
	rec := map[string]any{"id": fmt.Sprintf("batch_req_%d", n), "custom_id": customID, "response": nil, "error": nil}
	if status != 0 {
		rec["response"] = map[string]any{"status_code": status, "request_id": fmt.Sprintf("req_%d", n), "body": body}
	}
	if lineErr != nil {
		rec["error"] = lineErr
	}
	b, _ := json.Marshal(rec)
	buf.Write(b)
	buf.WriteByte('\n')
}

// wire is a batch object as the Batch API returns it. b.mu is held.
func (b *batches) wire(rec *batchRecord) map[string]any {
	m := map[string]any{
		"id": rec.info.ID, "object": "batch", "endpoint": rec.info.Endpoint, "input_file_id": rec.info.InputFileID,
		"completion_window": "24h", "status": rec.info.Status, "created_at": rec.created,
		"output_file_id": nil, "error_file_id": nil, "errors": nil,
		"request_counts": map[string]int{"total": rec.info.Lines, "completed": rec.done, "failed": rec.failed},
	}
	if rec.output != "" {
		m["output_file_id"] = rec.output
	}
	if rec.errors != "" {
		m["error_file_id"] = rec.errors
	}
	if len(rec.problems) > 0 {
		m["errors"] = map[string]any{"object": "list", "data": rec.problems}
	}
	return m
}
