package llm

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reactgen/reactgen/internal/jsonl"
	"github.com/reactgen/reactgen/internal/safefile"
)

// logVersion changes when the layout of a log line changes; lines of another version
// are skipped.
const logVersion = 1

// logEntry is one line of a cache segment. It holds the prompt's hash rather than the
// prompt: the exemplars that open every prompt would otherwise be most of each line. The
// hash is the one episode records carry as prompt_hash, so a line can be matched to the
// calls it answered, and the prompt read there when generate.keep_prompts is on.
type logEntry struct {
	V          int       `json:"v"`
	Key        string    `json:"key"`
	PromptHash string    `json:"prompt_hash"`
	Request    Request   `json:"request"` // without its prompt or messages
	Choices    []Choice  `json:"choices"`
	Usage      Usage     `json:"usage"`
	Model      string    `json:"model"`
	Written    time.Time `json:"written"`
	Original   int64     `json:"latency_ms"` // the latency of the request that filled it
	// PromptTokenIDs are the response's (llm.token_ids only).
	PromptTokenIDs []int64 `json:"prompt_token_ids,omitempty"`
}

// logHead is the part of a line the index needs; decoding into it still checks that the
// whole line is valid JSON.
type logHead struct {
	V       int        `json:"v"`
	Key     string     `json:"key"`
	Choices []struct{} `json:"choices"`
}

// maxOpenSegments is how many segments besides its own a store keeps open for reading;
// older ones are opened for each read. A directory shared by many runs gathers one
// segment per process, and a handle for each would take descriptors the requests need.
const maxOpenSegments = 64

// segment is one log file as a store reads it.
type segment struct {
	path string
	f    *os.File // nil for all but the newest maxOpenSegments: opened for each read
}

// logLoc is where one line sits: segment number, byte offset and length with its newline.
type logLoc struct {
	seg int32
	n   int32
	off int64
}

// logStore keeps cache entries as JSON lines appended to segment files in one
// directory. Every store has its own segment, created on its first write with O_EXCL,
// so two processes (or two stores in one process) sharing the directory never write to
// the same file, and a line torn by a crash is only ever the last of its file. Opening a
// store reads every segment once and keeps an index from key to line; lines that other
// stores append later are not seen. A store is safe for concurrent use.
type logStore struct {
	dir    string
	legacy bool // dir has two-letter subdirectories: the one-file-per-entry layout

	mu    sync.RWMutex // guards index and segs
	index map[[32]byte]logLoc
	segs  []segment // by segment number: only those that hold an indexed line, and its own

	wmu    sync.Mutex // serializes writes; guards w, wseg, off and broken
	w      *os.File
	wseg   int32
	off    int64
	broken bool // a write failed: the segment may end in a partial line, so nothing more is written
	// dirSynced: the directory entry of the store's segment has been synced
	dirSynced bool
}

// openLogStore indexes the segments in dir. A directory that cannot be read gives an
// empty store; a segment that cannot be read is left out.
func openLogStore(dir string) *logStore {
	s := &logStore{dir: dir, index: map[[32]byte]logLoc{}}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case e.IsDir() && len(name) == 2 && isHex(name):
			s.legacy = true
		case !e.IsDir() && strings.HasPrefix(name, "log-") && strings.HasSuffix(name, ".jsonl"):
			names = append(names, name)
		}
	}
	slices.Sort(names) // oldest first, so that a later line for the same key wins
	for _, name := range names {
		path := filepath.Join(dir, name)
		f, err := safefile.OpenIn(dir, name) // a pipe, a device or a link out of the cache: not a segment
		if err != nil {
			continue
		}
		if s.scan(f, int32(len(s.segs))) == 0 {
			_ = f.Close()
			continue
		}
		s.segs = append(s.segs, segment{path: path, f: f})
	}
	for i := range len(s.segs) - maxOpenSegments {
		_ = s.segs[i].f.Close()
		s.segs[i].f = nil
	}
	return s
}

// scan indexes the lines of segment f and returns how many it indexed. A line that is
// not valid JSON, has another version, no choices or a bad key, and a last line with no
// newline (torn by a crash, or being written by another process), are skipped.
func (s *logStore) scan(f *os.File, seg int32) int {
	lines := jsonl.NewReader(bufio.NewReaderSize(f, 64<<10), maxLine)
	var off int64
	n := 0
	for {
		line, err := lines.Next()
		if err != nil && !errors.Is(err, jsonl.ErrTooLong) || lines.Torn() {
			return n // the end, a read error or a torn last line: stop here
		}
		start := off
		off += int64(lines.Size())
		var h logHead
		if err != nil || lines.Size() > maxLine || json.Unmarshal(line, &h) != nil || h.V != logVersion || len(h.Choices) == 0 {
			continue
		}
		if key, ok := parseKey(h.Key); ok {
			s.index[key] = logLoc{seg: seg, n: int32(lines.Size()), off: start}
			n++
		}
	}
}

// maxLine bounds a line's length so that its logLoc length fits.
const maxLine = 1<<31 - 1

// get returns the entry stored for key.
func (s *logStore) get(key string) (logEntry, bool) {
	k, ok := parseKey(key)
	if !ok {
		return logEntry{}, false
	}
	s.mu.RLock()
	loc, ok := s.index[k]
	var seg segment
	if ok {
		seg = s.segs[loc.seg]
	}
	s.mu.RUnlock()
	if !ok {
		return logEntry{}, false
	}
	if seg.f == nil {
		f, err := safefile.OpenPath(seg.path)
		if err != nil {
			return logEntry{}, false
		}
		defer f.Close()
		seg.f = f
	}
	b := make([]byte, loc.n)
	if _, err := seg.f.ReadAt(b, loc.off); err != nil {
		return logEntry{}, false
	}
	var e logEntry
	if err := json.Unmarshal(b, &e); err != nil || e.V != logVersion || e.Key != key || len(e.Choices) == 0 {
		return logEntry{}, false
	}
	return e, true
}

// put appends e as one line with a single write, without fsync: a killed process loses
// nothing it wrote, and a machine that crashes loses at most the last lines, which a
// re-run requests again.
func (s *logStore) put(e logEntry) error {
	k, ok := parseKey(e.Key)
	if !ok {
		return fmt.Errorf("llm cache: bad key %q", e.Key)
	}
	p := getJSONBuf()
	defer putJSONBuf(p)
	b, ok := appendLogEntry((*p)[:0], &e)
	if !ok {
		j, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("llm cache encode: %w", err)
		}
		b = append(b, j...)
	}
	b = append(b, '\n')
	*p = b
	if len(b) > maxLine {
		return fmt.Errorf("llm cache: entry of %d bytes is too long", len(b))
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.broken {
		return errors.New("llm cache: an earlier write failed")
	}
	if s.w == nil {
		if err := s.create(); err != nil {
			s.broken = true
			return err
		}
	}
	if _, err := s.w.Write(b); err != nil {
		s.broken = true
		return fmt.Errorf("llm cache write %s: %w", s.w.Name(), err)
	}
	loc := logLoc{seg: s.wseg, n: int32(len(b)), off: s.off}
	s.off += int64(len(b))
	s.mu.Lock()
	s.index[k] = loc
	s.mu.Unlock()
	return nil
}

// sync makes every line put so far durable (fsync of the store's segment and, when it
// was just created, of the directory that holds it).
func (s *logStore) sync() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.w == nil {
		return nil
	}
	if err := s.w.Sync(); err != nil {
		return fmt.Errorf("llm store sync %s: %w", s.w.Name(), err)
	}
	if !s.dirSynced {
		d, err := os.Open(s.dir)
		if err != nil {
			return fmt.Errorf("llm store sync %s: %w", s.dir, err)
		}
		defer d.Close()
		if err := d.Sync(); err != nil {
			return fmt.Errorf("llm store sync %s: %w", s.dir, err)
		}
		s.dirSynced = true
	}
	return nil
}

// close closes the store's files; it is not used afterwards.
func (s *logStore) close() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.segs {
		if f := s.segs[i].f; f != nil {
			_ = f.Close()
			s.segs[i].f = nil
		}
	}
	s.w = nil
	s.broken = true
}

// create makes the store's own segment, named by the time and the process id.
func (s *logStore) create() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("llm cache: %w", err)
	}
	var err error
	for range 10 { // another store of this process may have taken the same nanosecond
		name := filepath.Join(s.dir, fmt.Sprintf("log-%d-%d.jsonl", time.Now().UnixNano(), os.Getpid()))
		var f *os.File
		f, err = os.OpenFile(name, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			s.mu.Lock()
			s.w, s.wseg = f, int32(len(s.segs))
			s.segs = append(s.segs, segment{path: name, f: f})
			s.mu.Unlock()
			return nil
		}
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	return fmt.Errorf("llm cache: %w", err)
}

// parseKey decodes a key of 64 hex digits.
func parseKey(key string) ([32]byte, bool) {
	var k [32]byte
	if len(key) != 64 {
		return k, false
	}
	_, err := hex.Decode(k[:], []byte(key))
	return k, err == nil
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
