// Package finetune hands a run's export to a fine-tuning service that speaks OpenAI's
// fine-tuning API (OpenAI itself, or any server implementing /v1/files and
// /v1/fine_tuning/jobs). It consumes a run directory whose export holds openai-chat (or
// openai-tools) JSONL and produces a fine-tuning job: the files uploaded through
// go-openai's Files API, the job created with the chosen base model and hyper-parameters,
// followed until it ends, and each step recorded in the run's manifest so that a re-run
// attaches to the job instead of starting another.
//
// Imports: pipeline and the internal/ libraries (retry, safefile, origin, and
// llm/openaiclient, which builds its go-openai client as the model client's is built);
// never a stage.
package finetune

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/reactgen/reactgen/internal/llm/openaiclient"
	"github.com/reactgen/reactgen/internal/origin"
	"github.com/reactgen/reactgen/internal/redact"
	"github.com/reactgen/reactgen/internal/retry"
)

// APIOptions say where the fine-tuning service is. Its String method redacts the key.
type APIOptions struct {
	BaseURL    string            // the API root, ending in /v1
	BaseURLKey string            // the flag or key that set BaseURL, named when a redirect is refused; empty: --base-url
	APIKey     string            // sent as "Authorization: Bearer ..."; may be empty for local servers
	Headers    map[string]string // extra headers sent with every request
	Timeout    time.Duration     // per request; 0 means none beyond ctx
	HTTPClient *http.Client      // nil means a client of its own
}

// String describes the options with the key redacted.
func (o APIOptions) String() string {
	key := ""
	if o.APIKey != "" {
		key = "[redacted]"
	}
	return fmt.Sprintf("finetune.APIOptions{BaseURL:%s APIKey:%s}", redact.URL(o.BaseURL), key)
}

// GoString is String, so that %#v redacts the key too.
func (o APIOptions) GoString() string { return o.String() }

// API is a client of the Files and fine-tuning endpoints. It is safe for concurrent use.
// Every error it returns has the API key removed from its text.
type API struct {
	client  *openai.Client
	hc      *http.Client // the client's HTTP client, for the calls go-openai lacks
	base    string
	key     string
	timeout time.Duration
	cap     *jobErrors
}

// Job is a fine-tuning job as the service reports it.
type Job struct {
	ID             string
	Status         string
	Model          string
	FineTunedModel string
	TrainedTokens  int
	Finished       time.Time
	Error          string // the service's error message for a failed job
	Epochs         any    // as the service reports them: a number or "auto"
	BatchSize      any
	TrainingFile   string            // the file id the job trains on
	Metadata       map[string]string // as the job was created with; nil when the service keeps none
}

// Event is one line of a job's event log.
type Event struct {
	Created time.Time
	Level   string
	Message string
}

// NewAPI builds the client. It sends nothing.
func NewAPI(o APIOptions) (*API, error) {
	// The same construction as the model client's (package openaiclient): the key and
	// the headers go to base's host only, a redirect elsewhere is refused.
	caps := &jobErrors{msgs: map[string]string{}}
	client, hc, base, err := openaiclient.New(openaiclient.Options{Name: "fine-tuning", BaseURL: o.BaseURL,
		BaseURLKey: cmp.Or(o.BaseURLKey, "--base-url"), APIKey: o.APIKey, Headers: o.Headers, HTTPClient: o.HTTPClient,
		Transport: func(pinned http.RoundTripper, headers http.Header) http.RoundTripper {
			return &transport{base: pinned, headers: headers, caps: caps}
		}})
	if err != nil {
		return nil, err
	}
	return &API{client: client, hc: hc, base: base, key: o.APIKey, timeout: o.Timeout, cap: caps}, nil
}

// String describes the client without its key.
func (a *API) String() string { return "finetune.API{" + a.base + "}" }

// Format prints the client the same way for every verb, so no verb reaches the key.
func (a *API) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, a.String()) }

func (a *API) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.timeout > 0 {
		return context.WithTimeout(ctx, a.timeout)
	}
	return ctx, func() {}
}

// Upload stores data as a fine-tune file named name and waits until the service has
// processed it (polling every interval), so that a job may use it.
func (a *API) Upload(ctx context.Context, name string, data []byte, interval time.Duration) (string, error) {
	rctx, cancel := a.ctx(ctx)
	f, err := a.client.CreateFileBytes(rctx, openai.FileBytesRequest{Name: name, Bytes: data, Purpose: openai.PurposeFineTune})
	cancel()
	if err != nil {
		return "", a.wrap("upload "+name, err)
	}
	return f.ID, a.waitProcessed(ctx, f, name, interval)
}

// WaitProcessed waits until the uploaded file id has been processed (polling every
// interval), so that a job may use it.
func (a *API) WaitProcessed(ctx context.Context, id, name string, interval time.Duration) error {
	rctx, cancel := a.ctx(ctx)
	f, err := a.client.GetFile(rctx, id)
	cancel()
	if err != nil {
		return a.wrap("check upload "+name, err)
	}
	return a.waitProcessed(ctx, f, name, interval)
}

func (a *API) waitProcessed(ctx context.Context, f openai.File, name string, interval time.Duration) error {
	var err error
	for f.Status != "" && f.Status != "processed" {
		if f.Status == "error" || f.Status == "deleted" {
			return fmt.Errorf("upload %s: the service rejected file %s: %s %s", name, f.ID, f.Status, a.scrub(f.StatusDetails))
		}
		if err := retry.Sleep(ctx, interval); err != nil {
			return err
		}
		rctx, cancel := a.ctx(ctx)
		f, err = a.client.GetFile(rctx, f.ID)
		cancel()
		if err != nil {
			return a.wrap("check upload "+name, err)
		}
	}
	return nil
}

// JobRequest is what Create asks for.
type JobRequest struct {
	Model          string
	TrainingFile   string
	ValidationFile string
	Suffix         string
	Metadata       map[string]string // sent as the job's metadata (OpenAI keeps up to 16 pairs)
	Epochs         int               // 0 = the service's default
	BatchSize      int
	LRMultiplier   float64
}

// Create starts a fine-tuning job. It is sent as OpenAI's JSON through the client's own
// HTTP client rather than go-openai, whose request type has no metadata: the metadata
// (JobRequest.Metadata) is how a resumed run finds the job it created before a kill.
func (a *API) Create(ctx context.Context, r JobRequest) (Job, error) {
	body := map[string]any{"training_file": r.TrainingFile, "model": r.Model}
	if r.ValidationFile != "" {
		body["validation_file"] = r.ValidationFile
	}
	if r.Suffix != "" {
		body["suffix"] = r.Suffix
	}
	hp := map[string]any{}
	if r.Epochs > 0 {
		hp["n_epochs"] = r.Epochs
	}
	if r.BatchSize > 0 {
		hp["batch_size"] = r.BatchSize
	}
	if r.LRMultiplier > 0 {
		hp["learning_rate_multiplier"] = r.LRMultiplier
	}
	if len(hp) > 0 {
		body["hyperparameters"] = hp
	}
	if len(r.Metadata) > 0 {
		body["metadata"] = r.Metadata
	}
	var j restJob
	if err := a.rest(ctx, "create fine-tuning job", http.MethodPost, "/fine_tuning/jobs", body, &j); err != nil {
		return Job{}, err
	}
	return a.restJob(j), nil
}

// Get reports a job's state.
func (a *API) Get(ctx context.Context, id string) (Job, error) {
	rctx, cancel := a.ctx(ctx)
	defer cancel()
	j, err := a.client.RetrieveFineTuningJob(rctx, id)
	if err != nil {
		return Job{}, a.wrap("get fine-tuning job "+id, err)
	}
	return a.job(j), nil
}

// Events returns the job's newest events, oldest first.
func (a *API) Events(ctx context.Context, id string, limit int) ([]Event, error) {
	rctx, cancel := a.ctx(ctx)
	defer cancel()
	l, err := a.client.ListFineTuningJobEvents(rctx, id, openai.ListFineTuningJobEventsWithLimit(limit))
	if err != nil {
		return nil, a.wrap("list events of fine-tuning job "+id, err)
	}
	out := make([]Event, 0, len(l.Data))
	for i := len(l.Data) - 1; i >= 0; i-- { // the service lists newest first
		e := l.Data[i]
		out = append(out, Event{Created: time.Unix(e.CreatedAt, 0).UTC(), Level: e.Level, Message: a.scrub(e.Message)})
	}
	return out, nil
}

func (a *API) job(j openai.FineTuningJob) Job {
	out := Job{ID: j.ID, Status: j.Status, Model: j.Model, FineTunedModel: j.FineTunedModel, TrainedTokens: j.TrainedTokens,
		Epochs: j.Hyperparameters.Epochs, BatchSize: j.Hyperparameters.BatchSize, Error: a.scrub(a.cap.take(j.ID)),
		TrainingFile: j.TrainingFile}
	if j.FinishedAt > 0 {
		out.Finished = time.Unix(j.FinishedAt, 0).UTC()
	}
	return out
}

// wrap names the operation and removes the key from err's text.
func (a *API) wrap(op string, err error) error {
	var ae *openai.APIError
	if errors.As(err, &ae) {
		return &APIError{Op: op, Status: ae.HTTPStatusCode, Message: a.scrub(ae.Message)}
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		return &APIError{Op: op, Status: re.HTTPStatusCode, Message: a.scrub(fmt.Sprintf("%v %s", re.Err, snippet(re.Body)))}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s at %s: %w", op, a.base, err)
	}
	return &APIError{Op: op, Message: a.scrub(fmt.Sprintf("%s: %v", a.base, err)), Err: err}
}

// scrub removes the key, plain or base64-encoded, from text the service sent back.
func (a *API) scrub(s string) string { return redact.Scrub(s, []string{a.key}) }

func snippet(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// APIError is an error answer of the fine-tuning service, its message free of the key.
type APIError struct {
	Op      string
	Status  int // HTTP status; 0 when no answer came
	Message string
	Err     error // what failed when no answer came (a refused redirect: origin.ErrRedirect)
}

// Unwrap is what failed when no answer came, for errors.Is.
func (e *APIError) Unwrap() error { return e.Err }

func (e *APIError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s: %s", e.Op, e.Message)
	}
	return fmt.Sprintf("%s: status %d: %s", e.Op, e.Status, e.Message)
}

// Transient reports whether asking again later may succeed: no answer (but for a refused
// redirect), 408, 409, 429 or 5xx.
func (e *APIError) Transient() bool {
	if errors.Is(e.Err, origin.ErrRedirect) {
		return false
	}
	return e.Status == 0 || retry.TransientStatus(e.Status)
}

// transport adds the configured headers and keeps the "error" object of job answers,
// which go-openai's job type does not carry.
type transport struct {
	base    http.RoundTripper
	headers http.Header
	caps    *jobErrors
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.headers {
			req.Header[k] = vs
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.Path, "/fine_tuning/jobs") || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var j struct {
		Object string `json:"object"`
		ID     string `json:"id"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &j) == nil && j.Object == "fine_tuning.job" && j.Error != nil && j.Error.Message != "" {
		msg := j.Error.Message
		if j.Error.Code != "" {
			msg = j.Error.Code + ": " + msg
		}
		t.caps.put(j.ID, msg)
	}
	return resp, nil
}

// jobErrors holds the error messages seen in job answers until API.job reads them.
type jobErrors struct {
	mu   sync.Mutex
	msgs map[string]string
}

func (c *jobErrors) put(id, msg string) {
	c.mu.Lock()
	c.msgs[id] = msg
	c.mu.Unlock()
}

func (c *jobErrors) take(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.msgs[id]
	delete(c.msgs, id)
	return m
}
