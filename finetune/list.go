package finetune

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// maxListBody bounds one answer of the REST calls below (a page of a list, a job).
const maxListBody = 8 << 20

// maxListPages bounds how far back a list is read: 100 pages of 100 jobs, or of files.
const maxListPages = 100

// restJob is a fine-tuning job object as OpenAI's JSON spells it, metadata included.
type restJob struct {
	ID              string            `json:"id"`
	Object          string            `json:"object"`
	Status          string            `json:"status"`
	Model           string            `json:"model"`
	FineTunedModel  *string           `json:"fine_tuned_model"`
	TrainingFile    string            `json:"training_file"`
	TrainedTokens   *int              `json:"trained_tokens"`
	FinishedAt      *int64            `json:"finished_at"`
	Metadata        map[string]string `json:"metadata"`
	Hyperparameters struct {
		Epochs    any `json:"n_epochs"`
		BatchSize any `json:"batch_size"`
	} `json:"hyperparameters"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (a *API) restJob(j restJob) Job {
	out := Job{ID: j.ID, Status: j.Status, Model: j.Model, TrainingFile: j.TrainingFile, Metadata: j.Metadata,
		Epochs: j.Hyperparameters.Epochs, BatchSize: j.Hyperparameters.BatchSize}
	if j.FineTunedModel != nil {
		out.FineTunedModel = *j.FineTunedModel
	}
	if j.TrainedTokens != nil {
		out.TrainedTokens = *j.TrainedTokens
	}
	if j.FinishedAt != nil && *j.FinishedAt > 0 {
		out.Finished = time.Unix(*j.FinishedAt, 0).UTC()
	}
	if j.Error != nil && j.Error.Message != "" {
		out.Error = a.scrub(cmpJoin(j.Error.Code, j.Error.Message))
	}
	a.cap.take(j.ID) // the transport's copy of the error is not needed here
	return out
}

func cmpJoin(code, msg string) string {
	if code == "" {
		return msg
	}
	return code + ": " + msg
}

// ListJobs returns the fine-tuning jobs the service lists (GET /fine_tuning/jobs, newest
// first), reading pages until match returns true for one of them or the list ends. go-openai
// has no call for it, so it is sent through the client's own HTTP client.
func (a *API) ListJobs(ctx context.Context, match func(Job) bool) (Job, bool, error) {
	after := ""
	for range maxListPages {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("after", after)
		}
		var page struct {
			Data    []restJob `json:"data"`
			HasMore bool      `json:"has_more"`
		}
		if err := a.rest(ctx, "list fine-tuning jobs", http.MethodGet, "/fine_tuning/jobs?"+q.Encode(), nil, &page); err != nil {
			return Job{}, false, err
		}
		for _, j := range page.Data {
			if job := a.restJob(j); match(job) {
				return job, true, nil
			}
		}
		if !page.HasMore || len(page.Data) == 0 {
			break
		}
		after = page.Data[len(page.Data)-1].ID
	}
	return Job{}, false, nil
}

// File is an uploaded file as the service lists it.
type File struct {
	ID, Name, Status string
	Bytes            int64
}

// FindFile returns the fine-tune file the service lists (GET /files?purpose=fine-tune)
// that match accepts, reading pages until one does or the list ends.
func (a *API) FindFile(ctx context.Context, match func(File) bool) (File, bool, error) {
	after := ""
	for range maxListPages {
		q := url.Values{"purpose": {"fine-tune"}, "limit": {"100"}}
		if after != "" {
			q.Set("after", after)
		}
		var page struct {
			Data []struct {
				ID       string `json:"id"`
				Filename string `json:"filename"`
				Bytes    int64  `json:"bytes"`
				Status   string `json:"status"`
				Purpose  string `json:"purpose"`
			} `json:"data"`
			HasMore bool `json:"has_more"`
		}
		if err := a.rest(ctx, "list files", http.MethodGet, "/files?"+q.Encode(), nil, &page); err != nil {
			return File{}, false, err
		}
		for _, f := range page.Data {
			if f.Purpose != "" && f.Purpose != "fine-tune" {
				continue // a service that ignores the purpose filter
			}
			if file := (File{ID: f.ID, Name: f.Filename, Status: f.Status, Bytes: f.Bytes}); match(file) {
				return file, true, nil
			}
		}
		if !page.HasMore || len(page.Data) == 0 {
			break
		}
		after = page.Data[len(page.Data)-1].ID
	}
	return File{}, false, nil
}

// rest sends one JSON request (body nil: none) to the API root + path with the key and
// the configured headers, and decodes a 200 answer into out. Other answers are an
// *APIError with OpenAI's error message, free of the key.
func (a *API) rest(ctx context.Context, op, method, path string, body, out any) error {
	rctx, cancel := a.ctx(ctx)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(rctx, method, a.base+path, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return a.wrap(op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxListBody+1))
	if err != nil {
		return a.wrap(op, err)
	}
	if len(raw) > maxListBody {
		return &APIError{Op: op, Status: resp.StatusCode, Message: "answer over " + strconv.Itoa(maxListBody>>20) + " MiB"}
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := snippet(raw)
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return &APIError{Op: op, Status: resp.StatusCode, Message: a.scrub(msg)}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &APIError{Op: op, Status: resp.StatusCode, Message: a.scrub(fmt.Sprintf("unreadable answer: %v: %s", err, snippet(raw)))}
	}
	return nil
}
