package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/reactgen/reactgen/internal/jsonl"
	"github.com/reactgen/reactgen/internal/safefile"
)

// readLines calls fn for each line of r, numbered from 1, without its line end
// (jsonl.Reader): a line over limit bytes is read past, never held whole, and fn gets its
// first jsonl.HeadBytes (enough for the custom_id, which Batch API and `vllm run-batch`
// lines carry before their body) with over set. partial is set for a last line without its
// newline. Memory is O(limit) whatever r holds.
func readLines(r io.Reader, limit int, fn func(n int, line []byte, over, partial bool) error) error {
	lines := jsonl.NewReader(bufio.NewReaderSize(r, 64<<10), limit)
	for {
		b, err := lines.Next()
		over := errors.Is(err, jsonl.ErrTooLong)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil && !over {
			return err
		}
		if err := fn(lines.Line(), b, over, lines.Torn()); err != nil {
			return err
		}
	}
}

var customIDRE = regexp.MustCompile(`"custom_id"\s*:\s*("(?:[^"\\]|\\.)*")`)

// headID finds the custom_id in the start of a line that could not be decoded whole (too
// long, or not JSON), so that the failure is that line's alone; empty when there is none.
func headID(head []byte) string {
	m := customIDRE.FindSubmatch(head[:min(len(head), jsonl.HeadBytes)])
	if m == nil {
		return ""
	}
	id, err := strconv.Unquote(string(m[1]))
	if err != nil {
		return ""
	}
	return id
}

// waveAnswers is what a final wave's output and error files said: the custom_ids whose
// answer is in the answer store, the failures by custom_id, and the lines not used.
type waveAnswers struct {
	stored    map[string]bool
	failed    map[string]lineResult
	dups      int // lines for a custom_id already read
	malformed int // lines that could not be read
}

// maxBatchFileBytes bounds one output or error file as it streams by; nothing of it is
// held but the line being read.
const maxBatchFileBytes = 4 << 30

// batchLineEnvelope is room, on top of a response body's bound, for a line's own fields.
const batchLineEnvelope = 64 << 10

// lineLimit bounds one line of w's files: the response bound of its largest request
// (MaxResponseBytes, as online), or of a request asking for one choice of unbounded
// length when the request is not known (a re-attached wave nobody has asked for yet).
func (bt *Batcher) lineLimit(w *batchWave) int {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	limit := MaxResponseBytes(1, 0)
	for _, p := range w.reqs {
		if p.req.Model != "" {
			limit = max(limit, MaxResponseBytes(p.req.N, p.req.MaxTokens))
		}
	}
	return int(limit) + batchLineEnvelope
}

// request returns the request of id in w, or the zero Request when it is not known yet.
func (bt *Batcher) request(w *batchWave, id string) (Request, bool) {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	p, ok := w.reqs[id]
	return p.req, ok
}

// readWave streams a final wave's output file, then its error file, storing each answer
// in the answer store and keeping each failure, and syncs the store.
func (bt *Batcher) readWave(ctx context.Context, w *batchWave, st batchStatus) (*waveAnswers, error) {
	out, errs, err := bt.b.Output(ctx, w.BatchID, st)
	for _, c := range []io.Closer{out, errs} {
		if c != nil {
			defer c.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	a := &waveAnswers{stored: map[string]bool{}, failed: map[string]lineResult{}}
	limit := bt.lineLimit(w)
	for _, f := range []struct {
		name string
		r    io.Reader
	}{{w.BatchID + " output", out}, {w.BatchID + " errors", errs}} {
		if f.r == nil {
			continue
		}
		if err := bt.readFile(w, f.name, f.r, limit, a); err != nil {
			return nil, err
		}
	}
	if err := bt.answers.sync(); err != nil {
		return nil, fmt.Errorf("store the answers of batch wave %d: %w", w.N, err)
	}
	return a, nil
}

// readFile reads one output or error file into a. A line that cannot be read fails its
// own request (found by the custom_id at its start), never the wave.
func (bt *Batcher) readFile(w *batchWave, name string, r io.Reader, limit int, a *waveAnswers) error {
	return readLines(r, limit, func(n int, line []byte, over, _ bool) error {
		if !over && len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		var id string
		var res lineResult
		bad := false
		if over {
			id, bad = headID(line), true
			res = lineResult{err: fmt.Errorf("batch %s line %d: %w: over %d bytes (the most reactgen reads of one line)", name, n, ErrResponseTooLarge, limit)}
		} else {
			var l batchOutputLine
			err := json.Unmarshal(line, &l)
			switch {
			case err != nil:
				id, bad = headID(line), true
				res = lineResult{err: &APIError{Status: http.StatusOK, Type: typeInvalidResponse, Message: fmt.Sprintf("batch %s line %d: %v", name, n, err)}}
			case l.CustomID == "":
				bad = true
			default:
				id, res = l.CustomID, decodeOutput(l, w.Endpoint)
			}
		}
		req, ours := bt.request(w, id)
		switch {
		case id == "" || !ours:
			a.malformed++
			return nil
		case bad:
			a.malformed++
		}
		if a.stored[id] || res.err != nil && a.failed[id].err != nil {
			a.dups++ // the first answer stands; an answer stands over an error
			return nil
		}
		res = scrubLine(res, bt.o.Secrets) // before anything of it is stored
		if res.err == nil {
			if err := boundReply(&res.resp, req.MaxTokens); err != nil {
				res = lineResult{err: err}
			}
		}
		if res.err != nil {
			a.failed[id] = res
			return nil
		}
		if a.failed[id].err != nil {
			a.dups++
			delete(a.failed, id)
		}
		params := req
		params.Prompt, params.Messages, params.Tools = "", nil, nil
		e := logEntry{V: logVersion, Key: id, Request: params, Choices: res.resp.Choices, Usage: res.resp.Usage,
			Model: res.resp.Model, Written: time.Now().UTC(), PromptTokenIDs: res.resp.PromptTokenIDs}
		if req.Model != "" {
			e.PromptHash = textHash(req)
		}
		if err := bt.answers.put(e); err != nil {
			return fmt.Errorf("store the answer of batch %s line %d: %w", name, n, err)
		}
		a.stored[id] = true
		return nil
	})
}

// lineIDs reads the custom_ids of a JSONL batch file, streaming it. A last line without
// its newline is not counted: the writer has not finished it.
func lineIDs(path string) (map[string]bool, error) {
	f, err := safefile.OpenPath(path) // never blocks on a pipe; a regular file of the batch directory
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ids := map[string]bool{}
	err = readLines(f, jsonl.HeadBytes, func(_ int, line []byte, over, partial bool) error {
		if partial {
			return nil
		}
		var l struct {
			CustomID string `json:"custom_id"`
		}
		if !over && json.Unmarshal(line, &l) == nil && l.CustomID != "" {
			ids[l.CustomID] = true
		} else if id := headID(line); id != "" {
			ids[id] = true
		}
		return nil
	})
	return ids, err
}
