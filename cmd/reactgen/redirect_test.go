package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/origin/origintest"
)

// A model server that redirects every request to another host: the run refuses the
// redirect, exits 1 naming llm.base_url, and the other host receives nothing (neither
// the key nor the configured gateway header nor the prompt). Before, a 307/308 was
// followed with the headers and the body and the run exited 0.
func TestGenerateRefusesARedirectToAnotherHost(t *testing.T) {
	key, header := canary("sk"), canary("gw")
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		p := origintest.New(t, status)
		tmp := t.TempDir()
		cfg := testConfig(t, filepath.Join(tmp, "cfg"), p.From.URL+"/v1", map[string]any{"task.limit": 4})
		env := childEnv{vars: map[string]string{"OPENAI_API_KEY": key}}
		code, stdout, stderr := runChild(t, env, "generate", "--config", cfg, "--out", filepath.Join(tmp, "run"),
			"--set=llm.headers.api-key="+header)
		if code != exitFailure {
			t.Errorf("redirect %d: exit %d, want %d; stderr:\n%s", status, code, exitFailure, stderr)
		}
		if !strings.Contains(stderr, "redirect to another host refused") || !strings.Contains(stderr, "llm.base_url") {
			t.Errorf("redirect %d: stderr does not say why:\n%s", status, stderr)
		}
		t.Logf("redirect %d: %s", status, lastLine(stderr))
		if got := p.Received(); len(got) != 0 {
			t.Errorf("redirect %d: the other host received %d requests, the first with headers %v", status, len(got), got[0].Header)
		}
		if l := leaksUnder(t, tmp, []string{key, header}, map[string]string{"stdout": stdout, "stderr": stderr}); len(l) > 0 {
			t.Errorf("redirect %d: %v", status, l)
		}
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
