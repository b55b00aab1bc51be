package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/reactgen/reactgen/internal/safefile"
)

// captureKey carries a *capture through the request context to the transport.
type captureKey struct{}

// capture is what the transport saw of one response: go-openai drops the headers and,
// for a 2xx, the body of a response it fails to decode.
type capture struct {
	keepTemperatureOut bool
	// noTemperature: the body has no temperature key (go-openai leaves out a zero, and
	// no tools, whose schemas may name one, are sent), so the transport need not look.
	noTemperature bool
	limit         int64 // the most bytes read of the response body (0: no bound)
	keepAll       bool  // keep the whole body in all, for readExtras
	tokenIDs      bool  // send return_token_ids: true (vLLM)

	mu      sync.Mutex
	status  int
	header  http.Header
	body    []byte
	all     []byte // the whole body, with keepAll
	readErr error
	sent    bool // the transport was asked to send the request
}

const captureMax = 8 << 10

func (c *capture) result() (int, http.Header, []byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.header
	if h == nil {
		h = http.Header{}
	}
	return c.status, h, c.body, c.readErr
}

// wire is the adapter's transport: it adds the configured headers, sends temperature 0
// explicitly, and records the response for error reporting.
type wire struct {
	base    http.RoundTripper
	headers http.Header
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	seen, _ := req.Context().Value(captureKey{}).(*capture)
	if seen != nil {
		seen.mu.Lock()
		seen.sent = true
		seen.mu.Unlock()
	}
	// A shallow copy leaves the caller's request as it was; its header map is copied only
	// when there are headers to add.
	cp := *req
	req = &cp
	if len(w.headers) > 0 {
		req.Header = req.Header.Clone()
		for k, v := range w.headers {
			req.Header[k] = v
		}
	}
	// Only completion requests get a temperature: a file upload or a batch does not.
	completion := strings.HasSuffix(req.URL.Path, "/completions")
	addTemperature := seen == nil || !seen.keepTemperatureOut
	addTokenIDs := seen != nil && seen.tokenIDs
	if req.Body != nil && req.Method == http.MethodPost && completion && (addTemperature || addTokenIDs) {
		// Read with room in front for the temperature key, so that adding it copies
		// nothing (the body is as large as the prompt).
		buf, room, err := readAll(req.Body, req.ContentLength, temperatureRoom)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		b := buf[room:]
		if addTemperature {
			b = withTemperatureIn(buf, room, seen != nil && seen.noTemperature)
		}
		if addTokenIDs {
			b = withTokenIDs(b)
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.ContentLength = int64(len(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := w.base.RoundTrip(req)
	if err != nil || seen == nil {
		return resp, err
	}
	seen.mu.Lock()
	seen.status, seen.header = resp.StatusCode, resp.Header // read only, as go-openai does
	seen.mu.Unlock()
	body := resp.Body
	if seen.limit > 0 {
		body = &boundedBody{rc: body, left: seen.limit}
	}
	resp.Body = &teeBody{rc: body, seen: seen}
	return resp, nil
}

// ErrResponseTooLarge is a response body over MaxResponseBytes: a server that ignores
// max_tokens, sends an endless body or a compression bomb. Retrying does not help.
var ErrResponseTooLarge = errors.New("response body too large")

// MaxResponseBytes bounds the body of a response to a request for n choices (0 means
// 1) of at most maxTokens tokens each: 4 MiB for the envelope (and for a completion that
// ignores max_tokens, which is cut to MaxCompletionBytes), plus six times
// MaxCompletionBytes per choice (JSON may escape a byte as six). The body is counted as
// decompressed, so a gzip bomb stops at the same bound.
func MaxResponseBytes(n, maxTokens int) int64 {
	return 4<<20 + int64(max(n, 1))*6*int64(MaxCompletionBytes(maxTokens))
}

// boundedBody fails a read past left bytes with ErrResponseTooLarge.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
	read int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if int64(n) > b.left {
		b.left = -1
		return 0, fmt.Errorf("%w: over %s", ErrResponseTooLarge, safefile.FormatBytes(b.read-1))
	}
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// readAll reads a body of n bytes (-1 or 0: unknown) in one allocation when n is known.
// readAll reads a body of n bytes (n <= 0: unknown) into buf[room:], leaving buf[:room]
// free for the caller to write in front of it; with n unknown room is 0.
func readAll(r io.Reader, n int64, room int) (buf []byte, at int, err error) {
	if n <= 0 || n > 64<<20 {
		buf, err = io.ReadAll(r)
		return buf, 0, err
	}
	buf = make([]byte, int64(room)+n)
	if _, err := io.ReadFull(r, buf[room:]); err != nil {
		return nil, 0, err
	}
	return buf, room, nil
}

// temperatureRoom is the most withTemperatureIn writes in front of a body.
const temperatureRoom = len(`{"temperature":0,`)

// withTemperature adds "temperature":0 to a JSON object that has no temperature key.
//
// When the bytes hold no "temperature" string at all, no key can be named so (inside a
// JSON string a quote is escaped), and the key is written after the opening brace
// without decoding the body, which is what happens to every greedy request. Otherwise
// the object is decoded to find out.
func withTemperature(b []byte) []byte { return withTemperatureIn(b, 0, false) }

// withTemperatureIn is withTemperature of buf[room:], where the caller owns buf: with
// room > 0 the key is written over the bytes in front of the body's first key (the room,
// the opening brace and any space), so that nothing is copied. absent says the caller
// knows the object has no temperature key, so the bytes are not searched for one (the
// search of a 10 KB body was 2% of a call's CPU).
func withTemperatureIn(buf []byte, room int, absent bool) []byte {
	b := buf[room:]
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return b
	}
	if absent || !bytes.Contains(t, []byte(`"temperature"`)) {
		rest := bytes.TrimLeft(t[1:], " \t\r\n")
		head := `{"temperature":0,`
		if len(rest) == 0 || rest[0] == '}' {
			head = `{"temperature":0`
		}
		if at := len(buf) - len(rest) - len(head); room > 0 && at >= 0 {
			copy(buf[at:], head)
			return buf[at:]
		}
		out := make([]byte, 0, len(rest)+len(head))
		out = append(out, head...)
		return append(out, rest...)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	if _, ok := m["temperature"]; ok {
		return b
	}
	m["temperature"] = json.RawMessage("0")
	out, err := json.Marshal(m)
	if err != nil {
		return b
	}
	return out
}

// teeBody keeps the start of a response body and any read error.
type teeBody struct {
	rc   io.ReadCloser
	seen *capture
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	t.seen.mu.Lock()
	if room := captureMax - len(t.seen.body); room > 0 {
		t.seen.body = append(t.seen.body, p[:min(n, room)]...)
	}
	if t.seen.keepAll {
		t.seen.all = append(t.seen.all, p[:n]...)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		t.seen.readErr = err
	}
	t.seen.mu.Unlock()
	return n, err
}

func (t *teeBody) Close() error { return t.rc.Close() }

// MaxCompletionBytes bounds the text kept from one completion: 16 bytes per requested
// token (far above any tokenizer's average), or 64 KiB when no max_tokens was asked.
func MaxCompletionBytes(maxTokens int) int {
	if maxTokens <= 0 {
		return 64 << 10
	}
	return max(16*maxTokens, 1024)
}
