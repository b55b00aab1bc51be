package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	openai "github.com/sashabaranov/go-openai"

	"github.com/reactgen/reactgen/internal/safefile"
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
	// Output opens a final batch's output and error files as streams (either may be
	// nil); the caller closes them.
	Output(ctx context.Context, batchID string, st batchStatus) (out, errs io.ReadCloser, err error)
	// Find returns the batch created from an uploaded input, if there is one.
	Find(ctx context.Context, fileID string) (batchID string, ok bool, err error)
	// Create starts the batch of an input uploaded earlier.
	Create(ctx context.Context, fileID, endpoint string) (batchID string, err error)
}

// openAIBatches is the Batch API of an OpenAI-compatible server through go-openai.
type openAIBatches struct {
	oa               *OpenAI
	completionWindow string
}

var _ batchBackend = (*openAIBatches)(nil)

func (b *openAIBatches) Submit(ctx context.Context, path, endpoint string, uploaded func(string) error) (string, string, error) {
	in, err := safefile.OpenPath(path) // the wave this run wrote: a regular file of the batch directory
	if err != nil {
		return "", "", err
	}
	data, err := io.ReadAll(in)
	in.Close()
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
	id, err := b.Create(ctx, f.ID, endpoint)
	return f.ID, id, err
}

func (b *openAIBatches) Create(ctx context.Context, fileID, endpoint string) (string, error) {
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

func (b *openAIBatches) Output(ctx context.Context, batchID string, st batchStatus) (io.ReadCloser, io.ReadCloser, error) {
	open := func(id string) (io.ReadCloser, error) {
		if id == "" {
			return nil, nil
		}
		rc, err := b.oa.client.GetFileContent(ctx, id)
		if err != nil {
			return nil, b.oa.mapError(ctx, &capture{}, fmt.Errorf("batch %s: read file %s: %w", batchID, id, err))
		}
		return &boundedFile{rc: rc, name: fmt.Sprintf("batch %s file %s", batchID, id), left: maxBatchFileBytes}, nil
	}
	out, err := open(st.OutputFileID)
	if err != nil {
		return nil, nil, err
	}
	errs, err := open(st.ErrorFileID)
	if err != nil {
		out.Close()
		return nil, nil, err
	}
	return out, errs, nil
}

// boundedFile is a batch file as it streams in, failing once it passes its bound.
type boundedFile struct {
	rc   io.ReadCloser
	name string
	left int64
}

func (f *boundedFile) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, fmt.Errorf("%s: %w: over %d bytes", f.name, ErrResponseTooLarge, int64(maxBatchFileBytes))
	}
	n, err := f.rc.Read(p[:min(int64(len(p)), f.left)])
	f.left -= int64(n)
	return n, err
}

func (f *boundedFile) Close() error { return f.rc.Close() }

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
	var nr *safefile.NotRegularError
	var esc *safefile.EscapeError
	if errors.As(err, &nr) || errors.As(err, &esc) {
		return st, err // a pipe, a device or a link out of the batch directory: never an answer
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

func (w *waveFiles) Output(_ context.Context, out string, _ batchStatus) (io.ReadCloser, io.ReadCloser, error) {
	// Opened without blocking (a pipe at the name would hold the open), inside the batch
	// directory, and only if it is a regular file.
	f, err := safefile.OpenPath(out)
	if err != nil {
		return nil, nil, err
	}
	return f, nil, nil
}

func (w *waveFiles) Find(context.Context, string) (string, bool, error) { return "", false, nil }

func (w *waveFiles) Create(context.Context, string, string) (string, error) {
	return "", errors.New("wave files are not uploaded")
}
