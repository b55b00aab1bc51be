package agentgym_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reactgen/reactgen/env/agentgym"
	"github.com/reactgen/reactgen/env/agentgym/agentgymtest"
)

func noSleep(ctx context.Context, d time.Duration) error { return ctx.Err() }

func newClient(t *testing.T, url string, d agentgym.Dialect) *agentgym.Client {
	t.Helper()
	c, err := agentgym.New(agentgym.Options{URL: url, Dialect: d, Timeout: 2 * time.Second, MaxRetries: 3, Sleep: noSleep})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// play opens game and steps its moves, failing on any observation that differs.
func play(t *testing.T, c *agentgym.Client, game int, start string, moves []agentgymtest.Move) agentgym.Result {
	t.Helper()
	s, st, err := c.Open(t.Context(), game)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(t.Context())
	if st.Observation != start {
		t.Fatalf("game %d starts %q, want %q", game, st.Observation, start)
	}
	var last agentgym.Result
	for i, m := range moves {
		if last, err = s.Step(t.Context(), m.Action); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		if last.Observation != m.Observation {
			t.Fatalf("step %d %q: observation %q, want %q", i+1, m.Action, last.Observation, m.Observation)
		}
		if last.Done != (i == len(moves)-1) {
			t.Fatalf("step %d: done %v", i+1, last.Done)
		}
	}
	return last
}

func TestALFWorldGamesWinAndPool(t *testing.T) {
	games := agentgymtest.Household()
	srv := agentgymtest.NewALFWorld(t, games)
	c := newClient(t, srv.URL, agentgym.ALFWorld)
	for i, g := range games {
		if r := play(t, c, i, g.Observation, g.Solution); r.Reward != 1 {
			t.Fatalf("game %d: reward %v after its solution, want 1", i, r.Reward)
		}
	}
	if n := srv.Created(); n != 1 {
		t.Fatalf("%d environments created for three games one after another, want 1 (pooled)", n)
	}
	s, st, err := c.Open(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(st.TaskType, "pick_and_place_simple-") {
		t.Fatalf("task type %q", st.TaskType)
	}
	r, err := s.Step(t.Context(), "think: where is the quill?")
	if err != nil || r.Observation != "Nothing happens." || r.Done || r.Reward != 0 {
		t.Fatalf("a think step: %+v, %v", r, err)
	}
	s.Release(t.Context())
}

func TestWebShopGoalsScore(t *testing.T) {
	products, goals := agentgymtest.Shop()
	srv := agentgymtest.NewWebShop(t, products, goals)
	c := newClient(t, srv.URL, agentgym.WebShop)
	s, st, err := c.Open(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := "WebShop [SEP] Instruction: [SEP] " + goals[1].Instruction + " [SEP] Search"; st.Observation != want {
		t.Fatalf("start %q, want %q", st.Observation, want)
	}
	steps := []struct {
		action string
		has    string
		reward float64
		done   bool
	}{
		{"search[stoneware teapot]", "B0TEAPOT02 [SEP] Stoneware Teapot", 0, false},
		{"click[B0TEAPOT02]", "color [SEP] ochre [SEP] teal", 0, false},
		{"click[Teal]", "Buy Now", 0, false},
		{"click[nothing here]", "Buy Now", 0, false},
		{"click[Buy Now]", "Your score (min 0.0, max 1.0) [SEP] 1", 1, true},
	}
	for _, x := range steps {
		r, err := s.Step(t.Context(), x.action)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Observation, x.has) || r.Reward != x.reward || r.Done != x.done {
			t.Fatalf("%s: %+v, want %q in it, reward %v, done %v", x.action, r, x.has, x.reward, x.done)
		}
	}
	s.Release(t.Context())
	// The wrong option scores half.
	s, _, err = c.Open(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"search[teapot]", "click[b0teapot02]", "click[ochre]"} {
		if _, err := s.Step(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.Step(t.Context(), "click[buy now]")
	if err != nil || r.Reward != 0.5 || !r.Done {
		t.Fatalf("buying the ochre teapot: %+v, %v; want reward 0.5", r, err)
	}
	if got := srv.Created(); got != 1 {
		t.Fatalf("%d environments created, want 1", got)
	}
}

func TestServerErrorsAndRetries(t *testing.T) {
	games := agentgymtest.Household()
	alf := agentgymtest.NewALFWorld(t, games)
	products, goals := agentgymtest.Shop()
	shop := agentgymtest.NewWebShop(t, products, goals)

	t.Run("alfworld error reply names the message", func(t *testing.T) {
		c := newClient(t, alf.URL, agentgym.ALFWorld)
		_, _, err := c.Open(t.Context(), 99)
		var se *agentgym.ServerError
		if !errors.As(err, &se) || se.Message != "list index out of range" || !strings.Contains(err.Error(), "game 99") {
			t.Fatalf("err = %v", err)
		}
		_, err = c.Step(t.Context(), 1234, "look")
		if !errors.As(err, &se) || se.Message != "The id 1234 is not valid." {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("webshop goal out of range is a 500 after retries", func(t *testing.T) {
		c := newClient(t, shop.URL, agentgym.WebShop)
		_, _, err := c.Open(t.Context(), 7)
		var se *agentgym.ServerError
		if !errors.As(err, &se) || se.Status != 500 || !strings.Contains(err.Error(), "gave up after 4 tries") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("503s are retried, steps too", func(t *testing.T) {
		c := newClient(t, alf.URL, agentgym.ALFWorld)
		alf.FailNext(2)
		s, _, err := c.Open(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		alf.FailNext(3)
		r, err := s.Step(t.Context(), games[0].Solution[0].Action)
		if err != nil || r.Observation != games[0].Solution[0].Observation {
			t.Fatalf("%+v, %v", r, err)
		}
		s.Release(t.Context())
	})
	t.Run("a slow server times out", func(t *testing.T) {
		c, err := agentgym.New(agentgym.Options{URL: shop.URL, Dialect: agentgym.WebShop, Timeout: 50 * time.Millisecond, MaxRetries: 1, Sleep: noSleep})
		if err != nil {
			t.Fatal(err)
		}
		shop.Delay(time.Second)
		defer shop.Delay(0)
		_, _, err = c.Open(t.Context(), 0)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "gave up after 2 tries") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a dead server", func(t *testing.T) {
		dead := agentgymtest.NewALFWorld(t, games)
		url := dead.URL
		dead.Close()
		c := newClient(t, url, agentgym.ALFWorld)
		_, _, err := c.Open(t.Context(), 0)
		if err == nil || !strings.Contains(err.Error(), "AgentGym server "+url) || !strings.Contains(err.Error(), "gave up after 4 tries") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad url", func(t *testing.T) {
		if _, err := agentgym.New(agentgym.Options{URL: "localhost:36001", Dialect: agentgym.ALFWorld}); err == nil || !strings.Contains(err.Error(), "http(s) URL") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestGameID(t *testing.T) {
	id := agentgym.GameID("alfworld", 12)
	if id != "alfworld-12" {
		t.Fatal(id)
	}
	if n, err := agentgym.ParseGameID("alfworld", id); err != nil || n != 12 {
		t.Fatal(n, err)
	}
	if _, err := agentgym.ParseGameID("webshop", id); err == nil {
		t.Fatal("a webshop id read an alfworld one")
	}
}

// The Generic dialect speaks the shape of AgentGym's SciWorld server
// (agentenv_sciworld/environment.py): {"id"} from /create, {id, data_idx} to /reset and
// an object with the observation back, {observation, reward, score, done} from /step,
// and POST /close, which a broken session calls.
func TestGenericDialectSciWorldShape(t *testing.T) {
	var closed []int
	var reset map[string]int
	mux := http.NewServeMux()
	mux.HandleFunc("POST /create", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"id": 4}`) })
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]int
		_ = json.NewDecoder(r.Body).Decode(&body)
		reset = body
		fmt.Fprintf(w, `{"task_name": "boil", "var_num": %d, "task_description": "Boil water.", "observation": "This room is called the kitchen.", "reward": 0, "score": 0, "deleted": false, "done": false}`, body["data_idx"])
	})
	mux.HandleFunc("POST /step", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID     int    `json:"id"`
			Action string `json:"action"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Action == "explode" {
			fmt.Fprint(w, `{"error": "bad action"}`)
			return
		}
		fmt.Fprintf(w, `{"observation": "You %s.", "reward": 25, "score": 25, "done": false}`, body.Action)
	})
	mux.HandleFunc("POST /close", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID int `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		closed = append(closed, body.ID)
		fmt.Fprint(w, `true`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := newClient(t, srv.URL, agentgym.DialectFor("sciworld"))
	s, st, err := c.Open(t.Context(), 7)
	if err != nil || st.Observation != "This room is called the kitchen." || reset["id"] != 4 || reset["data_idx"] != 7 || len(reset) != 2 {
		t.Fatalf("open: %+v, %v; reset body %v", st, err, reset)
	}
	r, err := s.Step(t.Context(), "look around")
	if err != nil || r.Observation != "You look around." || r.Reward != 25 || r.Done {
		t.Fatalf("step: %+v, %v", r, err)
	}
	if _, err := s.Step(t.Context(), "explode"); err == nil || !strings.Contains(err.Error(), "bad action") {
		t.Fatalf("an error reply: %v", err)
	}
	s.Release(t.Context())
	if len(closed) != 1 || closed[0] != 4 {
		t.Fatalf("closed %v, want the broken environment 4", closed)
	}
}
