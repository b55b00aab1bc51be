package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/redact"
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
		if h[k] != redact.Value {
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
