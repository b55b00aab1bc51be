package origin_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/origin"
	"github.com/reactgen/reactgen/internal/origin/origintest"
)

func TestPinRefusesARedirectToAnotherHost(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			p := origintest.New(t, status)
			hc, err := origin.Pin(nil, p.From.URL+"/v1", "llm.base_url")
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.From.URL+"/v1/chat/completions", strings.NewReader(`{"prompt":"secret"}`))
			req.Header.Set("Authorization", "Bearer sk-test-secret")
			req.Header.Set("Cookie", "session=abc")
			resp, err := hc.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("redirect %d followed: status %d", status, resp.StatusCode)
			}
			if !errors.Is(err, origin.ErrRedirect) {
				t.Errorf("error %v is not ErrRedirect", err)
			}
			for _, want := range []string{"127.0.0.2", "llm.base_url"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
			if got := p.Received(); len(got) != 0 {
				t.Errorf("the second host received %d requests: %+v", len(got), got)
			}
		})
	}
}

func TestPinFollowsARedirectOnTheSameHost(t *testing.T) {
	p := origintest.New(t, http.StatusTemporaryRedirect)
	// The recorder itself, asked at its own URL, answers directly; a pin to it accepts a
	// request there, and refuses one built for another host outright.
	hc, err := origin.Pin(nil, p.To.URL+"/v1", "llm.base_url")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Post(p.To.URL+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := hc.Post(p.From.URL+"/v1/chat/completions", "application/json", strings.NewReader("{}")); !errors.Is(err, origin.ErrRedirect) {
		t.Errorf("a request to another host: %v, want ErrRedirect", err)
	}
	if n := len(p.Received()); n != 1 {
		t.Errorf("recorder got %d requests, want 1", n)
	}
}

func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://API.openai.com/v1":  "https://api.openai.com:443",
		"https://api.openai.com:443": "https://api.openai.com:443",
		"http://127.0.0.1:8000/v1":   "http://127.0.0.1:8000",
		"http://[::1]/v1":            "http://[::1]:80",
		"http://user:pw@h:1/":        "http://h:1",
	} {
		u, _ := url.Parse(in)
		if got := origin.Of(u); got != want {
			t.Errorf("Of(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestCheckHeader(t *testing.T) {
	for _, c := range []struct {
		name, value string
		ok          bool
	}{
		{"api-key", "abc", true},
		{"X-Api-Key", "a\tb", true},
		{"api-key", "abc\r\nX-Injected: 1", false},
		{"api-key", "abc\n", false},
		{"api key", "abc", false},
		{"", "abc", false},
		{"api-key", "a\x00b", false},
		{"bad:name", "v", false},
	} {
		err := origin.CheckHeader(c.name, c.value)
		if (err == nil) != c.ok {
			t.Errorf("CheckHeader(%q, %q) = %v, want ok %v", c.name, c.value, err, c.ok)
		}
	}
}
