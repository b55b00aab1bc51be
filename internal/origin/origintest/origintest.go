// Package origintest is a hostile pair of local servers for redirect tests: one on
// 127.0.0.1 that answers every request with a redirect, and one on 127.0.0.2 (another
// host to an HTTP client) that records what reaches it and answers as a model server
// would, so that a client that follows the redirect succeeds and is seen to.
package origintest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Received is one request that reached the second host.
type Received struct {
	Method, Path string
	Header       http.Header
	BodyBytes    int
}

// Pair is the redirecting server and the recorder it points at.
type Pair struct {
	From *httptest.Server // 127.0.0.1: every request answered with Status to To
	To   *httptest.Server // 127.0.0.2: records and answers 200 with a chat completion

	mu  sync.Mutex
	got []Received
}

// Received lists the requests that reached the second host.
func (p *Pair) Received() []Received {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Received(nil), p.got...)
}

// completion is what the second host answers: a valid chat completion, so that a client
// that follows the redirect sees success.
const completion = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Thought: redirected.\nAction: Finish[yes]"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// New starts the pair; status is the redirect's (301, 302, 303, 307 or 308). It skips
// the test where 127.0.0.2 cannot be bound (loopback other than 127.0.0.1 is Linux's).
func New(t testing.TB, status int) *Pair {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	p := &Pair{}
	p.To = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		p.mu.Lock()
		p.got = append(p.got, Received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), BodyBytes: int(n)})
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completion)
	}))
	p.To.Listener.Close()
	p.To.Listener = l
	p.To.Start()
	t.Cleanup(p.To.Close)
	p.From = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, p.To.URL+r.URL.RequestURI(), status)
	}))
	t.Cleanup(p.From.Close)
	return p
}
