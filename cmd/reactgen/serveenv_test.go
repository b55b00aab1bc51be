package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
)

// wsCall sends one OpenEnv WebSocket message and decodes the reply's data.
func wsCall(t *testing.T, c *websocket.Conn, msg map[string]any, want string) map[string]any {
	t.Helper()
	b, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	_, reply, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(reply, &r); err != nil || r.Type != want {
		t.Fatalf("reply to %v: %s, want a %s", msg, reply, want)
	}
	return r.Data
}

// startServeEnv runs serve-env in-process on a free port until the test ends.
func startServeEnv(t *testing.T, args ...string) (base string, stop func() result) {
	t.Helper()
	addr := make(chan net.Addr, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan result, 1)
	go func() {
		a := newApp(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, func(string) string { return "" })
		o := serveEnvOptions{listen: "127.0.0.1:0", ready: func(x net.Addr) { addr <- x }}
		cmd := a.newServeEnvCmd()
		cmd.ParseFlags(args)
		o.config.file, _ = cmd.Flags().GetString("config")
		o.config.out, _ = cmd.Flags().GetString("out")
		o.config.sets, _ = cmd.Flags().GetStringArray("set")
		err := a.runServeEnv(ctx, o)
		done <- result{code: exitCode(err), err: err}
	}()
	select {
	case x := <-addr:
		base = "http://" + x.String()
	case r := <-done:
		t.Fatalf("serve-env exited: %v", r.err)
	}
	var stopped *result
	stop = func() result {
		if stopped == nil {
			cancel()
			r := <-done
			stopped = &r
		}
		return *stopped
	}
	t.Cleanup(func() { stop() })
	return base, stop
}

// TestServeEnvAnswersAsReactgenEnv plays demo episodes over /ws against serve-env and
// through `reactgen env` on the same index: every observation is the same.
func TestServeEnvAnswersAsReactgenEnv(t *testing.T) {
	dir, _ := demoRun(t)
	base, stop := startServeEnv(t, "--config", "../../configs/demo.yaml", "--out", dir)
	conn, _, err := websocket.Dial(t.Context(), strings.Replace(base, "http", "ws", 1)+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	episodes := []struct {
		id, gold string
		actions  []string
	}{
		{"a40737f241598e2825d59b3f", "Tifaektir", []string{"Search[Dapaeth Pictures]", "Lookup[founded]", "Lookup[founded]", "Search[Thobrar Paqael]", "Lookup[born]", "Finish[Tifaektir]"}},
		{"a40737f241598e2825d59b3f", "Tifaektir", []string{"Search[Dapaeth]", "Search[Thobrar]", "search[Thobrar Paqael]", "Lookup[]", "Finish[Laedreihok]"}},
	}
	for _, ep := range episodes {
		var in strings.Builder
		for _, a := range ep.actions {
			b, _ := json.Marshal(a)
			fmt.Fprintf(&in, "%s\n", b)
		}
		res := invoke(t, in.String(), nil, "env", "--index", filepath.Join(dir, "index"), "--gold", ep.gold, "--json")
		if res.code != 0 {
			t.Fatalf("reactgen env: %s", res.stderr)
		}
		want := strings.Split(strings.TrimSpace(res.stdout), "\n")
		r := wsCall(t, conn, map[string]any{"type": "reset", "data": map[string]any{"question_id": ep.id}}, "observation")
		if obs := r["observation"].(map[string]any); !strings.HasPrefix(obs["text"].(string), "Question: In which city") {
			t.Errorf("reset: %v", obs)
		}
		for i, line := range want {
			var w env.ServeLine
			json.Unmarshal([]byte(line), &w)
			got := wsCall(t, conn, map[string]any{"type": "step", "data": map[string]any{"action": ep.actions[i]}}, "observation")
			obs := got["observation"].(map[string]any)
			if obs["text"] != w.Observation || got["done"] != w.Done {
				t.Errorf("%s: got %q done=%v, reactgen env %q done=%v", ep.actions[i], obs["text"], got["done"], w.Observation, w.Done)
			}
		}
	}
	resp, err := http.Post(base+"/retrieve", "application/json", strings.NewReader(`{"queries":["Dapaeth Pictures founder"],"topk":1,"return_scores":true}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST /retrieve: %v %v", resp, err)
	}
	resp.Body.Close()
	conn.Close(websocket.StatusNormalClosure, "")
	if r := stop(); r.err != nil {
		t.Errorf("serve-env after its context ended: %v", r.err)
	}
}

func TestServeEnvRefusesBadUsage(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"bad listen address", []string{"serve-env", "--config", "../../configs/demo.yaml", "--listen", "nowhere"}},
		{"no config", []string{"serve-env", "--listen", "127.0.0.1:0"}},
		{"bad serve key", []string{"serve-env", "--config", "../../configs/demo.yaml", "--listen", "127.0.0.1:0", "--set", "serve.max_sessions=0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := invoke(t, "", nil, tt.args...); r.code != exitUsage {
				t.Errorf("exit %d, want %d: %s", r.code, exitUsage, r.stderr)
			}
		})
	}
}

// TestServeEnvSIGTERMDrains sends SIGTERM to a serve-env process with a session open:
// the session is closed with 1001 (going away) and the process exits 143 after draining.
func TestServeEnvSIGTERMDrains(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir, _ := demoRun(t)
	cfg := mustAbs(t, "../../configs/demo.yaml")
	addr := llmtest.FreeAddr(t)
	c := startChild(t, childEnv{}, "serve-env", "--config", cfg, "--out", dir, "--listen", addr)
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve-env did not come up: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	conn, _, err := websocket.Dial(t.Context(), "ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	wsCall(t, conn, map[string]any{"type": "reset", "data": map[string]any{"seed": 0}}, "observation")
	c.signal(t, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, _, err = conn.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("the session at SIGTERM: %v, want closed 1001", err)
	}
	if code := c.wait(t); code != exitTerminated {
		t.Errorf("exit %d, want %d", code, exitTerminated)
	}
	if !strings.Contains(c.stderr.String(), "drained") {
		t.Errorf("stderr does not say it drained:\n%s", c.stderr.String())
	}
}
