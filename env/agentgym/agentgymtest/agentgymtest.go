// Package agentgymtest serves fake AgentGym environment servers on 127.0.0.1 for tests:
// ALFWorld and WebShop with the routes, request bodies and reply shapes of
// agentenv-alfworld and agentenv-webshop (WooooDyy/AgentGym), over a small fictional
// household and shop written here, each game with a known solution. ALFWorld answers
// its errors as {"error": …} with status 200, as its server does; WebShop answers a
// reset with [observation, null] and a step with {state, reward, done, info}.
//
// It consumes the games (Household, Shop, or a test's own) and produces an
// httptest.Server with a log of the actions it received, and faults a test can turn on:
// a server that fails the next requests with 503, answers slowly, or is gone.
package agentgymtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Move is one step of a game's known solution: the action and what the server answers.
type Move struct {
	Action      string
	Observation string
}

// Game is one ALFWorld game: its task type path (as the server reports it, the game
// file's last two folders), its first observation and the moves that win it. Any
// other action is answered "Nothing happens.", as ALFWorld answers an action it cannot
// carry out.
type Game struct {
	TaskType    string
	Observation string
	Solution    []Move
}

// Household is three fictional ALFWorld games: a pick-and-place, a clean-and-place and
// an examine-in-light, in that order.
func Household() []Game {
	return []Game{
		{TaskType: "pick_and_place_simple-Quill-None-Bookcase-7/trial_T0001",
			Observation: "You are in the middle of a room. Looking quickly around you, you see a bookcase 1, a desk 1, a drawer 1, and a windowsill 1.\nYour task is to: put a quill in bookcase.",
			Solution: []Move{
				{"go to desk 1", "On the desk 1, you see a inkpot 1, and a quill 1."},
				{"take quill 1 from desk 1", "You pick up the quill 1 from the desk 1."},
				{"go to bookcase 1", "On the bookcase 1, you see a atlas 2."},
				{"put quill 1 in/on bookcase 1", "You put the quill 1 in/on the bookcase 1."},
			}},
		{TaskType: "pick_clean_then_place_in_recep-Ladle-None-Hook-12/trial_T0002",
			Observation: "You are in the middle of a room. Looking quickly around you, you see a basin 1, a hook 1, a shelf 1, and a stove 1.\nYour task is to: put a clean ladle in hook.",
			Solution: []Move{
				{"go to stove 1", "On the stove 1, you see a kettle 1, and a ladle 2."},
				{"take ladle 2 from stove 1", "You pick up the ladle 2 from the stove 1."},
				{"go to basin 1", "On the basin 1, you see nothing."},
				{"clean ladle 2 with basin 1", "You clean the ladle 2 using the basin 1."},
				{"go to hook 1", "On the hook 1, you see nothing."},
				{"put ladle 2 in/on hook 1", "You put the ladle 2 in/on the hook 1."},
			}},
		{TaskType: "look_at_obj_in_light-Shell-None-Lantern-4/trial_T0003",
			Observation: "You are in the middle of a room. Looking quickly around you, you see a chest 1, a lantern 1, and a table 1.\nYour task is to: look at shell under the lantern.",
			Solution: []Move{
				{"go to chest 1", "The chest 1 is closed."},
				{"open chest 1", "You open the chest 1. The chest 1 is open. In it, you see a shell 3."},
				{"take shell 3 from chest 1", "You pick up the shell 3 from the chest 1."},
				{"go to lantern 1", "On the lantern 1, you see nothing."},
				{"use lantern 1", "You turn on the lantern 1."},
			}},
	}
}

// Server is a fake AgentGym server.
type Server struct {
	*httptest.Server

	mu      sync.Mutex
	actions map[int][]string // per environment, every action stepped, in order
	created int
	resets  []int // the games reset, in order

	fail  atomic.Int64 // the next n requests answer 503
	delay atomic.Int64 // each request waits this long (nanoseconds) first
}

// AllActions returns every action received, per environment.
func (s *Server) AllActions() map[int][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int][]string{}
	for k, v := range s.actions {
		out[k] = slices.Clone(v)
	}
	return out
}

// Created is how many environments /create made.
func (s *Server) Created() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created
}

// FailNext makes the next n requests answer 503 Service Unavailable.
func (s *Server) FailNext(n int) { s.fail.Store(int64(n)) }

// Delay makes every request wait d before it is served.
func (s *Server) Delay(d time.Duration) { s.delay.Store(int64(d)) }

func (s *Server) gate(w http.ResponseWriter, r *http.Request) bool {
	if d := time.Duration(s.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return false
		}
	}
	for {
		n := s.fail.Load()
		if n <= 0 {
			return true
		}
		if s.fail.CompareAndSwap(n, n-1) {
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
			return false
		}
	}
}

func (s *Server) record(id int, action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.actions == nil {
		s.actions = map[int][]string{}
	}
	s.actions[id] = append(s.actions[id], action)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body into v, answering FastAPI's 422 when it does not fit.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(map[string]any{"detail": []map[string]any{{"msg": err.Error(), "type": "value_error"}}})
		return false
	}
	return true
}

// alfEnv is one ALFWorld environment: the game reset into it and how far it is.
type alfEnv struct {
	game       int
	next       int
	done       bool
	reset      bool
	observe    string
	admissible []string
}

// NewALFWorld serves games as agentenv-alfworld serves its games list: POST /create,
// POST /reset {id, game, world_type}, POST /step {id, action}, GET /observation,
// GET /available_actions and GET /detail with ?id=.
func NewALFWorld(t testing.TB, games []Game) *Server {
	t.Helper()
	s := &Server{}
	var mu sync.Mutex
	envs := map[int]*alfEnv{}
	admissible := func(g Game, next int) []string {
		out := []string{"inventory", "look"}
		if next < len(g.Solution) {
			out = append(out, g.Solution[next].Action)
		}
		return out
	}
	check := func(id int, isReset bool) (*alfEnv, string) {
		e, ok := envs[id]
		if !ok {
			return nil, fmt.Sprintf("The id %d is not valid.", id)
		}
		if !isReset && e.done {
			return nil, fmt.Sprintf("The task with environment %d has finished.", id)
		}
		return e, ""
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, "This is environment AlfWorld.")
	})
	mux.HandleFunc("POST /create", func(w http.ResponseWriter, r *http.Request) {
		if !s.gate(w, r) {
			return
		}
		mu.Lock()
		id := len(envs)
		envs[id] = &alfEnv{}
		mu.Unlock()
		s.mu.Lock()
		s.created++
		s.mu.Unlock()
		writeJSON(w, map[string]any{"id": id})
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		if !s.gate(w, r) {
			return
		}
		var body struct {
			ID        *int    `json:"id"`
			Game      *int    `json:"game"`
			WorldType *string `json:"world_type"`
		}
		if !decode(w, r, &body) {
			return
		}
		if body.ID == nil || body.Game == nil || body.WorldType == nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			writeJSON(w, map[string]any{"detail": "id, game and world_type are required"})
			return
		}
		if wt := *body.WorldType; wt != "Text" && wt != "Embody" && wt != "Hybrid" {
			writeJSON(w, map[string]any{"error": `world_type must be one of "Text", "Embody" and "Hybrid"`})
			return
		}
		mu.Lock()
		defer mu.Unlock()
		e, msg := check(*body.ID, true)
		if msg != "" {
			writeJSON(w, map[string]any{"error": msg})
			return
		}
		if *body.Game < 0 || *body.Game >= len(games) {
			writeJSON(w, map[string]any{"error": "list index out of range"})
			return
		}
		g := games[*body.Game]
		*e = alfEnv{game: *body.Game, reset: true, observe: g.Observation, admissible: admissible(g, 0)}
		s.mu.Lock()
		s.resets = append(s.resets, *body.Game)
		s.mu.Unlock()
		writeJSON(w, map[string]any{"id": *body.ID, "observation": g.Observation, "available_actions": e.admissible, "task_type": g.TaskType})
	})
	mux.HandleFunc("POST /step", func(w http.ResponseWriter, r *http.Request) {
		if !s.gate(w, r) {
			return
		}
		var body struct {
			ID     *int    `json:"id"`
			Action *string `json:"action"`
		}
		if !decode(w, r, &body) {
			return
		}
		if body.ID == nil || body.Action == nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			writeJSON(w, map[string]any{"detail": "id and action are required"})
			return
		}
		mu.Lock()
		defer mu.Unlock()
		e, msg := check(*body.ID, false)
		if msg == "" && !e.reset {
			msg = "'NoneType' object has no attribute 'step'" // stepped before any reset
		}
		if msg != "" {
			writeJSON(w, map[string]any{"error": msg})
			return
		}
		s.record(*body.ID, *body.Action)
		g := games[e.game]
		obs, won := "Nothing happens.", false
		if e.next < len(g.Solution) && *body.Action == g.Solution[e.next].Action {
			obs = g.Solution[e.next].Observation
			e.next++
			won = e.next == len(g.Solution)
		}
		e.done, e.observe, e.admissible = won, obs, admissible(g, e.next)
		writeJSON(w, map[string]any{"observation": obs, "reward": map[bool]float64{true: 1, false: 0}[won],
			"available_actions": e.admissible, "done": won})
	})
	get := func(path string, f func(e *alfEnv) any) {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			id, err := strconv.Atoi(r.URL.Query().Get("id"))
			if err != nil {
				w.WriteHeader(http.StatusUnprocessableEntity)
				writeJSON(w, map[string]any{"detail": "id must be an integer"})
				return
			}
			mu.Lock()
			defer mu.Unlock()
			e, msg := check(id, false)
			if msg != "" {
				writeJSON(w, map[string]any{"error": msg})
				return
			}
			writeJSON(w, f(e))
		})
	}
	get("/observation", func(e *alfEnv) any { return e.observe })
	get("/available_actions", func(e *alfEnv) any { return e.admissible })
	get("/detail", func(e *alfEnv) any {
		return map[string]any{"world_type": "Text", "game": e.game, "observation": e.observe,
			"available_actions": e.admissible, "done": e.done, "reward": 0, "deleted": false}
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Product is one item of the fake shop.
type Product struct {
	ASIN    string
	Title   string
	Price   string // as the page shows it, e.g. "$12.50"
	Options []Option
	About   string // the Description page's text
}

// Option is one buying option of a product: its kind (size, color) and values.
type Option struct {
	Kind   string
	Values []string
}

// Goal is one shopping task: the instruction and the purchase that scores 1.
type Goal struct {
	Instruction string
	ASIN        string
	Options     []string // the option values the instruction asks for
}

// Shop is a fictional shop of five products and two goals with known solutions:
// goal 0 buys B0QUILL001 in "pack of 3", goal 1 buys B0TEAPOT02 in "teal".
func Shop() ([]Product, []Goal) {
	return []Product{
			{ASIN: "B0QUILL001", Title: "Marsh Heron Goose Feather Quill Pen Set with Ink Bottle", Price: "$14.00",
				Options: []Option{{Kind: "size", Values: []string{"single", "pack of 3"}}}, About: "Three feather quills cut by hand."},
			{ASIN: "B0QUILL777", Title: "Plastic Quill Pen Novelty Gift", Price: "$4.50", About: "A plastic pen shaped like a feather."},
			{ASIN: "B0TEAPOT02", Title: "Stoneware Teapot 1.2 Litre with Steel Infuser", Price: "$31.99",
				Options: []Option{{Kind: "color", Values: []string{"ochre", "teal"}}}, About: "A glazed teapot that keeps tea warm."},
			{ASIN: "B0TEAPOT09", Title: "Glass Teapot 0.6 Litre", Price: "$19.00", About: "A small glass teapot."},
			{ASIN: "B0LAMP0003", Title: "Brass Reading Lamp with Linen Shade", Price: "$58.00", About: "A desk lamp."},
		}, []Goal{
			{Instruction: "i want a pack of 3 feather quill pens with ink, and price lower than 30.00 dollars", ASIN: "B0QUILL001", Options: []string{"pack of 3"}},
			{Instruction: "i need a teal stoneware teapot with an infuser, and price lower than 40.00 dollars", ASIN: "B0TEAPOT02", Options: []string{"teal"}},
		}
}

// shopEnv is one WebShop environment: its session's goal and the page it shows.
type shopEnv struct {
	goal     int
	page     string // start, results, item, sub, done
	keywords string
	asin     string
	chosen   map[string]string // option kind -> value
	obs      string
	clicks   []string // the page's clickables, lower-cased as WebAgentTextEnv keys them
}

// NewWebShop serves products and goals as agentenv-webshop serves its text
// environment: POST /create (a bare number), POST /reset {env_idx, session_id}
// ([observation, null]), POST /step {env_idx, action} ({state, reward, done, info}),
// GET /observation and GET /available_actions with ?env_idx=. Pages are WebShop's simple
// text mode, texts joined by " [SEP] "; an action names its argument in any case, and a
// click on what the page does not show changes nothing, as WebAgentTextEnv.step does.
func NewWebShop(t testing.TB, products []Product, goals []Goal) *Server {
	t.Helper()
	s := &Server{}
	var mu sync.Mutex
	var envs []*shopEnv
	find := func(asin string) *Product {
		for i := range products {
			if strings.EqualFold(products[i].ASIN, asin) {
				return &products[i]
			}
		}
		return nil
	}
	head := func(e *shopEnv) string { return "Instruction: [SEP] " + goals[e.goal].Instruction }
	show := func(e *shopEnv) {
		var parts []string
		switch e.page {
		case "start":
			e.obs = "WebShop [SEP] Instruction: [SEP] " + goals[e.goal].Instruction + " [SEP] Search"
			e.clicks = []string{"search"}
			return
		case "results":
			var hits []Product
			for _, p := range products {
				title := strings.ToLower(p.Title)
				for _, kw := range strings.Fields(e.keywords) {
					if strings.Contains(title, kw) {
						hits = append(hits, p)
						break
					}
				}
			}
			parts = append(parts, head(e), "Back to Search", fmt.Sprintf("Page 1 (Total results: %d)", len(hits)), "Next >")
			e.clicks = []string{"back to search", "next >"}
			for _, p := range hits {
				parts = append(parts, p.ASIN, p.Title, p.Price)
				e.clicks = append(e.clicks, strings.ToLower(p.ASIN))
			}
		case "item":
			p := find(e.asin)
			parts = append(parts, head(e), "Back to Search", "< Prev")
			e.clicks = []string{"back to search", "< prev"}
			for _, o := range p.Options {
				parts = append(parts, o.Kind)
				parts = append(parts, o.Values...)
				e.clicks = append(e.clicks, o.Values...)
			}
			parts = append(parts, p.Title, "Price: "+p.Price, "Rating: N.A.", "Description", "Features", "Reviews", "Buy Now")
			e.clicks = append(e.clicks, "description", "features", "reviews", "buy now")
		case "sub":
			parts = append(parts, head(e), "Back to Search", "< Prev", find(e.asin).About)
			e.clicks = []string{"back to search", "< prev"}
		}
		e.obs = strings.Join(parts, " [SEP] ")
	}
	score := func(e *shopEnv) float64 {
		g := goals[e.goal]
		if !strings.EqualFold(e.asin, g.ASIN) {
			return 0
		}
		hit := 0
		for _, want := range g.Options {
			for _, v := range e.chosen {
				if v == want {
					hit++
					break
				}
			}
		}
		return float64(1+hit) / float64(1+len(g.Options))
	}
	envOf := func(w http.ResponseWriter, id int) *shopEnv {
		if id < 0 || id >= len(envs) {
			http.Error(w, "Internal Server Error", http.StatusInternalServerError) // a KeyError in the server
			return nil
		}
		return envs[id]
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, "ok") })
	mux.HandleFunc("GET /list_envs", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		ids := make([]int, len(envs))
		for i := range ids {
			ids[i] = i
		}
		writeJSON(w, ids)
	})
	mux.HandleFunc("POST /create", func(w http.ResponseWriter, r *http.Request) {
		if !s.gate(w, r) {
			return
		}
		mu.Lock()
		e := &shopEnv{page: "start"}
		show(e)
		envs = append(envs, e)
		id := len(envs) - 1
		mu.Unlock()
		s.mu.Lock()
		s.created++
		s.mu.Unlock()
		writeJSON(w, id)
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		if !s.gate(w, r) {
			return
		}
		var body struct {
			EnvIdx    *int `json:"env_idx"`
			SessionID *int `json:"session_id"`
		}
		if !decode(w, r, &body) || body.EnvIdx == nil {
			if body.EnvIdx == nil {
				w.WriteHeader(http.StatusUnprocessableEntity)
			}
			return
		}
		mu.Lock()
		defer mu.Unlock()
		e := envOf(w, *body.EnvIdx)
		if e == nil {
			return
		}
		g := 0
		if body.SessionID != nil {
			g = *body.SessionID
		}
		if g < 0 || g >= len(goals) {
			http.Error(w, "Internal Server Error", http.StatusInternalServerError) // goals[idx]: IndexError
			return
		}
		*e = shopEnv{goal: g, page: "start"}
		show(e)
		s.mu.Lock()
		s.resets = append(s.resets, g)
		s.mu.Unlock()
		writeJSON(w, []any{e.obs, nil})
	})
	mux.HandleFunc("POST /step", func(w http.ResponseWriter, r *http.Request) {
		if !s.gate(w, r) {
			return
		}
		var body struct {
			EnvIdx *int    `json:"env_idx"`
			Action *string `json:"action"`
		}
		if !decode(w, r, &body) {
			return
		}
		if body.EnvIdx == nil || body.Action == nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		e := envOf(w, *body.EnvIdx)
		if e == nil {
			return
		}
		s.record(*body.EnvIdx, *body.Action)
		name, arg, ok := parseAction(*body.Action)
		arg = strings.ToLower(arg)
		reward, done := 0.0, false
		switch {
		case ok && name == "search" && arg != "" && e.page != "done":
			e.page, e.keywords, e.asin, e.chosen = "results", arg, "", nil
		case ok && name == "click" && arg != "search" && slices.Contains(e.clicks, arg):
			switch {
			case arg == "back to search":
				e.page = "start"
			case arg == "< prev" && e.page == "sub":
				e.page = "item"
			case arg == "< prev" && e.page == "item":
				e.page = "results"
			case arg == "buy now":
				reward, done = score(e), true
				e.page = "done"
			case arg == "description" || arg == "features" || arg == "reviews":
				e.page = "sub"
			case e.page == "results" && find(arg) != nil:
				e.page, e.asin, e.chosen = "item", strings.ToUpper(arg), map[string]string{}
			case e.page == "item":
				for _, o := range find(e.asin).Options {
					if slices.Contains(o.Values, arg) {
						e.chosen[o.Kind] = arg
					}
				}
			}
		}
		if done {
			e.obs = fmt.Sprintf("Thank you for shopping with us! [SEP] Your code: [SEP] None [SEP] (Paste it in your MTurk interface.) [SEP] Purchased [SEP] asin [SEP] %s [SEP] Your score (min 0.0, max 1.0) [SEP] %s",
				e.asin, strconv.FormatFloat(reward, 'f', -1, 64))
			e.clicks = nil
		} else if e.page != "done" {
			show(e)
		}
		writeJSON(w, map[string]any{"state": e.obs, "reward": reward, "done": done, "info": nil})
	})
	query := func(path string, f func(e *shopEnv) any) {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			id, err := strconv.Atoi(r.URL.Query().Get("env_idx"))
			if err != nil {
				w.WriteHeader(http.StatusUnprocessableEntity)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if e := envOf(w, id); e != nil {
				writeJSON(w, f(e))
			}
		})
	}
	query("/observation", func(e *shopEnv) any { return e.obs })
	query("/available_actions", func(e *shopEnv) any {
		return map[string]any{"has_search_bar": e.page == "start", "clickables": e.clicks}
	})
	query("/instruction_text", func(e *shopEnv) any { return "Instruction: " + goals[e.goal].Instruction })
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// actionRE is parse_action's pattern in WebShop's engine.py, matched from the start.
var actionRE = regexp.MustCompile(`^(.+)\[(.+)\]`)

// parseAction reads an action as WebShop's parse_action does: the name and argument of
// the pattern (.+)\[(.+)\] matched at the start, neither trimmed.
func parseAction(a string) (name, arg string, ok bool) {
	m := actionRE.FindStringSubmatch(a)
	if m == nil {
		return a, "", false
	}
	return m[1], m[2], true
}

// ALFWorldPrompts is a prompt file in the shape of the paper's alfworld_3prompts.json
// (keys "<react|act>_<type>_<0|1>", each one solved game as text: the room and task,
// then "> action" lines with the observations below them), written here about an
// invented household, for tests that must not read the paper's file.
func ALFWorldPrompts() map[string]string {
	types := []struct{ name, object, place, verb string }{
		{"put", "cup", "shelf", ""},
		{"clean", "spoon", "drawer", "clean"},
		{"heat", "bun", "plate", "heat"},
		{"cool", "pear", "bowl", "cool"},
		{"examine", "coin", "lamp", "examine"},
		{"puttwo", "sock", "basket", ""},
	}
	out := map[string]string{}
	for _, t := range types {
		for n := range 2 {
			obj := fmt.Sprintf("%s %d", t.object, n+1)
			var b strings.Builder
			fmt.Fprintf(&b, "You are in the middle of a room. Looking quickly around you, you see a table %d, and a %s 1.\n", n+1, t.place)
			fmt.Fprintf(&b, "Your task is to: put a %s in %s.\n", t.object, t.place)
			react := b.String()
			act := b.String()
			step := func(action, obs string, thought bool) {
				line := "> " + action + "\n" + obs + "\n"
				react += line
				if !thought {
					act += line
				}
			}
			step(fmt.Sprintf("think: I need to find a %s and bring it to the %s.", t.object, t.place), "OK.", true)
			step(fmt.Sprintf("go to table %d", n+1), fmt.Sprintf("On the table %d, you see a %s.", n+1, obj), false)
			step(fmt.Sprintf("take %s from table %d", obj, n+1), fmt.Sprintf("You pick up the %s from the table %d.", obj, n+1), false)
			if t.verb != "" && t.verb != "examine" {
				step(fmt.Sprintf("%s %s with sinkbasin 1", t.verb, obj), fmt.Sprintf("You %s the %s using the sinkbasin 1.", t.verb, obj), false)
			}
			step(fmt.Sprintf("go to %s 1", t.place), fmt.Sprintf("On the %s 1, you see nothing.", t.place), false)
			step(fmt.Sprintf("put %s in/on %s 1", obj, t.place), fmt.Sprintf("You put the %s in/on the %s 1.", obj, t.place), false)
			out[fmt.Sprintf("react_%s_%d", t.name, n)] = react
			out[fmt.Sprintf("act_%s_%d", t.name, n)] = act
		}
	}
	return out
}

// WebShopPrompts is a prompt file in the shape of the WebShop notebook's prompts
// ("webshop_react_1", "webshop_act_1": one solved purchase in the notebook's layout),
// written here about an invented shop.
func WebShopPrompts() map[string]string {
	head := "Webshop \nInstruction:  \ni want a blue enamel mug for camping, and price lower than 20.00 dollars \n[Search]  \n\n"
	search := "Action: search[blue enamel camping mug]\nObservation: \n[Back to Search] \nPage 1 (Total results: 2) \n[Next >] \n[B0MUG00001] \nTrailhead Enamel Mug 350 ml \n$12.00 \n[B0MUG00002] \nPorcelain Tea Mug \n$9.00  \n\n"
	think1 := "Action: think[B0MUG00001 is an enamel camping mug under 20 dollars.]\nObservation: OK.\n\n"
	click := "Action: click[B0MUG00001]\nObservation: \n[Back to Search] \n[< Prev] \ncolor [blue][red]\nTrailhead Enamel Mug 350 ml \nPrice: $12.00 \nRating: N.A. \n[Description] \n[Features] \n[Reviews] \n[Buy Now]  \n\n"
	think2 := "Action: think[It has the color blue, which the instruction asks for.]\nObservation: OK.\n\n"
	option := "Action: click[blue]\nObservation: You have clicked blue. \n\n"
	buy := "Action: click[Buy Now]\n"
	return map[string]string{
		"webshop_react_1": head + search + think1 + click + think2 + option + buy,
		"webshop_act_1":   head + search + click + option + buy,
	}
}
