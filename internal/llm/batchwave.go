package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/internal/retry"
)

// A wave's life: closed from the pending requests and written as an input file, sent
// (uploaded and created), awaited, and collected from its output and error files.

// collect closes a wave once requests stop arriving for Window, or at MaxLines, and
// sends it out.
func (bt *Batcher) collect(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-bt.arrive:
		}
		// Requests are arriving: wait until they pause.
		quiet := time.NewTimer(bt.o.Window)
	gather:
		for {
			bt.mu.Lock()
			full := len(bt.pending) >= bt.o.MaxLines
			bt.mu.Unlock()
			if full {
				break
			}
			select {
			case <-ctx.Done():
				quiet.Stop()
				return
			case <-bt.arrive:
				quiet.Reset(bt.o.Window)
			case <-quiet.C:
				break gather
			}
		}
		quiet.Stop()
		for {
			w, err := bt.closeWave()
			if err != nil {
				bt.log.Error("batch wave not written", "err", err)
			}
			if w == nil {
				break
			}
			bt.wg.Go(func() { bt.send(ctx, w) })
		}
	}
}

// closeWave takes up to MaxLines pending requests of one endpoint (and MaxBytes of
// input) as a wave, writes its input file and records it. It returns nil when nothing is pending.
func (bt *Batcher) closeWave() (*batchWave, error) {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	if len(bt.pending) == 0 {
		return nil, nil
	}
	w := &batchWave{N: len(bt.state.Waves) + 1, Created: time.Now().UTC(), Status: "written", reqs: map[string]pendingLine{}}
	w.Input = fmt.Sprintf("wave-%05d.input.jsonl", w.N)
	var buf bytes.Buffer
	var rest []*pendingLine
	for _, p := range bt.pending {
		ep, line, err := batchLine(p.id, p.req)
		switch {
		case err != nil:
			bt.deliver(p.id, lineResult{err: err})
			continue
		case w.Endpoint == "":
			w.Endpoint = ep
		case ep != w.Endpoint || w.Lines >= bt.o.MaxLines || int64(buf.Len()+len(line)+1) > bt.o.MaxBytes:
			rest = append(rest, p) // a batch has one endpoint: the others go in the next wave
			continue
		}
		buf.Write(line)
		buf.WriteByte('\n')
		w.Lines++
		w.reqs[p.id] = *p
		bt.inflight[p.id] = w
	}
	bt.pending = rest
	if w.Lines == 0 {
		return nil, nil
	}
	if err := atomicfile.WriteFile(filepath.Join(bt.o.Dir, w.Input), func(wr io.Writer) error {
		_, err := wr.Write(buf.Bytes())
		return err
	}); err != nil {
		bt.fail(w, err)
		return nil, err
	}
	bt.state.Waves = append(bt.state.Waves, w)
	bt.stats.Waves++
	bt.stats.Lines += w.Lines
	return w, bt.saveLocked()
}

// fail answers every request of w with err. bt.mu is held.
func (bt *Batcher) fail(w *batchWave, err error) {
	for id := range w.reqs {
		delete(bt.inflight, id)
		bt.deliver(id, lineResult{err: err})
	}
}

// saveLocked writes batches.json. bt.mu is held.
func (bt *Batcher) saveLocked() error {
	return atomicfile.WriteFile(filepath.Join(bt.o.Dir, BatchStateFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(bt.state)
	})
}

// send submits a wave (retrying the upload and the creation as an online request would
// be), then waits for it.
func (bt *Batcher) send(ctx context.Context, w *batchWave) {
	path := filepath.Join(bt.o.Dir, w.Input)
	var fileID, batchID string
	_, err := retry.Do(ctx, retry.Policy{MaxRetries: bt.o.MaxRetries, Jitter: retry.FullJitter}, func(ctx context.Context) error {
		var err error
		fileID, batchID, err = bt.b.Submit(ctx, path, w.Endpoint, func(id string) error {
			bt.mu.Lock()
			defer bt.mu.Unlock()
			w.InputFileID, w.Status = id, "uploaded"
			return bt.saveLocked()
		})
		return err
	}, submitVerdict)
	bt.mu.Lock()
	if err != nil {
		w.Status, w.Ended = batchFailed, time.Now().UTC()
		bt.fail(w, fmt.Errorf("submit batch wave %d: %w", w.N, err))
		_ = bt.saveLocked()
		bt.mu.Unlock()
		return
	}
	w.InputFileID, w.BatchID, w.Status = fileID, batchID, "submitted"
	err = bt.saveLocked()
	bt.mu.Unlock()
	if err != nil {
		bt.log.Error("batch state not saved", "err", err)
	}
	bt.log.Info("batch wave submitted", "wave", w.N, "batch", batchID, "lines", w.Lines, "endpoint", w.Endpoint)
	bt.await(ctx, w)
}

// submitVerdict retries an upload or a batch creation as an online request would be.
func submitVerdict(err error) (retry.Verdict, time.Duration) {
	if !IsRetryable(err) {
		return retry.Permanent, 0
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return retry.Again, ae.RetryAfter
	}
	return retry.Again, 0
}

// firstPoll is the first wait between a wave's status reads; it doubles up to Poll.
const firstPoll = 250 * time.Millisecond

// await polls a submitted wave until it is final, then answers its requests.
func (bt *Batcher) await(ctx context.Context, w *batchWave) {
	var st batchStatus
	// The first polls come quickly (a small batch, a local server, a wave already done
	// when re-attached), then back off to llm.batch.poll.
	wait := min(firstPoll, bt.o.Poll)
	for {
		var err error
		st, err = bt.b.Status(ctx, w.BatchID)
		if ctx.Err() != nil {
			return // Close: the batch stays out for the next run
		}
		if err != nil {
			if !IsRetryable(err) {
				bt.mu.Lock()
				w.Status, w.Ended = batchFailed, time.Now().UTC()
				bt.fail(w, fmt.Errorf("batch wave %d (%s): %w", w.N, w.BatchID, err))
				_ = bt.saveLocked()
				bt.mu.Unlock()
				return
			}
			bt.log.Warn("batch status not read; polling again", "wave", w.N, "batch", w.BatchID, "err", err)
		} else {
			bt.mu.Lock()
			changed := st.State != w.Status || st.Completed != w.Completed
			w.Status, w.Completed, w.Failed = st.State, st.Completed, st.Failed
			if changed {
				_ = bt.saveLocked()
			}
			bt.mu.Unlock()
			if changed {
				bt.log.Info("batch wave", "wave", w.N, "batch", w.BatchID, "status", st.State,
					"completed", st.Completed, "failed", st.Failed, "total", st.Total)
			}
			if batchFinal(st.State) {
				break
			}
		}
		if retry.Sleep(ctx, wait) != nil {
			return
		}
		wait = min(2*wait, bt.o.Poll)
	}
	// The answers reach the answer store, synced, before the wave is marked collected:
	// a run stopped at any moment from here on buys none of them again. A failure to
	// read the files is tried again while it may pass.
	var a *waveAnswers
	var readErr error
	if st.State != batchFailed {
		for try := 0; ; try++ {
			a, readErr = bt.readWave(ctx, w, st)
			if readErr == nil || ctx.Err() != nil || !IsRetryable(readErr) || try >= bt.o.MaxRetries {
				break
			}
			bt.log.Warn("batch output not read; reading it again", "wave", w.N, "batch", w.BatchID, "err", readErr)
			if retry.Sleep(ctx, bt.o.Poll) != nil {
				return
			}
		}
		if ctx.Err() != nil {
			return // Close: the wave stays uncollected, and the next run reads it again
		}
	}
	bt.collectWave(w, st, a, readErr)
}

// collectWave answers a final wave's requests: its answers, its failures, and the lines
// it left undone, which go out again in the next wave while they have tries left. After
// a read error the wave is left uncollected (its requests fail here), so that the next
// run reads its files again rather than buying its lines again.
func (bt *Batcher) collectWave(w *batchWave, st batchStatus, a *waveAnswers, readErr error) {
	bt.mu.Lock()
	requeued := 0
	if a != nil {
		bt.stats.Duplicates += a.dups
		bt.stats.Malformed += a.malformed
		if a.dups > 0 || a.malformed > 0 {
			bt.log.Warn("batch files hold repeated or unreadable lines", "wave", w.N, "batch", w.BatchID, "duplicates", a.dups, "unreadable", a.malformed)
		}
	}
	for id, p := range w.reqs {
		delete(bt.inflight, id)
		var r lineResult
		switch {
		case st.State == batchFailed:
			msg := "the batch failed"
			if len(st.Errors) > 0 {
				msg += ": " + st.Errors[0]
			}
			r = lineResult{err: &APIError{Status: 400, Type: "batch_failed", Message: msg}}
		case readErr != nil:
			r = lineResult{err: fmt.Errorf("batch wave %d: %w", w.N, readErr)}
		case a.stored[id]:
			if len(bt.waiters[id]) == 0 {
				continue // kept in the store for its caller
			}
			var ok bool
			if r, ok = bt.stored(id); !ok {
				r = lineResult{err: fmt.Errorf("batch wave %d: the stored answer to %s could not be read back from %s", w.N, id, bt.answers.dir)}
			}
		case a.failed[id].err != nil:
			r = a.failed[id]
		default:
			r = lineResult{err: &APIError{Status: 503, Type: "batch_line_missing",
				Message: fmt.Sprintf("batch %s ended %s without this line", w.BatchID, st.State)}}
		}
		r = scrubLine(r, bt.o.Secrets) // the batch's own error messages, too
		if r.err != nil && readErr == nil && IsRetryable(r.err) && p.tries < bt.o.MaxRetries && len(bt.waiters[id]) > 0 && p.req.Model != "" {
			p.tries++
			bt.pending = append(bt.pending, &p)
			bt.stats.Retried++
			requeued++
			continue
		}
		bt.deliver(id, r)
	}
	if readErr == nil {
		w.Status, w.Ended = waveCollected, time.Now().UTC()
	}
	_ = bt.saveLocked()
	bt.mu.Unlock()
	if requeued > 0 {
		bt.log.Info("batch lines go out again", "wave", w.N, "lines", requeued, "status", st.State)
		bt.wake()
	}
}
