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
	"slices"
	"strings"
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
}

var _ Sink = (*EpisodeLog)(nil)

// OpenEpisodeLog opens (creating) the log at path for appending. A torn last line, left by
// a crash in the middle of a write, is detected, cut off and reported in Recovery; it is
// never parsed as a record. A malformed line anywhere else is an error naming the line.
func OpenEpisodeLog(path string, fsyncEvery int, fsyncInterval time.Duration) (*EpisodeLog, LogState, Recovery, error) {
	state, rec, good, err := scanLog(path)
	if err != nil {
		return nil, state, rec, err
	}
	f, err := OpenNoFollow(path, os.O_RDWR|os.O_CREATE, 0o644)
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
	f, err := OpenNoFollow(path, os.O_RDONLY, 0)
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
// (group commit), so concurrent episodes do not pay one fsync each.
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
func (l *EpisodeLog) syncThrough(seq uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.synced >= seq {
		return nil
	}
	l.mu.Lock()
	if l.f == nil {
		l.mu.Unlock()
		return errors.New("episode log is closed")
	}
	err := l.w.Flush()
	f, through := l.f, l.written
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", l.path, err)
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
// a log that was decoded once. A torn last line is skipped either way.
func ReadEpisodeLines(path string, decode bool) iter.Seq2[EpisodeLine, error] {
	return func(yield func(EpisodeLine, error) bool) {
		f, err := safefile.OpenPath(path) // a regular file of its run directory
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if err != nil {
			yield(EpisodeLine{}, fmt.Errorf("open %s: %w", path, err))
			return
		}
		defer f.Close()
		type span struct {
			off  int64
			n    int
			line int
			id   string
		}
		last := map[string]span{}
		r := bufio.NewReaderSize(f, 1<<20)
		var off int64
		var buf []byte
		lastLine := 0
		for line := 1; ; line++ {
			b, err := readLineInto(r, buf[:0])
			buf = b
			if err == io.EOF {
				break // a last line without a newline is torn: never a record
			}
			if err != nil {
				yield(EpisodeLine{}, fmt.Errorf("read %s: %w", path, err))
				return
			}
			id, ok := recordID(b)
			if !ok {
				if len(bytes.TrimSpace(b)) == 0 {
					off += int64(len(b))
					continue
				}
				if _, perr := r.Peek(1); perr == io.EOF {
					break // an unparseable last line is torn too
				}
				yield(EpisodeLine{}, fmt.Errorf("%s line %d is not an episode record", path, line))
				return
			}
			last[id] = span{off: off, n: len(b), line: line, id: id}
			off += int64(len(b))
			lastLine = line
		}
		spans := make([]span, 0, len(last))
		for _, sp := range last {
			spans = append(spans, sp)
		}
		clear(last)
		slices.SortFunc(spans, func(a, b span) int { return strings.Compare(a.id, b.id) })
		// Decoding is most of the cost: chunks are decoded on every core and yielded in
		// order. Each chunk's result waits in its own channel, so at most `workers`
		// chunks are in memory at once.
		workers := max(runtime.GOMAXPROCS(0), 1)
		const chunk = 256
		type result struct {
			recs []EpisodeLine
			err  error
		}
		read := func(sps []span) result {
			total := 0
			for _, sp := range sps {
				total += sp.n
			}
			// One buffer holds the chunk's lines; the records' lines are slices of it.
			// Lines that follow each other in the file (all of them in a log written in
			// id order) are read with one pread each run, not one per line.
			buf := make([]byte, total)
			out := make([]EpisodeLine, 0, len(sps))
			for i, pos := 0, 0; i < len(sps); {
				j, n := i+1, sps[i].n
				for j < len(sps) && sps[j].off == sps[j-1].off+int64(sps[j-1].n) {
					n += sps[j].n
					j++
				}
				if _, err := f.ReadAt(buf[pos:pos+n], sps[i].off); err != nil {
					return result{out, fmt.Errorf("read %s lines %d to %d: %w", path, sps[i].line, sps[j-1].line, err)}
				}
				pos, i = pos+n, j
			}
			for _, sp := range sps {
				b := buf[:sp.n:sp.n]
				buf = buf[sp.n:]
				b = bytes.TrimSpace(b)
				var ep Episode
				// A line that is not the last was checked by its id; the last one may be
				// a complete but unparseable torn write, so it is always decoded.
				if decode || sp.line == lastLine {
					if err := decodeEpisode(b, &ep); err != nil {
						if sp.line == lastLine {
							continue // a complete but unparseable last line is a torn write
						}
						return result{out, fmt.Errorf("%s line %d: %w", path, sp.line, err)}
					}
					if !decode {
						ep = Episode{ID: sp.id}
					}
				} else {
					ep.ID = sp.id
				}
				out = append(out, EpisodeLine{Episode: ep, Line: b})
			}
			return result{recs: out}
		}
		done := make(chan struct{})
		defer close(done)
		pending := make(chan chan result, workers)
		go func() {
			defer close(pending)
			for i := 0; i < len(spans); i += chunk {
				ch := make(chan result, 1)
				select {
				case pending <- ch:
				case <-done:
					return
				}
				go func(sps []span) { ch <- read(sps) }(spans[i:min(i+chunk, len(spans))])
			}
		}()
		for ch := range pending {
			res := <-ch
			for _, rec := range res.recs {
				if !yield(rec, nil) {
					return
				}
			}
			if res.err != nil {
				yield(EpisodeLine{}, res.err)
				return
			}
		}
	}
}

// recordID returns the id of an episode line. The log's writer puts "schema" and then
// "id" first, so the id is found without decoding the record; a line written otherwise
// is decoded.
func recordID(b []byte) (string, bool) {
	const key = `"id":"`
	head := b[:min(len(b), 64)]
	if i := bytes.Index(head, []byte(key)); i >= 0 {
		rest := b[i+len(key):]
		if j := bytes.IndexByte(rest, '"'); j > 0 && bytes.IndexByte(rest[:j], '\\') < 0 {
			return string(rest[:j]), true
		}
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.ID == "" {
		return "", false
	}
	return v.ID, true
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
		type result struct {
			vals []T
			err  error
			torn bool // the chunk ends with the file's torn last line
		}
		// chunk is the lines of one decoding job; first is the number of its first line.
		type chunk struct {
			data  []byte
			ends  []int
			first int
			last  bool // holds the file's last line
		}
		decodeChunk := func(c chunk) result {
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
						return result{vals: out, torn: true}
					}
					return result{vals: out, err: fmt.Errorf("%s line %d: %w", path, c.first+k, err)}
				}
				out = append(out, v)
			}
			return result{vals: out}
		}
		workers := max(runtime.GOMAXPROCS(0), 1)
		const linesPerChunk = 256
		done := make(chan struct{})
		defer close(done)
		pending := make(chan chan result, workers)
		readErr := make(chan error, 1)
		go func() {
			defer close(pending)
			r := bufio.NewReaderSize(f, 1<<20)
			line := 1
			c := chunk{first: line}
			tornTail := false
			send := func() bool {
				ch := make(chan result, 1)
				select {
				case pending <- ch:
				case <-done:
					return false
				}
				go func(c chunk) { ch <- decodeChunk(c) }(c)
				// The next chunk's buffer starts at this one's size, not grown by doubling.
				c = chunk{first: line, data: make([]byte, 0, cap(c.data)), ends: make([]int, 0, linesPerChunk)}
				return true
			}
			for {
				b, err := r.ReadSlice('\n')
				if err == bufio.ErrBufferFull {
					var rerr error
					b, rerr = readLineInto(r, append([]byte(nil), b...))
					err = rerr
				}
				if err == io.EOF {
					// A last line without a newline is torn: never a record, and the line
					// before it is not the file's last.
					tornTail = len(b) > 0
					break
				}
				if err != nil {
					readErr <- fmt.Errorf("read %s: %w", path, err)
					return
				}
				c.data = append(c.data, b...)
				c.ends = append(c.ends, len(c.data))
				line++
				if len(c.ends) == linesPerChunk {
					if _, perr := r.Peek(1); perr == io.EOF {
						c.last = true
					}
					if !send() {
						return
					}
				}
			}
			if len(c.ends) > 0 {
				c.last = !tornTail
				send()
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
