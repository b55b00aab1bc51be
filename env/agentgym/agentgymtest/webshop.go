package agentgymtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

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

// webShop is the state of a fake agentenv-webshop: its shop and the environments
// created, under mu.
type webShop struct {
	s        *Server
	products []Product
	goals    []Goal
	mu       sync.Mutex
	envs     []*shopEnv
}

// NewWebShop serves products and goals as agentenv-webshop serves its text
// environment: POST /create (a bare number), POST /reset {env_idx, session_id}
// ([observation, null]), POST /step {env_idx, action} ({state, reward, done, info}),
// GET /observation and GET /available_actions with ?env_idx=. Pages are WebShop's simple
// text mode, texts joined by " [SEP] "; an action names its argument in any case, and a
// click on what the page does not show changes nothing, as WebAgentTextEnv.step does.
func NewWebShop(t testing.TB, products []Product, goals []Goal) *Server {
	t.Helper()
	ws := &webShop{s: &Server{}, products: products, goals: goals}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, "ok") })
	mux.HandleFunc("GET /list_envs", func(w http.ResponseWriter, r *http.Request) {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		ids := make([]int, len(ws.envs))
		for i := range ids {
			ids[i] = i
		}
		writeJSON(w, ids)
	})
	mux.HandleFunc("POST /create", ws.create)
	mux.HandleFunc("POST /reset", ws.reset)
	mux.HandleFunc("POST /step", ws.step)
	ws.query(mux, "/observation", func(e *shopEnv) any { return e.obs })
	ws.query(mux, "/available_actions", func(e *shopEnv) any {
		return map[string]any{"has_search_bar": e.page == "start", "clickables": e.clicks}
	})
	ws.query(mux, "/instruction_text", func(e *shopEnv) any { return "Instruction: " + goals[e.goal].Instruction })
	ws.s.Server = httptest.NewServer(mux)
	t.Cleanup(ws.s.Close)
	return ws.s
}

func (ws *webShop) find(asin string) *Product {
	for i := range ws.products {
		if strings.EqualFold(ws.products[i].ASIN, asin) {
			return &ws.products[i]
		}
	}
	return nil
}

func (ws *webShop) head(e *shopEnv) string {
	return "Instruction: [SEP] " + ws.goals[e.goal].Instruction
}

// show sets the observation and clickables of the page e is on.
func (ws *webShop) show(e *shopEnv) {
	var parts []string
	switch e.page {
	case "start":
		e.obs = "WebShop [SEP] Instruction: [SEP] " + ws.goals[e.goal].Instruction + " [SEP] Search"
		e.clicks = []string{"search"}
		return
	case "results":
		parts = ws.results(e)
	case "item":
		parts = ws.item(e)
	case "sub":
		parts = append(parts, ws.head(e), "Back to Search", "< Prev", ws.find(e.asin).About)
		e.clicks = []string{"back to search", "< prev"}
	}
	e.obs = strings.Join(parts, " [SEP] ")
}

// results is the results page of e's keywords: the products whose title holds one.
func (ws *webShop) results(e *shopEnv) []string {
	var hits []Product
	for _, p := range ws.products {
		title := strings.ToLower(p.Title)
		for _, kw := range strings.Fields(e.keywords) {
			if strings.Contains(title, kw) {
				hits = append(hits, p)
				break
			}
		}
	}
	parts := []string{ws.head(e), "Back to Search", fmt.Sprintf("Page 1 (Total results: %d)", len(hits)), "Next >"}
	e.clicks = []string{"back to search", "next >"}
	for _, p := range hits {
		parts = append(parts, p.ASIN, p.Title, p.Price)
		e.clicks = append(e.clicks, strings.ToLower(p.ASIN))
	}
	return parts
}

// item is the page of e's product, with its options.
func (ws *webShop) item(e *shopEnv) []string {
	p := ws.find(e.asin)
	parts := []string{ws.head(e), "Back to Search", "< Prev"}
	e.clicks = []string{"back to search", "< prev"}
	for _, o := range p.Options {
		parts = append(parts, o.Kind)
		parts = append(parts, o.Values...)
		e.clicks = append(e.clicks, o.Values...)
	}
	parts = append(parts, p.Title, "Price: "+p.Price, "Rating: N.A.", "Description", "Features", "Reviews", "Buy Now")
	e.clicks = append(e.clicks, "description", "features", "reviews", "buy now")
	return parts
}

// score is the reward of e's purchase: 0 for another product, else the share of the
// goal's options chosen, counting the product as one.
func (ws *webShop) score(e *shopEnv) float64 {
	g := ws.goals[e.goal]
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

// envOf returns environment id, or answers 500 as the server's KeyError does. The
// caller holds ws.mu.
func (ws *webShop) envOf(w http.ResponseWriter, id int) *shopEnv {
	if id < 0 || id >= len(ws.envs) {
		http.Error(w, "Internal Server Error", http.StatusInternalServerError) // a KeyError in the server
		return nil
	}
	return ws.envs[id]
}

func (ws *webShop) create(w http.ResponseWriter, r *http.Request) {
	if !ws.s.gate(w, r) {
		return
	}
	ws.mu.Lock()
	e := &shopEnv{page: "start"}
	ws.show(e)
	ws.envs = append(ws.envs, e)
	id := len(ws.envs) - 1
	ws.mu.Unlock()
	ws.s.noteCreated()
	writeJSON(w, id)
}

func (ws *webShop) reset(w http.ResponseWriter, r *http.Request) {
	if !ws.s.gate(w, r) {
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
	ws.mu.Lock()
	defer ws.mu.Unlock()
	e := ws.envOf(w, *body.EnvIdx)
	if e == nil {
		return
	}
	g := 0
	if body.SessionID != nil {
		g = *body.SessionID
	}
	if g < 0 || g >= len(ws.goals) {
		http.Error(w, "Internal Server Error", http.StatusInternalServerError) // goals[idx]: IndexError
		return
	}
	*e = shopEnv{goal: g, page: "start"}
	ws.show(e)
	ws.s.noteReset(g)
	writeJSON(w, []any{e.obs, nil})
}

func (ws *webShop) step(w http.ResponseWriter, r *http.Request) {
	var body struct {
		EnvIdx *int    `json:"env_idx"`
		Action *string `json:"action"`
	}
	if !ws.s.request(w, r, &body) {
		return
	}
	if body.EnvIdx == nil || body.Action == nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	e := ws.envOf(w, *body.EnvIdx)
	if e == nil {
		return
	}
	ws.s.record(*body.EnvIdx, *body.Action)
	name, arg, ok := parseAction(*body.Action)
	arg = strings.ToLower(arg)
	reward, done := 0.0, false
	switch {
	case ok && name == "search" && arg != "" && e.page != "done":
		e.page, e.keywords, e.asin, e.chosen = "results", arg, "", nil
	case ok && name == "click" && arg != "search" && slices.Contains(e.clicks, arg):
		reward, done = ws.click(e, arg)
	}
	if done {
		e.obs = fmt.Sprintf("Thank you for shopping with us! [SEP] Your code: [SEP] None [SEP] (Paste it in your MTurk interface.) [SEP] Purchased [SEP] asin [SEP] %s [SEP] Your score (min 0.0, max 1.0) [SEP] %s",
			e.asin, strconv.FormatFloat(reward, 'f', -1, 64))
		e.clicks = nil
	} else if e.page != "done" {
		ws.show(e)
	}
	writeJSON(w, map[string]any{"state": e.obs, "reward": reward, "done": done, "info": nil})
}

// click follows a click on arg, a clickable of e's page, and returns the purchase's
// reward and whether it ended the episode.
func (ws *webShop) click(e *shopEnv, arg string) (reward float64, done bool) {
	switch {
	case arg == "back to search":
		e.page = "start"
	case arg == "< prev" && e.page == "sub":
		e.page = "item"
	case arg == "< prev" && e.page == "item":
		e.page = "results"
	case arg == "buy now":
		e.page = "done"
		return ws.score(e), true
	case arg == "description" || arg == "features" || arg == "reviews":
		e.page = "sub"
	case e.page == "results" && ws.find(arg) != nil:
		e.page, e.asin, e.chosen = "item", strings.ToUpper(arg), map[string]string{}
	case e.page == "item":
		for _, o := range ws.find(e.asin).Options {
			if slices.Contains(o.Values, arg) {
				e.chosen[o.Kind] = arg
			}
		}
	}
	return 0, false
}

// query serves GET path?env_idx= with what f reads from the environment.
func (ws *webShop) query(mux *http.ServeMux, path string, f func(e *shopEnv) any) {
	mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(r.URL.Query().Get("env_idx"))
		if err != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if e := ws.envOf(w, id); e != nil {
			writeJSON(w, f(e))
		}
	})
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
