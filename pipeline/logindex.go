package pipeline

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/reactgen/reactgen/internal/safefile"
)

// LogIndex locates the effective records of an episode log (for each id its last
// complete record, in the order of the ids) from one scan of the file, so that a stage
// that reads the log twice (the filter: its rules, then the group rules' verdicts) scans
// it once and reads each pass's lines by their offsets. It holds one offset per id, not
// the records, and keeps the file open until Close. Lines may be called any number of
// times, one at a time; a LogIndex is not safe for concurrent use.
type LogIndex struct {
	path     string
	f        *os.File // nil: the log does not exist
	spans    []logSpan
	lastLine int // the number of the file's last complete line
}

// logSpan is where one record's line lies: its offset and length (newline included),
// its line number and its id.
type logSpan struct {
	off  int64
	n    int
	line int
	id   string
}

// LineDecoder decodes one line of an episode file into ep. DecodeEpisode is the one
// that reads every field; a stage that reads few of them may hand Lines a leaner one.
type LineDecoder func(line []byte, ep *Episode) error

// DecodeEpisode decodes one line of an episode file (episodes.jsonl, kept.jsonl) whole.
func DecodeEpisode(line []byte, ep *Episode) error { return decodeEpisode(line, ep) }

// OpenLogIndex opens the episode log at path and scans it: a missing file is an empty
// index, a line that is not a record (but for a torn last line) an error naming it.
func OpenLogIndex(path string) (*LogIndex, error) {
	x := &LogIndex{path: path}
	f, err := safefile.OpenPath(path) // a regular file of its run directory
	if errors.Is(err, os.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	x.f = f
	if err := x.scan(); err != nil {
		f.Close()
		return nil, err
	}
	return x, nil
}

// Len is the number of records Lines yields (a torn last line that parses counts).
func (x *LogIndex) Len() int { return len(x.spans) }

// Close closes the log.
func (x *LogIndex) Close() error {
	if x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}

// scan reads the ids of every line: each id's last line, sorted by id.
func (x *LogIndex) scan() error {
	r := bufio.NewReaderSize(x.f, 1<<20)
	var off int64
	for line := 1; ; line++ {
		b, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			b, err = readLineInto(r, append([]byte(nil), b...))
		}
		if err == io.EOF {
			break // a last line without a newline is torn: never a record
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", x.path, err)
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
			return fmt.Errorf("%s line %d is not an episode record", x.path, line)
		}
		x.spans = append(x.spans, logSpan{off: off, n: len(b), line: line, id: id})
		off += int64(len(b))
		x.lastLine = line
	}
	// By id, and of one id its last line, the record that supersedes the others.
	slices.SortFunc(x.spans, func(a, b logSpan) int { return cmp.Or(strings.Compare(a.id, b.id), cmp.Compare(b.line, a.line)) })
	x.spans = slices.CompactFunc(x.spans, func(a, b logSpan) bool { return a.id == b.id })
	x.spans = slices.Clip(x.spans)
	return nil
}

// linesChunk is the number of records of one job of Lines: lines that follow each
// other in the index, read into one buffer.
const linesChunk = 256

// linesResult is one chunk's records. Its buffer (which the lines are slices of) and its
// slice of records go back to Lines' free list once the chunk is yielded, for a later
// chunk: a pass allocates a few chunks' worth, not the log's size.
type linesResult struct {
	recs []EpisodeLine
	buf  []byte
	err  error
}

// Lines streams the indexed records in the order of their ids, each with its line,
// decoding each with decode; with decode nil only the ids are set (Episode holds the ID
// and nothing else). A last line that DecodeEpisode cannot read is a torn write and
// skipped. Each line is checked to still hold its id, so a log that changed since the
// scan is an error, not another record. Decoding is most of the cost: chunks are decoded
// on every core and yielded in order, at most GOMAXPROCS+2 of them in memory at once.
// Line is valid until the iteration goes on to the next record.
func (x *LogIndex) Lines(decode LineDecoder) iter.Seq2[EpisodeLine, error] {
	return x.lines(x.spans, decode)
}

// LinesOf is Lines over the records of ids alone, which must be ids Lines yields, in its
// order: a later pass that needs only some records (the filter's group rules read only
// the survivors of its per-episode rules) reads only their lines. An id the index does
// not hold, or out of order, is an error.
func (x *LogIndex) LinesOf(ids []string, decode LineDecoder) iter.Seq2[EpisodeLine, error] {
	sps := make([]logSpan, 0, len(ids))
	j := 0
	for _, id := range ids {
		for j < len(x.spans) && x.spans[j].id < id {
			j++
		}
		if j == len(x.spans) || x.spans[j].id != id {
			return func(yield func(EpisodeLine, error) bool) {
				yield(EpisodeLine{}, fmt.Errorf("%s: no record %s after the ones before it in the index", x.path, id))
			}
		}
		sps = append(sps, x.spans[j])
		j++
	}
	return x.lines(sps, decode)
}

// lines yields the records of spans, a subsequence of x.spans.
func (x *LogIndex) lines(spans []logSpan, decode LineDecoder) iter.Seq2[EpisodeLine, error] {
	return func(yield func(EpisodeLine, error) bool) {
		if x.f == nil || len(spans) == 0 {
			return
		}
		workers := max(runtime.GOMAXPROCS(0), 1)
		var wg sync.WaitGroup
		defer wg.Wait() // no goroutine reads the file after the iteration (Close may follow)
		done := make(chan struct{})
		defer close(done)
		pending := make(chan chan linesResult, workers)
		free := make(chan linesResult, workers+2)
		for range cap(free) {
			free <- linesResult{}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(pending)
			for i := 0; i < len(spans); i += linesChunk {
				var res linesResult
				select {
				case res = <-free:
				case <-done:
					return
				}
				ch := make(chan linesResult, 1)
				select {
				case pending <- ch:
				case <-done:
					return
				}
				wg.Add(1)
				go func(sps []logSpan) {
					defer wg.Done()
					ch <- x.readChunk(sps, res, decode)
				}(spans[i:min(i+linesChunk, len(spans))])
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
			clear(res.recs) // the records' strings may go
			free <- res
		}
	}
}

// readChunk reads and decodes the records of sps into res, reusing its buffer and its
// slice of records (grown as needed). Lines
// that follow each other in the file (all of them in a log written in id order) are
// read with one pread each run, not one per line.
func (x *LogIndex) readChunk(sps []logSpan, res linesResult, decode LineDecoder) linesResult {
	total := 0
	for _, sp := range sps {
		total += sp.n
	}
	if cap(res.buf) < total {
		res.buf = make([]byte, total+total/4) // room for the next chunks' lines, which vary
	}
	buf := res.buf[:total]
	res.recs = res.recs[:0]
	for i, pos := 0, 0; i < len(sps); {
		j, n := i+1, sps[i].n
		for j < len(sps) && sps[j].off == sps[j-1].off+int64(sps[j-1].n) {
			n += sps[j].n
			j++
		}
		if _, err := x.f.ReadAt(buf[pos:pos+n], sps[i].off); err != nil {
			res.err = fmt.Errorf("read %s lines %d to %d: %w", x.path, sps[i].line, sps[j-1].line, err)
			return res
		}
		pos, i = pos+n, j
	}
	for _, sp := range sps {
		b := bytes.TrimSpace(buf[:sp.n:sp.n])
		buf = buf[sp.n:]
		if id, ok := lineID(b); !ok || string(id) != sp.id {
			res.err = fmt.Errorf("%s line %d changed while it was read (it held %s): the log was written to during the stage", x.path, sp.line, sp.id)
			return res
		}
		if sp.line == x.lastLine {
			// A line that is not the last was checked by its id; the last one may be a
			// complete but unparseable torn write, so it is always decoded whole.
			var ep Episode
			if err := decodeEpisode(b, &ep); err != nil {
				continue
			}
		}
		// Each record is decoded in its place in the chunk's slice, not on the heap.
		res.recs = append(res.recs, EpisodeLine{Line: b})
		rec := &res.recs[len(res.recs)-1]
		if decode == nil {
			rec.Episode.ID = sp.id
		} else if err := decode(b, &rec.Episode); err != nil {
			res.recs = res.recs[:len(res.recs)-1]
			res.err = fmt.Errorf("%s line %d: %w", x.path, sp.line, err)
			return res
		}
	}
	return res
}
