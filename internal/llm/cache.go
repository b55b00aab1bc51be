package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/reactgen/reactgen/internal/safefile"
)

// legacyVersion is the version of the one-file-per-entry layout, which is still read.
const legacyVersion = 1

// legacyEntry is one file of the one-file-per-entry layout.
type legacyEntry struct {
	Version int      `json:"version"`
	Key     string   `json:"key"`
	Choices []Choice `json:"choices"`
	Usage   Usage    `json:"usage"`
	Model   string   `json:"model"`
}

// WithCache keeps successful responses on disk under dir, keyed by the sha256 of the
// canonical JSON of the whole Request (model, prompt or messages, temperature, top_p,
// max_tokens, stop, seed, n, tools and Attempt), so that a re-run or a resume replays the same
// completions without calling the server, while a sampled request with another Attempt
// misses. A hit returns Cached=true, zero cost, zero retries and the time the lookup took
// as Latency. Errors are not cached. A failure to write the cache is not an error of the
// request: the response is returned all the same.
//
// Entries are JSON lines appended to dir/log-<unix-nanos>-<pid>.jsonl, one file per
// WithCache call, created on its first store, each line written with one write(2) (see
// docs/cache.md). WithCache reads every such file in dir once, before it returns; lines
// that other processes append afterwards are misses here. A corrupt line, or a last line
// cut short by a crash, counts as a miss, and the fresh response is appended. A key not
// in the log is looked up in the older layout, dir/ab/abcdef....json, which is read but
// no longer written.
func WithCache(c Client, dir string) Client {
	return &cached{next: c, dir: dir, log: openLogStore(dir), hashes: &prefixHashes{}}
}

type cached struct {
	next   Client
	dir    string
	log    *logStore
	hashes *prefixHashes // the key and prompt hash, without hashing a shared prefix again
}

func (cc *cached) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	key, memo := cc.hashes.key(&req)
	if resp, ok := cc.load(key); ok {
		resp.Latency = time.Since(start)
		return resp, nil
	}
	resp, err := cc.next.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	_ = cc.store(key, memo, req, resp) // a cache that cannot be written only costs a re-request later
	return resp, nil
}

// maxCacheEntryBytes bounds one legacy cache file: a response is at most
// MaxResponseBytes (4 MiB and the completions) as sent, and stored smaller.
const maxCacheEntryBytes = 64 << 20

func (cc *cached) load(key string) (Response, bool) {
	if e, ok := cc.log.get(key); ok {
		return Response{Choices: e.Choices, Usage: e.Usage, Model: e.Model, Cached: true, PromptTokenIDs: e.PromptTokenIDs}, true
	}
	if !cc.log.legacy {
		return Response{}, false
	}
	b, err := safefile.ReadIn(cc.dir, filepath.Join(key[:2], key+".json"), maxCacheEntryBytes)
	if err != nil {
		return Response{}, false
	}
	var e legacyEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Version != legacyVersion || e.Key != key || len(e.Choices) == 0 {
		return Response{}, false
	}
	return Response{Choices: e.Choices, Usage: e.Usage, Model: e.Model, Cached: true}, true
}

func (cc *cached) store(key string, memo *prefixMemo, req Request, resp Response) error {
	params := req
	params.Prompt, params.Messages, params.Tools = "", nil, nil
	return cc.log.put(logEntry{
		V: logVersion, Key: key, PromptHash: text(&req, memo), Request: params,
		Choices: resp.Choices, Usage: resp.Usage, Model: resp.Model,
		Written: time.Now().UTC(), Original: resp.Latency.Milliseconds(), PromptTokenIDs: resp.PromptTokenIDs,
	})
}

// textHash is the sha256 (hex) of req's prompt in the form that episode records hash it
// (pipeline.Call.PromptHash, prompt.Request.Hash): the completion prompt itself, or the
// chat messages as a JSON array. It lets a log line be matched to the calls it answered.
func textHash(req Request) string {
	h := sha256.New()
	if req.Messages == nil {
		hashString(h, req.Prompt)
	} else {
		b, _ := json.Marshal(req.Messages) // a slice of string pairs always marshals
		_, _ = h.Write(b)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}
