package pipeline

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactedConfigHidesEveryHeaderAndURLCredentials(t *testing.T) {
	cfg := Default()
	cfg.LLM.Headers = map[string]string{"Authorization": "Bearer sk-canary", "Cookie": "session=cookie-canary", "X-Team": "research"}
	cfg.LLM.BaseURL = "https://alice:url-canary@llm.example.com/v1"
	cfg.LLM.Endpoints = []EndpointConfig{{BaseURL: "https://token-canary@gpu2.example.com/v1", Headers: map[string]string{"X-Proxy-Auth": "proxy-canary"}}}
	cfg.Env.MediaWikiURL = "https://bob:wiki-canary@wiki.example.com/w/api.php"
	m := cfg.Redacted()
	h := m["llm"].(map[string]any)["headers"].(map[string]string)
	for _, k := range []string{"Authorization", "Cookie", "X-Team"} {
		if h[k] != RedactedValue {
			t.Errorf("header %s: got %q, want it hidden", k, h[k])
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"canary", "research"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the redacted config holds %q: %s", secret, b)
		}
	}
	for _, kept := range []string{"alice:[redacted]@llm.example.com/v1", "bob:[redacted]@wiki.example.com", "[redacted]@gpu2.example.com"} {
		if !strings.Contains(string(b), kept) {
			t.Errorf("the redacted config lost %q: %s", kept, b)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pass@host/v1":                    "https://user:[redacted]@host/v1",
		"https://token@host":                           "https://[redacted]@host",
		"http://127.0.0.1:8000/v1":                     "http://127.0.0.1:8000/v1",
		`Get "https://u:p@h/x?a=b": dial tcp: refused`: `Get "https://u:[redacted]@h/x?a=b": dial tcp: refused`,
		"mail me at a@b.c":                             "mail me at a@b.c",
		"https://host/path?email=a@b.c":                "https://host/path?email=a@b.c",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
