package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// cacheVersion changes when the cache file layout changes; older files then miss.
const cacheVersion = 1

// cacheEntry is one cache file.
type cacheEntry struct {
	Version  int       `json:"version"`
	Key      string    `json:"key"`
	Request  Request   `json:"request"`
	Choices  []Choice  `json:"choices"`
	Usage    Usage     `json:"usage"`
	Model    string    `json:"model"`
	Written  time.Time `json:"written"`
	Original int64     `json:"latency_ms"` // the latency of the request that filled it
}

// WithCache keeps successful responses on disk under dir, keyed by the sha256 of the
// canonical JSON of the whole Request (model, prompt or messages, temperature, top_p,
// max_tokens, stop, seed, n and Attempt), so that a re-run or a resume replays the same
// completions without calling the server, while a sampled request with another Attempt
// misses. Files live at dir/ab/abcdef....json and are written atomically (a temp file
// renamed into place). A hit returns Cached=true, zero cost, zero retries and the time
// the lookup took as Latency. An unreadable or corrupt file counts as a miss and is
// rewritten. Errors are not cached. A failure to write the cache is not an error of the
// request: the response is returned all the same.
func WithCache(c Client, dir string) Client {
	return &cached{next: c, dir: dir}
}

type cached struct {
	next Client
	dir  string
}

func (cc *cached) path(key string) string {
	return filepath.Join(cc.dir, key[:2], key+".json")
}

func (cc *cached) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	key := requestKey(req)
	if resp, ok := cc.load(key); ok {
		resp.Latency = time.Since(start)
		return resp, nil
	}
	resp, err := cc.next.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	_ = cc.store(key, req, resp) // a cache that cannot be written only costs a re-request later
	return resp, nil
}

func (cc *cached) load(key string) (Response, bool) {
	b, err := os.ReadFile(cc.path(key))
	if err != nil {
		return Response{}, false
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Version != cacheVersion || e.Key != key || len(e.Choices) == 0 {
		return Response{}, false
	}
	return Response{Choices: e.Choices, Usage: e.Usage, Model: e.Model, Cached: true}, true
}

func (cc *cached) store(key string, req Request, resp Response) error {
	p := cc.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("llm cache: %w", err)
	}
	b, err := json.Marshal(cacheEntry{
		Version: cacheVersion, Key: key, Request: req, Choices: resp.Choices, Usage: resp.Usage,
		Model: resp.Model, Written: time.Now().UTC(), Original: resp.Latency.Milliseconds(),
	})
	if err != nil {
		return fmt.Errorf("llm cache encode %s: %w", p, err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("llm cache: %w", err)
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("llm cache write %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("llm cache rename to %s: %w", p, err)
	}
	return nil
}
