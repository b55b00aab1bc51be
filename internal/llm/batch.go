package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/reactgen/reactgen/internal/retry"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

// BatchOptions configure a Batcher.
type BatchOptions struct {
	Dir         string        // wave files and batches.json
	Window      time.Duration // a wave closes once no request joined it for this long
	MaxLines    int           // or once it holds this many
	MaxBytes    int64         // and before its input file passes this size; 0 means 190 MB
	Poll        time.Duration // how often a batch's status is read
	MaxRetries  int           // waves a failed line may go out again in
	Prices      map[string]pipeline.Price
	PriceFactor float64 // batch price as a fraction of Prices
	Logger      *slog.Logger
	// Secrets are removed from every output and error line as it is read (scrubLine): a
	// server may echo the key or a header in a completion or an error.
	Secrets []string
}

// BatchStateFile is the batch directory's record of its waves.
const BatchStateFile = "batches.json"

// MaxBatchStateBytes bounds BatchStateFile (a wave's record is about 300 bytes).
const MaxBatchStateBytes = 64 << 20

// Batcher is llm.mode batch: a Client whose requests wait, while they come in, to go out
// together as one wave, one batch of a Batch API (or one wave file for `vllm run-batch`),
// and get their answers when the batch is done. Requests that arrive while a wave is out
// go into the next one, so with every episode in flight a ReAct run needs one wave per
// step (plus one per re-ask round).
//
// Each request's custom_id is its cache key (the hash of the whole request), so a
// restarted run asks for the same ids. The waves are recorded in Dir/batches.json before
// and after they are submitted; a new Batcher over the same Dir re-attaches to the
// batches that are still in flight and never submits their requests again: a request
// whose id is in such a batch waits for it. Lines that fail in a way a later batch may fix
// (a server error, an expired or cancelled batch, a missing line) go out again in the next
// wave, up to MaxRetries times; others fail their request. Responses are priced at
// PriceFactor of Prices (Priced is set).
//
// Complete blocks until the request's batch is done or ctx ends; it is safe for
// concurrent use. Close stops the goroutines; batches in flight are left to finish on the
// server, for the next run to collect.
type Batcher struct {
	b   batchBackend
	o   BatchOptions
	log *slog.Logger

	stop   context.CancelFunc
	wg     sync.WaitGroup
	arrive chan struct{} // a request joined the pending wave

	lock    *pipeline.Lock // on Dir: one run at a time
	answers *logStore      // Dir/answers: every answer bought, stored before its wave is collected

	mu       sync.Mutex
	state    batchState
	pending  []*pendingLine               // requests of the next wave, in arrival order
	waiters  map[string][]chan lineResult // by custom_id: every caller of that request
	inflight map[string]*batchWave        // custom_id -> the wave it is out in
	stats    BatchStats
}

var _ Client = (*Batcher)(nil)

// BatchStats is what a Batcher has done.
type BatchStats struct {
	Waves     int // waves submitted by this Batcher
	Attached  int // waves of an earlier run re-attached
	Lines     int // lines submitted
	Retried   int // lines sent again after a retryable failure
	Failed    int // requests that got an error
	Delivered int // requests answered
	// Duplicates counts output and error lines for a custom_id already read in the same
	// wave: the first answer is kept (an answer over an error), the others are not used.
	Duplicates int
	// Malformed counts lines that could not be read (not JSON, no custom_id, over the line
	// bound): each fails its own request, or, without a custom_id, none.
	Malformed int
}

type pendingLine struct {
	id    string
	req   Request
	tries int
}

// batchState is batches.json.
type batchState struct {
	Waves []*batchWave `json:"waves"`
}

// batchWave is one wave's record.
type batchWave struct {
	N           int       `json:"wave"`
	Endpoint    string    `json:"endpoint"`
	Input       string    `json:"input"` // file name in Dir
	Lines       int       `json:"lines"`
	InputFileID string    `json:"input_file_id,omitempty"`
	BatchID     string    `json:"batch_id,omitempty"`
	Status      string    `json:"status"` // written, uploaded, submitted, then the batch's state; collected when answered
	Completed   int       `json:"completed"`
	Failed      int       `json:"failed"`
	Created     time.Time `json:"created"`
	Ended       time.Time `json:"ended,omitzero"`

	reqs map[string]pendingLine // in memory only: the wave's requests, for retries
}

const (
	waveCollected = "collected"
	// waveAbandoned is a wave of an earlier run whose batch could not be created from its
	// recorded upload: its requests go out again in a new wave.
	waveAbandoned = "abandoned"
)

// Files in the batch directory besides the waves' and BatchStateFile.
const (
	batchLockFile  = ".lock"
	batchAnswerDir = "answers"
)

// ErrBatchResume marks a failure to take up the waves an earlier run left: the state in
// the batch directory is kept, and a later run tries again. It is a runtime failure, not
// a configuration error.
var ErrBatchResume = errors.New("batch resume")

// NewBatcher opens Dir, re-attaches to the waves an earlier run left in flight, and
// starts collecting waves. ctx bounds nothing but the set-up.
func NewBatcher(ctx context.Context, b batchBackend, o BatchOptions) (*Batcher, error) {
	if o.Window <= 0 {
		o.Window = 2 * time.Second
	}
	if o.MaxLines <= 0 {
		o.MaxLines = 50000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 190_000_000
	}
	if o.Poll <= 0 {
		o.Poll = 30 * time.Second
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("llm batch dir %s: %w", o.Dir, err)
	}
	// Two runs sharing a batch directory would number their waves alike and overwrite
	// each other's files: the directory is locked by its run.
	lock, err := pipeline.AcquireLockFile(filepath.Join(o.Dir, batchLockFile), "llm.batch.dir", o.Dir, "reactgen (llm.mode batch)")
	if err != nil {
		var le *pipeline.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w; two runs cannot share a batch directory: give each its own llm.batch.dir", err)
		}
		return nil, err
	}
	bt := &Batcher{b: b, o: o, log: log, arrive: make(chan struct{}, 1), waiters: map[string][]chan lineResult{},
		inflight: map[string]*batchWave{}, lock: lock, answers: openLogStore(filepath.Join(o.Dir, batchAnswerDir))}
	fail := func(err error) (*Batcher, error) {
		bt.answers.close()
		lock.Release()
		return nil, err
	}
	raw, err := safefile.ReadIn(o.Dir, BatchStateFile, MaxBatchStateBytes)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fail(err)
	default:
		if err := json.Unmarshal(raw, &bt.state); err != nil {
			return fail(fmt.Errorf("read %s: %w", filepath.Join(o.Dir, BatchStateFile), err))
		}
	}
	run, stop := context.WithCancel(context.WithoutCancel(ctx))
	bt.stop = stop
	for _, w := range bt.state.Waves {
		if err := bt.reattach(run, w); err != nil {
			stop()
			bt.wg.Wait()
			return fail(err)
		}
	}
	bt.wg.Go(func() { bt.collect(run) })
	return bt, nil
}

// reattach takes up a wave of an earlier run that may still be out. A wave uploaded
// whose batch id was never recorded is looked for in the Batch API's list; when the list
// does not have it, or the server lists no batches, its batch is created from the
// recorded upload (nothing is uploaded again).
func (bt *Batcher) reattach(ctx context.Context, w *batchWave) error {
	switch w.Status {
	case waveCollected, waveAbandoned, "written":
		return nil // answered, or never uploaded: its requests go out again when asked
	}
	create := false
	if w.BatchID == "" {
		if w.InputFileID == "" {
			return nil
		}
		// Uploaded, then the run stopped: the batch may have been created all the same.
		id, ok, err := bt.b.Find(ctx, w.InputFileID)
		switch {
		case err != nil && !noList(err):
			return fmt.Errorf("%w: re-attach wave %d (run again to retry): %w", ErrBatchResume, w.N, err)
		case ok:
			w.BatchID = id
		default:
			if err != nil {
				bt.log.Warn("the server lists no batches, so whether the interrupted run created this wave's batch cannot be known; creating it from the recorded upload",
					"wave", w.N, "input_file", w.InputFileID, "err", err)
			}
			create = true
		}
	}
	ids, err := lineIDs(filepath.Join(bt.o.Dir, w.Input))
	if err != nil {
		return fmt.Errorf("%w: re-attach wave %d: %w", ErrBatchResume, w.N, err)
	}
	w.reqs = map[string]pendingLine{}
	for id := range ids {
		bt.inflight[id] = w
		w.reqs[id] = pendingLine{id: id} // the request itself is not known until someone asks
	}
	bt.stats.Attached++
	if create {
		bt.wg.Go(func() { bt.createFromUpload(ctx, w) })
		return nil
	}
	bt.log.Info("re-attached to a batch of an earlier run", "wave", w.N, "batch", w.BatchID, "lines", w.Lines)
	bt.wg.Go(func() { bt.await(ctx, w) })
	return nil
}

// noList reports an answer meaning the server has no list of batches.
func noList(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusMethodNotAllowed || ae.Status == http.StatusNotImplemented)
}

// createFromUpload creates the batch of a re-attached wave from its recorded upload, then
// waits for it. A wave whose batch cannot be created is abandoned: its requests go out
// again in a new wave.
func (bt *Batcher) createFromUpload(ctx context.Context, w *batchWave) {
	var batchID string
	_, err := retry.Do(ctx, retry.Policy{MaxRetries: bt.o.MaxRetries, Jitter: retry.FullJitter}, func(ctx context.Context) error {
		var err error
		batchID, err = bt.b.Create(ctx, w.InputFileID, w.Endpoint)
		return err
	}, submitVerdict)
	if ctx.Err() != nil {
		return // Close: the wave stays uploaded, for the next run
	}
	bt.mu.Lock()
	if err != nil {
		bt.log.Warn("the batch of an interrupted run's upload could not be created; its requests go out again", "wave", w.N, "err", err)
		requeued := 0
		for id, p := range w.reqs {
			delete(bt.inflight, id)
			if len(bt.waiters[id]) > 0 && p.req.Model != "" {
				bt.pending = append(bt.pending, &p)
				requeued++
			}
		}
		w.Status, w.Ended = waveAbandoned, time.Now().UTC()
		_ = bt.saveLocked()
		bt.mu.Unlock()
		if requeued > 0 {
			bt.wake()
		}
		return
	}
	w.BatchID, w.Status = batchID, "submitted"
	if err := bt.saveLocked(); err != nil {
		bt.log.Error("batch state not saved", "err", err)
	}
	bt.mu.Unlock()
	bt.log.Info("batch wave submitted from an earlier run's upload", "wave", w.N, "batch", batchID, "lines", w.Lines)
	bt.await(ctx, w)
}

// wake tells the collector that requests are pending.
func (bt *Batcher) wake() {
	select {
	case bt.arrive <- struct{}{}:
	default:
	}
}

// Stats returns what the Batcher has done so far.
func (bt *Batcher) Stats() BatchStats {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	return bt.stats
}

// Close stops collecting and polling and unlocks the directory. Batches out stay out,
// recorded for the next run.
func (bt *Batcher) Close() {
	bt.stop()
	bt.wg.Wait()
	bt.answers.close()
	bt.lock.Release()
}

// Complete queues req for the next wave, or joins the wave it is already out in, and
// waits for its answer.
func (bt *Batcher) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	id := requestKey(req)
	ch := make(chan lineResult, 1)
	bt.mu.Lock()
	// Bought already, by this run or one that was stopped? Looked up under bt.mu: a wave
	// leaves inflight only once its answers are stored, so a request that is not out
	// either has its answer here or was never bought.
	if _, out := bt.inflight[id]; !out {
		if r, ok := bt.stored(id); ok {
			bt.stats.Delivered++
			bt.mu.Unlock()
			return bt.finish(r, req, start)
		}
	}
	first := len(bt.waiters[id]) == 0
	bt.waiters[id] = append(bt.waiters[id], ch)
	if w, out := bt.inflight[id]; out {
		if p := w.reqs[id]; p.req.Model == "" {
			w.reqs[id] = pendingLine{id: id, req: req, tries: p.tries} // a re-attached line: now known
		}
	} else if first {
		bt.pending = append(bt.pending, &pendingLine{id: id, req: req})
	}
	bt.mu.Unlock()
	bt.wake()
	select {
	case r := <-ch:
		return bt.finish(r, req, start)
	case <-ctx.Done():
		bt.drop(id, ch)
		return Response{}, ctx.Err()
	}
}

// finish prices an answer.
func (bt *Batcher) finish(r lineResult, req Request, start time.Time) (Response, error) {
	if r.err != nil {
		if len(req.Tools) > 0 && refusesTools(r.err) {
			return Response{}, &toolsError{err: r.err}
		}
		return Response{}, r.err
	}
	resp := r.resp
	resp.Choices = slices.Clone(resp.Choices)
	keepAsked(&resp, req)
	if err := boundReply(&resp, req.MaxTokens); err != nil {
		return Response{}, err
	}
	if resp.Model == "" {
		resp.Model = req.Model
	}
	if bt.o.Prices != nil {
		cost, saving, unpriced := price(resp, req.Model, bt.o.Prices)
		resp.CostUSD, resp.CacheSavingUSD, resp.Priced, resp.Unpriced = cost*bt.o.PriceFactor, saving*bt.o.PriceFactor, true, unpriced
	}
	resp.Latency = time.Since(start)
	return resp, nil
}

// drop forgets a caller that left; a request nobody waits for any more leaves the pending
// wave (one already out stays out).
func (bt *Batcher) drop(id string, ch chan lineResult) {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	ws := slices.DeleteFunc(bt.waiters[id], func(c chan lineResult) bool { return c == ch })
	if len(ws) > 0 {
		bt.waiters[id] = ws
		return
	}
	delete(bt.waiters, id)
	bt.pending = slices.DeleteFunc(bt.pending, func(p *pendingLine) bool { return p.id == id })
}

// stored returns the answer to id in the answer store.
func (bt *Batcher) stored(id string) (lineResult, bool) {
	e, ok := bt.answers.get(id)
	if !ok {
		return lineResult{}, false
	}
	return lineResult{resp: Response{Choices: e.Choices, Usage: e.Usage, Model: e.Model, PromptTokenIDs: e.PromptTokenIDs}}, true
}

// deliver answers every caller of id. bt.mu is held.
func (bt *Batcher) deliver(id string, r lineResult) {
	ws := bt.waiters[id]
	delete(bt.waiters, id)
	if len(ws) == 0 {
		return
	}
	if r.err != nil {
		bt.stats.Failed += len(ws)
	} else {
		bt.stats.Delivered += len(ws)
	}
	for _, ch := range ws {
		ch <- r
	}
}
