package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/reactgen/reactgen/internal/safefile"
)

// Recovery says what opening an episode log found.
type Recovery struct {
	Records    int    // complete records read
	TornBytes  int64  // bytes of a torn last line that were dropped
	TornPrefix string // the start of the dropped line, for the report
}

// LogState is what a resumed run needs to know about an existing log, without holding
// the episodes themselves: which (question, attempt) slots are finished and how many
// finished episodes are correct.
type LogState struct {
	Done    map[string]bool // Episode.Key() of every finished, non-retryable episode
	Correct int             // finished episodes that are correct
	Retry   int             // records that a resume runs again (error, budget, interrupted)
}

// EpisodeLog is the append-only episodes.jsonl of a run. Each line is one complete
// record, written when its episode ends. Write is safe for concurrent use: one mutex
// owns the file.
type EpisodeLog struct {
	path          string
	mu            sync.Mutex
	f             *os.File
	w             *bufio.Writer
	fsyncEvery    int
	fsyncInterval time.Duration
	unsynced      int
	lastSync      time.Time
	count         int
	written       uint64     // lines written by this process (under mu)
	syncMu        sync.Mutex // one fsync at a time; taken before mu, never after
	synced        uint64     // lines covered by the last fsync that succeeded (under syncMu)
	wanting       int        // Writes since the last fsync began that the policy syncs (under mu)
	sharedAt      time.Time  // when an fsync last covered more than one of them (under syncMu)
	syncs         int        // fsyncs of Writes (under syncMu), for the tests
	waits         int        // of them, those that waited syncWait first (under syncMu)
}

// syncWait is how long a Write the policy syncs waits, while Writes arrive faster than
// fsyncs finish, for the Writes arriving meanwhile to share its fsync. An fsync of
// episodes.jsonl costs about 150 µs of CPU and 1 ms of wall time on the project's test
// machine; at 64 episodes in flight of 50 ms calls the wait took the fsyncs from 52–56
// to 38–39 per 100 episodes and the client's CPU per call by about 7%, for 2 ms more per
// episode (docs/bench-generate.md, "Third pass"). A lone writer never waits.
const syncWait = 2 * time.Millisecond

// sharedFor is how long after an fsync that covered several Writes the next ones wait
// (syncThrough).
const sharedFor = 20 * syncWait

var _ Sink = (*EpisodeLog)(nil)

// OpenEpisodeLog opens (creating) the log at path for appending. A torn last line, left by
// a crash in the middle of a write, is detected, cut off and reported in Recovery; it is
// never parsed as a record. A malformed line anywhere else is an error naming the line.
func OpenEpisodeLog(path string, fsyncEvery int, fsyncInterval time.Duration) (*EpisodeLog, LogState, Recovery, error) {
	state, rec, good, err := scanLog(path)
	if err != nil {
		return nil, state, rec, err
	}
	f, err := safefile.OpenNoFollow(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, state, rec, fmt.Errorf("open episode log: %w", err)
	}
	if rec.TornBytes > 0 {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, state, rec, fmt.Errorf("cut torn line from %s: %w", path, err)
		}
		f.Sync()
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, state, rec, fmt.Errorf("seek %s: %w", path, err)
	}
	if fsyncEvery <= 0 {
		fsyncEvery = 1
	}
	l := &EpisodeLog{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10), fsyncEvery: fsyncEvery,
		fsyncInterval: fsyncInterval, lastSync: time.Now(), count: rec.Records}
	return l, state, rec, nil
}

// scanLog reads an existing log: the state for resuming, and the offset after the last
// complete line.
func scanLog(path string) (LogState, Recovery, int64, error) {
	state := LogState{Done: map[string]bool{}}
	var rec Recovery
	f, err := safefile.OpenNoFollow(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return state, rec, 0, nil
	}
	if err != nil {
		return state, rec, 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	// Later records of the same id supersede earlier ones (a retried episode).
	type slot struct {
		done, correct bool
	}
	latest := map[string]slot{}
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	line := 0
	for {
		b, err := readLine(r)
		if len(b) > 0 && (err == io.EOF || (err == nil && b[len(b)-1] != '\n')) {
			// The last line has no newline: the write was cut.
			rec.TornBytes = int64(len(b))
			rec.TornPrefix = string(b[:min(len(b), 80)])
			break
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return state, rec, 0, fmt.Errorf("read %s: %w", path, err)
		}
		line++
		var ep Episode
		if jerr := decodeEpisode(bytes.TrimSpace(b), &ep); jerr != nil || ep.ID == "" {
			// A complete but unparseable line that is the last one is still a torn write
			// (the newline can land before the rest of the data on some file systems).
			if _, perr := r.Peek(1); perr == io.EOF {
				rec.TornBytes = int64(len(b))
				rec.TornPrefix = string(b[:min(len(b), 80)])
				break
			}
			if jerr == nil {
				jerr = errors.New("record has no id")
			}
			return state, rec, 0, fmt.Errorf("%s line %d is not an episode record: %w", path, line, jerr)
		}
		off += int64(len(b))
		rec.Records++
		latest[ep.Key()] = slot{done: !ep.Retryable(), correct: ep.Correct && !ep.Retryable()}
	}
	for k, s := range latest {
		if s.done {
			state.Done[k] = true
			if s.correct {
				state.Correct++
			}
		} else {
			state.Retry++
		}
	}
	return state, rec, off, nil
}

// readLine reads one line of any length, newline included.
func readLine(r *bufio.Reader) ([]byte, error) { return readLineInto(r, nil) }

// Write appends one episode as one line. The line is written whole or, after a crash,
// detected as torn on the next open. A Write that the fsync policy syncs returns once its
// line is on stable storage; Writes that arrive while an fsync runs share the next one
// (group commit), so concurrent episodes do not pay one fsync each. Shortly after an
// fsync so shared, the next waits syncWait before it begins, for more Writes to share it.
func (l *EpisodeLog) Write(ctx context.Context, ep Episode) error {
	b, err := json.Marshal(ep)
	if err != nil {
		return fmt.Errorf("encode episode %s: %w", ep.ID, err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	if l.f == nil {
		l.mu.Unlock()
		return errors.New("episode log is closed")
	}
	if _, err := l.w.Write(b); err != nil {
		l.mu.Unlock()
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	l.count++
	l.written++
	seq := l.written
	l.unsynced++
	needSync := l.unsynced >= l.fsyncEvery || (l.fsyncInterval > 0 && time.Since(l.lastSync) >= l.fsyncInterval)
	if needSync {
		l.unsynced = 0
		l.lastSync = time.Now()
		l.wanting++
	}
	// The line goes to the kernel at once, so a killed process loses nothing; only a
	// machine crash can lose records newer than the last fsync.
	err = l.w.Flush()
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	if !needSync {
		return nil
	}
	return l.syncThrough(seq)
}

// syncThrough returns once record seq (the count of lines written when it was) is on
// stable storage: an fsync that begins after a line was written covers it, so a writer
// that finds its line covered by an fsync that ran while it waited returns without one.
// Within sharedFor of an fsync that covered more than one Write the policy syncs, such
// Writes arrive faster than fsyncs finish, and the fsync waits syncWait first: the
// Writes of that time (their lines are in the kernel already) wait on syncMu and find
// themselves covered by it.
func (l *EpisodeLog) syncThrough(seq uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.synced >= seq {
		return nil
	}
	l.syncs++
	if !l.sharedAt.IsZero() && time.Since(l.sharedAt) < sharedFor {
		l.waits++
		time.Sleep(syncWait)
	}
	l.mu.Lock()
	if l.f == nil {
		l.mu.Unlock()
		return errors.New("episode log is closed")
	}
	err := l.w.Flush()
	f, through, covers := l.f, l.written, l.wanting
	l.wanting = 0
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", l.path, err)
	}
	if covers > 1 {
		l.sharedAt = time.Now()
	}
	l.synced = through
	return nil
}

func (l *EpisodeLog) syncLocked() error {
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", l.path, err)
	}
	l.unsynced = 0
	l.lastSync = time.Now()
	l.synced = l.written
	return nil
}

// Count is the number of records in the log, old and new.
func (l *EpisodeLog) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

// Close flushes, syncs and closes the log.
func (l *EpisodeLog) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.syncLocked()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// ReadEpisodes streams the effective episodes of a log: for each id, its last complete
// record (a retried episode supersedes its earlier failure), in the order of their ids,
// so that the stages after generate see the same order however the episodes finished. A
// torn last line is skipped. A first pass reads only the ids; memory holds one offset per
// id, not the records.
func ReadEpisodes(path string) iter.Seq2[Episode, error] {
	return func(yield func(Episode, error) bool) {
		for rec, err := range ReadEpisodeLines(path, true) {
			if !yield(rec.Episode, err) || err != nil {
				return
			}
		}
	}
}

// EpisodeLine is one record of a JSONL file as read: the decoded episode and the bytes of
// its line, without the newline. Line belongs to the reader: it is valid until the
// iteration goes on to the next record.
type EpisodeLine struct {
	Episode Episode
	Line    []byte
}

// ReadEpisodeLines streams the records ReadEpisodes does, in the same order, each with
// its line, for a stage that copies records rather than encoding them again. With decode
// false only the ids are read (Episode holds the ID and nothing else): a second pass over
// a log that was decoded once. A torn last line is skipped either way. A stage that reads
// the log twice opens one LogIndex and reads its Lines twice, which scans the log once.
func ReadEpisodeLines(path string, decode bool) iter.Seq2[EpisodeLine, error] {
	return func(yield func(EpisodeLine, error) bool) {
		x, err := OpenLogIndex(path)
		if err != nil {
			yield(EpisodeLine{}, err)
			return
		}
		defer x.Close()
		var dec LineDecoder
		if decode {
			dec = DecodeEpisode
		}
		for rec, err := range x.Lines(dec) {
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// recordID returns the id of an episode line. The log's writer puts "schema" and then
// "id" first, so the id is found without decoding the record; a line written otherwise
// is decoded.
func recordID(b []byte) (string, bool) {
	id, ok := lineID(b)
	return string(id), ok
}

// lineID is recordID without a copy of the id where the id is found without decoding.
func lineID(b []byte) ([]byte, bool) {
	const key = `"id":"`
	head := b[:min(len(b), 64)]
	if i := bytes.Index(head, []byte(key)); i >= 0 {
		rest := b[i+len(key):]
		if j := bytes.IndexByte(rest, '"'); j > 0 && bytes.IndexByte(rest[:j], '\\') < 0 {
			return rest[:j], true
		}
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.ID == "" {
		return nil, false
	}
	return []byte(v.ID), true
}

// ReadRejected streams rejected.jsonl.
func ReadRejected(path string) iter.Seq2[Rejected, error] {
	return readRecords(path, decodeRejected)
}

// ReadKept streams kept.jsonl.
func ReadKept(path string) iter.Seq2[Episode, error] { return readRecords(path, decodeEpisode) }

// readRecords streams the complete JSON lines of a file; a missing file yields nothing,
// a torn last line is skipped, and a malformed line elsewhere is an error naming it.
// Lines are decoded on every core, in chunks, and yielded in order.
func readRecords[T any](path string, decode func([]byte, *T) error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		f, err := safefile.OpenPath(path) // a regular file of its run directory
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if err != nil {
			yield(zero, fmt.Errorf("open %s: %w", path, err))
			return
		}
		defer f.Close()
		done := make(chan struct{})
		defer close(done)
		pending := make(chan chan chunkResult[T], max(runtime.GOMAXPROCS(0), 1))
		readErr := make(chan error, 1)
		go func() {
			defer close(pending)
			err := splitRecords(f, func(c recordChunk) bool {
				ch := make(chan chunkResult[T], 1)
				select {
				case pending <- ch:
				case <-done:
					return false
				}
				go func() { ch <- decodeRecords(c, path, decode) }()
				return true
			})
			if err != nil {
				readErr <- fmt.Errorf("read %s: %w", path, err)
			}
		}()
		for ch := range pending {
			res := <-ch
			for _, v := range res.vals {
				if !yield(v, nil) {
					return
				}
			}
			if res.err != nil {
				yield(zero, res.err)
				return
			}
			if res.torn {
				return
			}
		}
		select {
		case err := <-readErr:
			yield(zero, err)
		default:
		}
	}
}

// recordChunk is the lines of one decoding job of readRecords: data holds them, ends
// where each ends, first is the number of the first.
type recordChunk struct {
	data  []byte
	ends  []int
	first int
	last  bool // holds the file's last line
}

// chunkResult is a recordChunk decoded.
type chunkResult[T any] struct {
	vals []T
	err  error
	torn bool // the chunk ends with the file's torn last line
}

// recordsPerChunk is the number of lines of a recordChunk.
const recordsPerChunk = 256

// splitRecords reads r's complete lines into chunks and hands each to send, until send
// returns false or r ends; it returns r's read error. A last line without a newline is
// torn: never a record, and the line before it is not the file's last.
func splitRecords(r io.Reader, send func(recordChunk) bool) error {
	br := bufio.NewReaderSize(r, 1<<20)
	line := 1
	c := recordChunk{first: line}
	next := func() {
		// The next chunk's buffer starts at this one's size, not grown by doubling.
		c = recordChunk{first: line, data: make([]byte, 0, cap(c.data)), ends: make([]int, 0, recordsPerChunk)}
	}
	tornTail := false
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			b, err = readLineInto(br, append([]byte(nil), b...))
		}
		if err == io.EOF {
			tornTail = len(b) > 0
			break
		}
		if err != nil {
			return err
		}
		c.data = append(c.data, b...)
		c.ends = append(c.ends, len(c.data))
		line++
		if len(c.ends) == recordsPerChunk {
			if _, perr := br.Peek(1); perr == io.EOF {
				c.last = true
			}
			if !send(c) {
				return nil
			}
			next()
		}
	}
	if len(c.ends) > 0 {
		c.last = !tornTail
		send(c)
	}
	return nil
}

// decodeRecords decodes the lines of c, skipping blank ones. A line that does not decode
// is an error naming it, unless it is the file's last: a torn write.
func decodeRecords[T any](c recordChunk, path string, decode func([]byte, *T) error) chunkResult[T] {
	out := make([]T, 0, len(c.ends))
	start := 0
	for k, end := range c.ends {
		b := bytes.TrimSpace(c.data[start:end])
		start = end
		if len(b) == 0 {
			continue
		}
		var v T
		if err := decode(b, &v); err != nil {
			if c.last && k == len(c.ends)-1 {
				return chunkResult[T]{vals: out, torn: true}
			}
			return chunkResult[T]{vals: out, err: fmt.Errorf("%s line %d: %w", path, c.first+k, err)}
		}
		out = append(out, v)
	}
	return chunkResult[T]{vals: out}
}

// readLineInto appends one line of any length, newline included, to buf.
func readLineInto(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, err
	}
}
