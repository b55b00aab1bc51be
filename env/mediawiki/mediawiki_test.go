package mediawiki

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envtest"
	"github.com/reactgen/reactgen/internal/safefile"
)

func newClient(t *testing.T, endpoint string, mod func(*Options)) *Client {
	t.Helper()
	opts := Options{Endpoint: endpoint, UserAgent: "reactgen-test/1 (test@example.invalid)", MaxRetries: 3, Backoff: time.Millisecond}
	if mod != nil {
		mod(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConformance(t *testing.T) {
	for _, cached := range []bool{false, true} {
		t.Run(map[bool]string{false: "no cache", true: "cache"}[cached], func(t *testing.T) {
			envtest.RunConformance(t, func(t *testing.T, pages []env.Page) env.Corpus {
				_, srv := newFake(t, pages, nil)
				return newClient(t, srv.URL+"/w/api.php", func(o *Options) {
					if cached {
						o.CacheDir = t.TempDir()
					}
				})
			})
		})
	}
}

func TestRedirectAndUserAgent(t *testing.T) {
	f, srv := newFake(t, envtest.Pages(), map[string]string{"Orla Vint (poet)": "Orla Vint"})
	c := newClient(t, srv.URL, nil)
	p, ok, err := c.Page(t.Context(), "orla_Vint_(poet)", env.MatchPaper)
	if err != nil || !ok || p.Title != "Orla Vint" || len(p.Sentences) != 3 {
		t.Errorf("Page(redirect): got %q with %d sentences ok=%v err=%v, want Orla Vint with 3", p.Title, len(p.Sentences), ok, err)
	}
	if !f.agents["reactgen-test/1 (test@example.invalid)"] || len(f.agents) != 1 {
		t.Errorf("user agents seen: got %v, want only the configured one", f.agents)
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		retries  int
		wantErr  int // the HTTP status of the error; 0 for success
		requests int64
	}{
		{"429 then success", []int{429, 429}, 3, 0, 3},
		{"5xx then success", []int{503, 500, 502}, 3, 0, 4},
		{"5xx past retries", []int{503, 503, 503}, 2, 503, 3},
		{"404 is final", []int{404}, 3, 404, 1},
		{"no retries", []int{429}, 0, 429, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, envtest.Pages(), nil)
			c := newClient(t, srv.URL, func(o *Options) { o.MaxRetries = tt.retries })
			f.failNext(tt.statuses...)
			_, err := c.Similar(t.Context(), "Vint", 3)
			var apiErr *APIError
			switch {
			case tt.wantErr == 0 && err != nil:
				t.Errorf("got %v, want success", err)
			case tt.wantErr != 0 && (!errors.As(err, &apiErr) || apiErr.Status != tt.wantErr):
				t.Errorf("got %v, want an APIError with status %d", err, tt.wantErr)
			}
			if got := f.requests.Load(); got != tt.requests {
				t.Errorf("requests: got %d, want %d", got, tt.requests)
			}
		})
	}
}

func TestTransportErrorRetried(t *testing.T) {
	_, srv := newFake(t, envtest.Pages(), nil)
	srv.Close()
	c := newClient(t, srv.URL, func(o *Options) { o.MaxRetries = 2 })
	if _, _, err := c.Page(t.Context(), "Orla Vint", env.MatchPaper); err == nil {
		t.Errorf("Page on a closed server: got nil error, want one")
	}
}

func TestAPIErrorNotCached(t *testing.T) {
	f, srv := newFake(t, envtest.Pages(), nil)
	dir := t.TempDir()
	c := newClient(t, srv.URL+"/?action=parse", func(o *Options) { o.CacheDir = dir }) // the fake refuses action=parse
	for range 2 {
		var apiErr *APIError
		if _, err := c.Similar(t.Context(), "Vint", 3); !errors.As(err, &apiErr) || apiErr.Code != "badparams" {
			t.Errorf("got %v, want an APIError with code badparams", err)
		}
	}
	if got := f.requests.Load(); got != 2 {
		t.Errorf("requests: got %d, want 2 (errors are not cached)", got)
	}
}

func TestCacheReplaysOffline(t *testing.T) {
	f, srv := newFake(t, envtest.Pages(), nil)
	dir := t.TempDir()
	script := []string{"Search[Marrow Lake]", "Lookup[heron]", "Search[kestrel_bay]", "Search[Vint]", "Search[heron Marrow]", "Search[Nowhere At All]", "Finish[Karsa]"}
	play := func(c env.Corpus) []string {
		w := env.New(c, env.Options{})
		var obs []string
		for _, raw := range script {
			res, err := w.Step(t.Context(), raw)
			if err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			obs = append(obs, res.Observation)
		}
		return obs
	}
	first := play(newClient(t, srv.URL, func(o *Options) { o.CacheDir = dir }))
	if f.requests.Load() == 0 {
		t.Fatalf("first run made no requests")
	}
	srv.Close()
	before := f.requests.Load()
	second := play(newClient(t, srv.URL, func(o *Options) { o.CacheDir = dir; o.MaxRetries = 0 }))
	if got := f.requests.Load() - before; got != 0 {
		t.Errorf("second run: got %d requests, want 0", got)
	}
	if !slices.Equal(first, second) {
		t.Errorf("second run observations differ:\n got %q\nwant %q", second, first)
	}
}

func TestNewValidates(t *testing.T) {
	for _, endpoint := range []string{"", "ftp://x/api.php", "not a url", "http://"} {
		if _, err := New(Options{Endpoint: endpoint}); err == nil {
			t.Errorf("New(%q): got nil error, want one", endpoint)
		}
	}
}

func TestCleanTitle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Ada_Lovelace", "Ada Lovelace"},
		{`  "Kestrel  Bay" `, "Kestrel Bay"},
		{"“lower case”", "lower case"},
	}
	for _, tt := range tests {
		if got := cleanTitle(tt.in); got != tt.want {
			t.Errorf("cleanTitle(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRateLimitConfigured(t *testing.T) {
	tests := []struct {
		rps  float64
		want rate.Limit
	}{
		{5, 5},
		{0.5, 0.5},
		{0, rate.Inf},
	}
	for _, tt := range tests {
		c := newClient(t, "http://127.0.0.1:1/api.php", func(o *Options) { o.RequestsPerSecond = tt.rps })
		if got := c.limiter.Limit(); got != tt.want {
			t.Errorf("RequestsPerSecond %v: got limit %v, want %v", tt.rps, got, tt.want)
		}
	}
}

func TestEndlessResponseStopsAtTheBound(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"query": {"pages": [{"title": "`)
		chunk := []byte(strings.Repeat("a", 64<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	// user:secret in the endpoint must not reach the error.
	endpoint := strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1) + "/w/api.php"
	c := newClient(t, endpoint, func(o *Options) { o.MaxRetries = 3 })
	_, _, err := c.Page(t.Context(), "Orla Vint", env.MatchPaper)
	var tl *safefile.TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "16 MiB") {
		t.Fatalf("got %v, want a TooLargeError naming the bound", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error holds the endpoint's password: %v", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1: an oversized response is not asked again", n)
	}
}
