package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	openai "github.com/sashabaranov/go-openai"

	"github.com/reactgen/reactgen/pipeline"
)

// Batch states, as OpenAI's Batch API names them.
const (
	batchValidating = "validating"
	batchInProgress = "in_progress"
	batchFinalizing = "finalizing"
	batchCompleted  = "completed"
	batchFailed     = "failed"
	batchExpired    = "expired"
	batchCancelling = "cancelling"
	batchCancelled  = "cancelled"
)

// batchFinal reports the states after which a batch changes no more.
func batchFinal(state string) bool {
	switch state {
	case batchCompleted, batchFailed, batchExpired, batchCancelled:
		return true
	}
	return false
}

// batchStatus is what a backend reports of one batch.
type batchStatus struct {
	State                    string
	Total, Completed, Failed int
	Errors                   []string // why a failed batch failed (validation)
	OutputFileID             string
	ErrorFileID              string
}

// batchBackend runs waves somewhere: OpenAI's Files and Batches API, or wave files that
// `vllm run-batch` reads and writes. Implementations are safe for concurrent use.
type batchBackend interface {
	// Submit starts the batch of one wave, whose input file is at path; it returns the
	// id of the uploaded input (empty when nothing is uploaded) and of the batch.
	// Upload, the first half, may be done when a crash interrupted the second:
	// uploaded, when set, is called with the input's id before the batch is created.
	Submit(ctx context.Context, path, endpoint string, uploaded func(fileID string) error) (fileID, batchID string, err error)
	// Status reads a batch's state.
	Status(ctx context.Context, batchID string) (batchStatus, error)
	// Output reads a final batch's output and error files (either may be empty).
	Output(ctx context.Context, batchID string, st batchStatus) (out, errs []byte, err error)
	// Find returns the batch created from an uploaded input, if there is one.
	Find(ctx context.Context, fileID string) (batchID string, ok bool, err error)
}

// openAIBatches is the Batch API of an OpenAI-compatible server through go-openai.
type openAIBatches struct {
	oa               *OpenAI
	completionWindow string
}

var _ batchBackend = (*openAIBatches)(nil)

func (b *openAIBatches) Submit(ctx context.Context, path, endpoint string, uploaded func(string) error) (string, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	f, err := b.oa.client.CreateFileBytes(ctx, openai.FileBytesRequest{Name: filepath.Base(path), Bytes: data, Purpose: openai.PurposeBatch})
	if err != nil {
		return "", "", b.oa.mapError(ctx, &capture{}, fmt.Errorf("upload %s: %w", filepath.Base(path), err))
	}
	if uploaded != nil {
		if err := uploaded(f.ID); err != nil {
			return f.ID, "", err
		}
	}
	id, err := b.create(ctx, f.ID, endpoint)
	return f.ID, id, err
}

func (b *openAIBatches) create(ctx context.Context, fileID, endpoint string) (string, error) {
	r, err := b.oa.client.CreateBatch(ctx, openai.CreateBatchRequest{InputFileID: fileID,
		Endpoint: openai.BatchEndpoint(endpoint), CompletionWindow: b.completionWindow})
	if err != nil {
		return "", b.oa.mapError(ctx, &capture{}, fmt.Errorf("create batch: %w", err))
	}
	return r.ID, nil
}

func (b *openAIBatches) Status(ctx context.Context, batchID string) (batchStatus, error) {
	r, err := b.oa.client.RetrieveBatch(ctx, batchID)
	if err != nil {
		return batchStatus{}, b.oa.mapError(ctx, &capture{}, fmt.Errorf("batch %s: %w", batchID, err))
	}
	st := batchStatus{State: r.Status, Total: r.RequestCounts.Total, Completed: r.RequestCounts.Completed, Failed: r.RequestCounts.Failed}
	if r.OutputFileID != nil {
		st.OutputFileID = *r.OutputFileID
	}
	if r.ErrorFileID != nil {
		st.ErrorFileID = *r.ErrorFileID
	}
	if r.Errors != nil {
		for _, e := range r.Errors.Data {
			msg := e.Code + ": " + e.Message
			if e.Line != nil {
				msg = fmt.Sprintf("line %d: %s", *e.Line, msg)
			}
			st.Errors = append(st.Errors, msg)
		}
	}
	return st, nil
}

func (b *openAIBatches) Output(ctx context.Context, batchID string, st batchStatus) ([]byte, []byte, error) {
	read := func(id string) ([]byte, error) {
		if id == "" {
			return nil, nil
		}
		rc, err := b.oa.client.GetFileContent(ctx, id)
		if err != nil {
			return nil, b.oa.mapError(ctx, &capture{}, fmt.Errorf("batch %s: read file %s: %w", batchID, id, err))
		}
		defer rc.Close()
		// A batch holds at most 50,000 requests; its output file is read whole.
		const maxBatchFileBytes = 1 << 30
		return pipeline.ReadBounded(rc, fmt.Sprintf("batch %s file %s", batchID, id), maxBatchFileBytes)
	}
	out, err := read(st.OutputFileID)
	if err != nil {
		return nil, nil, err
	}
	errs, err := read(st.ErrorFileID)
	return out, errs, err
}

func (b *openAIBatches) Find(ctx context.Context, fileID string) (string, bool, error) {
	var after *string
	for range 100 { // 10,000 batches back at most
		limit := 100
		r, err := b.oa.client.ListBatch(ctx, after, &limit)
		if err != nil {
			return "", false, b.oa.mapError(ctx, &capture{}, fmt.Errorf("list batches: %w", err))
		}
		for _, bt := range r.Data {
			if bt.InputFileID == fileID {
				return bt.ID, true, nil
			}
		}
		if !r.HasMore || r.LastID == "" {
			break
		}
		last := r.LastID
		after = &last
	}
	return "", false, nil
}

// waveFiles is the backend for servers with no Batch API: each wave's input file is left
// in the batch directory for `vllm run-batch -i IN -o OUT`, and the wave completes when
// OUT holds a line for every request of IN. The batch id is OUT's path.
type waveFiles struct {
	log func(msg string, args ...any)
}

var _ batchBackend = (*waveFiles)(nil)

// outputPath is the output file reactgen waits for beside a wave's input.
func outputPath(input string) string {
	return filepath.Join(filepath.Dir(input), trimExt(filepath.Base(input), ".input.jsonl")+".output.jsonl")
}

func trimExt(s, ext string) string {
	if len(s) > len(ext) && s[len(s)-len(ext):] == ext {
		return s[:len(s)-len(ext)]
	}
	return s
}

func (w *waveFiles) Submit(_ context.Context, path, _ string, _ func(string) error) (string, string, error) {
	out := outputPath(path)
	if w.log != nil {
		w.log("wave written: run it with vllm run-batch; reactgen reads the output when every line is there",
			"command", fmt.Sprintf("vllm run-batch -i %s -o %s --model MODEL", path, out))
	}
	return "", out, nil
}

func (w *waveFiles) Status(_ context.Context, out string) (batchStatus, error) {
	in := trimExt(out, ".output.jsonl") + ".input.jsonl"
	want, err := lineIDs(in)
	if err != nil {
		return batchStatus{}, err
	}
	st := batchStatus{State: batchInProgress, Total: len(want)}
	have, err := lineIDs(out)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, nil // being written: read it again at the next poll
	}
	for id := range want {
		if have[id] {
			st.Completed++
		}
	}
	if st.Completed == st.Total {
		st.State, st.OutputFileID = batchCompleted, out
	}
	return st, nil
}

func (w *waveFiles) Output(_ context.Context, out string, _ batchStatus) ([]byte, []byte, error) {
	b, err := os.ReadFile(out)
	return b, nil, err
}

func (w *waveFiles) Find(context.Context, string) (string, bool, error) { return "", false, nil }

// lineIDs reads the custom_ids of a JSONL batch file. A last line without its newline is
// not counted: the writer has not finished it.
func lineIDs(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l struct {
			CustomID string `json:"custom_id"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.CustomID != "" {
			ids[l.CustomID] = true
		}
	}
	return ids, sc.Err()
}
