package openaiclient

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reactgen/reactgen/internal/origin"
)

// headerTransport is what a caller's Transport must at least do: add the headers.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

func withHeaders(pinned http.RoundTripper, headers http.Header) http.RoundTripper {
	return headerTransport{pinned, headers}
}

func TestNewRefuses(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"scheme", Options{BaseURL: "ftp://user:hunter2-secret@example.com/v1"}, "fine-tuning base url"},
		{"header", Options{BaseURL: "http://127.0.0.1:1/v1", Headers: map[string]string{"X-Key": "a\nb"}}, "fine-tuning headers:"},
		{"check", Options{BaseURL: "http://127.0.0.1:1/v1/", Check: func(base string) error {
			return errors.New("checked " + base)
		}}, "checked http://127.0.0.1:1/v1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Name, tc.o.Transport = "fine-tuning", withHeaders
			_, _, _, err := New(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows the URL's password: %v", err)
			}
		})
	}
}

func TestNewDefaultBase(t *testing.T) {
	_, _, base, err := New(Options{Name: "llm", Transport: withHeaders})
	if err != nil || base != DefaultBaseURL {
		t.Errorf("got %q, %v; want %s", base, err, DefaultBaseURL)
	}
}

// TestNewSendsAndPins: a request carries the key and the headers to the base URL's
// server, and a redirect to another origin is refused, not followed.
func TestNewSendsAndPins(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect was followed to %s with Authorization %q", r.URL, r.Header.Get("Authorization"))
	}))
	defer other.Close()
	var redirect atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if redirect.Load() {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk-test-key" {
			t.Errorf("Authorization %q", got)
		}
		if got := r.Header.Get("X-Org"); got != "org-1" {
			t.Errorf("X-Org %q", got)
		}
		if r.URL.Path != "/v1/models" {
			t.Errorf("path %s", r.URL.Path)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{{"id": "m", "object": "model"}}})
	}))
	defer srv.Close()
	client, hc, base, err := New(Options{Name: "llm", BaseURL: srv.URL + "/v1/", BaseURLKey: "llm.base_url", APIKey: "sk-test-key",
		Headers: map[string]string{"X-Org": "org-1"}, Transport: withHeaders})
	if err != nil {
		t.Fatal(err)
	}
	if base != srv.URL+"/v1" || hc == nil {
		t.Errorf("base %q, HTTP client %v", base, hc)
	}
	models, err := client.ListModels(t.Context())
	if err != nil || len(models.Models) != 1 || models.Models[0].ID != "m" {
		t.Fatalf("list models: %+v, %v", models, err)
	}
	redirect.Store(true)
	if _, err := client.ListModels(t.Context()); !errors.Is(err, origin.ErrRedirect) || !strings.Contains(err.Error(), "llm.base_url") {
		t.Errorf("a redirect to another host: got %v, want origin.ErrRedirect naming llm.base_url", err)
	}
}
