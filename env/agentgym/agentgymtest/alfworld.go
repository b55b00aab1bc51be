package agentgymtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
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

// alfEnv is one ALFWorld environment: the game reset into it and how far it is.
type alfEnv struct {
	game       int
	next       int
	done       bool
	reset      bool
	observe    string
	admissible []string
}

// alfWorld is the state of a fake agentenv-alfworld: its games and the environments
// created, under mu.
type alfWorld struct {
	s     *Server
	games []Game
	mu    sync.Mutex
	envs  map[int]*alfEnv
}

// NewALFWorld serves games as agentenv-alfworld serves its games list: POST /create,
// POST /reset {id, game, world_type}, POST /step {id, action}, GET /observation,
// GET /available_actions and GET /detail with ?id=.
func NewALFWorld(t testing.TB, games []Game) *Server {
	t.Helper()
	a := &alfWorld{s: &Server{}, games: games, envs: map[int]*alfEnv{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, "This is environment AlfWorld.")
	})
	mux.HandleFunc("POST /create", a.create)
	mux.HandleFunc("POST /reset", a.reset)
	mux.HandleFunc("POST /step", a.step)
	a.get(mux, "/observation", func(e *alfEnv) any { return e.observe })
	a.get(mux, "/available_actions", func(e *alfEnv) any { return e.admissible })
	a.get(mux, "/detail", func(e *alfEnv) any {
		return map[string]any{"world_type": "Text", "game": e.game, "observation": e.observe,
			"available_actions": e.admissible, "done": e.done, "reward": 0, "deleted": false}
	})
	a.s.Server = httptest.NewServer(mux)
	t.Cleanup(a.s.Close)
	return a.s
}

// admissible is what ALFWorld admits after the next moves of game g: the two commands
// always admitted and the solution's next action.
func admissible(g Game, next int) []string {
	out := []string{"inventory", "look"}
	if next < len(g.Solution) {
		out = append(out, g.Solution[next].Action)
	}
	return out
}

// check returns environment id, or the server's message for an id it does not know or
// (when not resetting) a finished task. The caller holds a.mu.
func (a *alfWorld) check(id int, isReset bool) (*alfEnv, string) {
	e, ok := a.envs[id]
	if !ok {
		return nil, fmt.Sprintf("The id %d is not valid.", id)
	}
	if !isReset && e.done {
		return nil, fmt.Sprintf("The task with environment %d has finished.", id)
	}
	return e, ""
}

func (a *alfWorld) create(w http.ResponseWriter, r *http.Request) {
	if !a.s.gate(w, r) {
		return
	}
	a.mu.Lock()
	id := len(a.envs)
	a.envs[id] = &alfEnv{}
	a.mu.Unlock()
	a.s.noteCreated()
	writeJSON(w, map[string]any{"id": id})
}

func (a *alfWorld) reset(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID        *int    `json:"id"`
		Game      *int    `json:"game"`
		WorldType *string `json:"world_type"`
	}
	if !a.s.request(w, r, &body) {
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
	a.mu.Lock()
	defer a.mu.Unlock()
	e, msg := a.check(*body.ID, true)
	if msg != "" {
		writeJSON(w, map[string]any{"error": msg})
		return
	}
	if *body.Game < 0 || *body.Game >= len(a.games) {
		writeJSON(w, map[string]any{"error": "list index out of range"})
		return
	}
	g := a.games[*body.Game]
	*e = alfEnv{game: *body.Game, reset: true, observe: g.Observation, admissible: admissible(g, 0)}
	a.s.noteReset(*body.Game)
	writeJSON(w, map[string]any{"id": *body.ID, "observation": g.Observation, "available_actions": e.admissible, "task_type": g.TaskType})
}

func (a *alfWorld) step(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID     *int    `json:"id"`
		Action *string `json:"action"`
	}
	if !a.s.request(w, r, &body) {
		return
	}
	if body.ID == nil || body.Action == nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		writeJSON(w, map[string]any{"detail": "id and action are required"})
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e, msg := a.check(*body.ID, false)
	if msg == "" && !e.reset {
		msg = "'NoneType' object has no attribute 'step'" // stepped before any reset
	}
	if msg != "" {
		writeJSON(w, map[string]any{"error": msg})
		return
	}
	a.s.record(*body.ID, *body.Action)
	g := a.games[e.game]
	obs, won := "Nothing happens.", false
	if e.next < len(g.Solution) && *body.Action == g.Solution[e.next].Action {
		obs = g.Solution[e.next].Observation
		e.next++
		won = e.next == len(g.Solution)
	}
	e.done, e.observe, e.admissible = won, obs, admissible(g, e.next)
	writeJSON(w, map[string]any{"observation": obs, "reward": map[bool]float64{true: 1, false: 0}[won],
		"available_actions": e.admissible, "done": won})
}

// get serves GET path?id= with what f reads from the environment.
func (a *alfWorld) get(mux *http.ServeMux, path string, f func(e *alfEnv) any) {
	mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(r.URL.Query().Get("id"))
		if err != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			writeJSON(w, map[string]any{"detail": "id must be an integer"})
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		e, msg := a.check(id, false)
		if msg != "" {
			writeJSON(w, map[string]any{"error": msg})
			return
		}
		writeJSON(w, f(e))
	})
}
