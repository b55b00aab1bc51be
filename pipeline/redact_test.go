package pipeline

import "testing"

func TestRedactedConfigHidesAuthHeaders(t *testing.T) {
	cfg := Default()
	cfg.LLM.Headers = map[string]string{"Authorization": "Bearer sk-canary", "X-Team": "research"}
	m := cfg.Redacted()
	h := m["llm"].(map[string]any)["headers"].(map[string]string)
	if h["Authorization"] != "[redacted]" || h["X-Team"] != "research" {
		t.Errorf("headers: got %v", h)
	}
}
