package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/filetest"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
)

// scriptedEnv answers each action with the next scripted observation, as wikienv.py
// words them, and ends the episode on a Finish.
type scriptedEnv struct {
	obs []string
	got []string // the actions it was given
}

func (e *scriptedEnv) Step(_ context.Context, raw string) (env.Result, error) {
	e.got = append(e.got, raw)
	a := env.ParseAction(raw)
	if a.Type == pipeline.ActionFinish {
		return env.Result{Action: a, Observation: "Episode finished, reward = 1\n", Done: true, Answer: a.Argument}, nil
	}
	o := e.obs[0]
	e.obs = e.obs[1:]
	return env.Result{Action: a, Observation: o}, nil
}

// The scripted episode: what the model writes, request by request, and what the
// environment answers, step by step. Step 3 has no action and is asked again; step 4's
// action is not of the paper's form and is answered as wikienv.py answers it.
var (
	notebookCompletions = []string{
		" I need to search Onhava.\nAction 1: Search[Onhava]",
		" I need the source of its river.\nAction 2: Lookup[source]\n",
		" I am not sure. \nPerhaps the river's own page says.",
		" Search[Vell]",
		" Try the hills \nAction 4: search[Gol hills] now",
		" The Vell rises in the Gol hills.\nAction 5: Finish[Gol hills]",
	}
	notebookObservations = []string{
		`Onhava is a port city.\n It lies on the Vell. `,
		"No more results.\n",
		"The Vell rises in the Gol hills. It is 210 km long.",
		"Invalid action: search[Gol hills] now",
	}
)

type notebookRequest struct{ prompt, stop string }

// notebookRequests replays the notebooks' webthink() over the script and returns every
// request it sends, in order. It follows the notebook's code line by line:
//
//	prompt += question + "\n"
//	for i in range(1, 8):
//	    thought_action = llm(prompt + f"Thought {i}:", stop=[f"\nObservation {i}:"])
//	    try: thought, action = thought_action.strip().split(f"\nAction {i}: ")
//	    except: thought = thought_action.strip().split('\n')[0]
//	            action = llm(prompt + f"Thought {i}: {thought}\nAction {i}:", stop=[f"\n"]).strip()
//	    obs, r, done, info = step(env, action[0].lower() + action[1:])
//	    obs = obs.replace('\\n', '')
//	    prompt += f"Thought {i}: {thought}\nAction {i}: {action}\nObservation {i}: {obs}\n"
//	    if done: break
func notebookRequests(base, question string, completions, observations []string) []notebookRequest {
	var reqs []notebookRequest
	p := base + question + "\n"
	next := 0
	for i := 1; i < 8; i++ {
		reqs = append(reqs, notebookRequest{p + fmt.Sprintf("Thought %d:", i), fmt.Sprintf("\nObservation %d:", i)})
		ta := completions[next]
		next++
		var thought, action string
		if parts := strings.Split(strings.TrimSpace(ta), fmt.Sprintf("\nAction %d: ", i)); len(parts) == 2 {
			thought, action = parts[0], parts[1]
		} else {
			thought = strings.Split(strings.TrimSpace(ta), "\n")[0]
			reqs = append(reqs, notebookRequest{p + fmt.Sprintf("Thought %d: %s\nAction %d:", i, thought, i), "\n"})
			action = strings.TrimSpace(completions[next])
			next++
		}
		if strings.HasPrefix(action, "Finish[") {
			break // done: nothing more is sent
		}
		obs := strings.ReplaceAll(observations[i-1], `\n`, "")
		p += fmt.Sprintf("Thought %d: %s\nAction %d: %s\nObservation %d: %s\n", i, thought, i, action, i, obs)
	}
	return reqs
}

// TestNotebookEpisode drives a scripted episode through the runner, the LLM actor and the
// real OpenAI adapter, and compares every request the server received, byte for byte,
// with what the notebooks send for the same completions and observations.
func TestNotebookEpisode(t *testing.T) {
	type tc struct{ name, file, key, task, question string }
	cases := []tc{
		{"own hotpotqa entry", "testdata/notebook_prompts.json", "think_hotpotqa", "hotpotqa", "Where does the river of Onhava rise?"},
		{"own fever entry", "testdata/notebook_prompts.json", "think_fever", "fever", "The river of Onhava rises in the Gol hills."},
		// The task file's text as it is: 504 of HotpotQA's dev questions end in a space.
		{"question with edge white space", "testdata/notebook_prompts.json", "think_hotpotqa", "hotpotqa", " Where does the river of Onhava rise? "},
		{"claim with edge white space", "testdata/notebook_prompts.json", "think_fever", "fever", "\tThe river of Onhava rises in the Gol hills.\u3000"},
	}
	if p, ok := shareddata.Lookup("react-prompts/prompts_naive.json"); ok {
		cases = append(cases, tc{"hotpotqa webthink_simple6", p, "webthink_simple6", "hotpotqa", "Where does the river of Onhava rise?"})
	} else {
		t.Log("shared data react-prompts/prompts_naive.json not present: its case is skipped")
	}
	if p, ok := shareddata.Lookup("react-prompts/fever.json"); ok {
		cases = append(cases, tc{"fever webthink_simple3", p, "webthink_simple3", "fever", "The river of Onhava rises in the Gol hills."})
	} else {
		t.Log("shared data react-prompts/fever.json not present: its case is skipped")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var entries map[string]string
			filetest.ReadJSON(t, c.file, &entries)
			// The HotpotQA notebook puts its instruction first (its bytes are checked
			// against the notebook's in package prompt); the FEVER notebook sends the entry.
			base := entries[c.key]
			if c.task == pipeline.TaskHotpotQA {
				base = prompt.NotebookInstruction + base
			}
			want := notebookRequests(base, prompt.Label(c.task)+": "+c.question, notebookCompletions, notebookObservations)

			var mu sync.Mutex
			n := 0
			srv := llmtest.NewServer(t, func(_ context.Context, _ llmtest.Req) llmtest.Reply {
				mu.Lock()
				defer mu.Unlock()
				n++
				return llmtest.Reply{Texts: []string{notebookCompletions[n-1]}}
			})
			set, err := prompt.Load(c.file+"#"+c.key, c.task, nil)
			if err != nil {
				t.Fatal(err)
			}
			g, l := testConfig("react", "completion")
			g.NumExemplars = len(set.Exemplars)
			l.Temperature, l.RequestMaxTokens = 0, 100
			e := &scriptedEnv{obs: append([]string(nil), notebookObservations...)}
			r, err := NewRunner(RunnerOptions{Config: g, LLM: l, Task: c.task, RunID: "test", Prompts: set,
				Client: openAI(t, srv, 0, nil), NewEnv: func(pipeline.Question) Environment { return e }})
			if err != nil {
				t.Fatal(err)
			}
			q := loadQuestion(t, c.task, c.question)
			ep := r.Episode(t.Context(), q, 0)
			if ep.Error != "" || !ep.Finished || ep.Prediction != "Gol hills" {
				t.Fatalf("episode: finished %v prediction %q error %q", ep.Finished, ep.Prediction, ep.Error)
			}
			log := srv.Log()
			if len(log) != len(want) {
				t.Fatalf("requests: got %d, want %d", len(log), len(want))
			}
			for i, w := range want {
				got := log[i].Req
				if got.Prompt != w.prompt {
					t.Errorf("request %d: %s", i+1, diffAt(got.Prompt, w.prompt))
				}
				if len(got.Stop) != 1 || got.Stop[0] != w.stop {
					t.Errorf("request %d stop: got %q, want [%q]", i+1, got.Stop, w.stop)
				}
				if got.Temperature != 0 || got.MaxTokens != 100 {
					t.Errorf("request %d: temperature %v max_tokens %d, want 0 and 100", i+1, got.Temperature, got.MaxTokens)
				}
			}
			if ep.BadCalls != 1 || ep.LLMCalls != len(want) {
				t.Errorf("bad calls %d, calls %d, want 1 and %d", ep.BadCalls, ep.LLMCalls, len(want))
			}
			if got := ep.Steps[2].Thought; got != "I am not sure. " {
				t.Errorf("re-asked step's thought: got %q, want the completion's first line", got)
			}
		})
	}
}

// loadQuestion writes question to a task file of task's format (HotpotQA's simplified
// list, FEVER's JSON lines) and reads it back through the dataset reader, as a run reads
// its task file.
func loadQuestion(t *testing.T, task, question string) pipeline.Question {
	t.Helper()
	var rec any = []map[string]string{{"question": question, "answer": "Gol hills", "type": "bridge"}}
	if task == pipeline.TaskFEVER {
		rec = map[string]any{"id": 1, "label": "SUPPORTS", "claim": question}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	qs, _, err := dataset.Load(path, dataset.Options{Task: task})
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Question != question {
		t.Fatalf("task file read back as %+v, want the question %q as written", qs, question)
	}
	return qs[0]
}

// diffAt describes where two prompts part.
func diffAt(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(i-60, 0)
	return fmt.Sprintf("first difference at byte %d of %d/%d:\n got …%q\nwant …%q", i, len(got), len(want),
		got[lo:min(i+60, len(got))], want[lo:min(i+60, len(want))])
}

// loopEnv never finds anything, so a ReAct episode loops and the hybrids fall back.
type loopEnv struct{}

func (loopEnv) Step(_ context.Context, raw string) (env.Result, error) {
	a := env.ParseAction(raw)
	if a.Type == pipeline.ActionFinish {
		return env.Result{Action: a, Observation: "Episode finished, reward = 0\n", Done: true, Answer: a.Argument}, nil
	}
	return env.Result{Action: a, Observation: "Could not find Nowhere. Similar: []."}, nil
}

// With generate.cot_exemplars, every CoT prompt is that file's entry verbatim (its own
// instruction, none here: never the ReAct tool instruction), and the ReAct prompts of the
// hybrids stay the ReAct file's.
func TestCoTExemplars(t *testing.T) {
	const file = "testdata/notebook_prompts.json"
	var entries map[string]string
	filetest.ReadJSON(t, file, &entries)
	react, err := prompt.Load(file+"#think_hotpotqa", "hotpotqa", nil)
	if err != nil {
		t.Fatal(err)
	}
	cot, err := prompt.Load(file+"#cot_hotpotqa", "hotpotqa", nil)
	if err != nil {
		t.Fatal(err)
	}
	const question = "Where does the river of Onhava rise?"
	wantCoT := entries["cot_hotpotqa"] + "Question: " + question + "\nThought:"
	reactHead := prompt.NotebookInstruction + entries["think_hotpotqa"] + "Question: " + question + "\n"
	tests := []struct {
		method      string
		cot, agents bool // whether CoT and ReAct requests are sent
	}{
		{"cot", true, false},
		{"cot-sc", true, false},
		{"react-cot-sc", true, true}, // ReAct loops, CoT-SC answers
		{"cot-sc-react", true, true}, // the votes split, ReAct runs
	}
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			var mu sync.Mutex
			sample := 0
			srv := llmtest.NewServer(t, func(_ context.Context, r llmtest.Req) llmtest.Reply {
				if strings.HasSuffix(r.Prompt, "\nThought:") {
					mu.Lock()
					defer mu.Unlock()
					var texts []string
					for range max(r.N, 1) {
						sample++
						texts = append(texts, fmt.Sprintf(" It is a guess.\nAnswer: hill %d", sample))
					}
					return llmtest.Reply{Texts: texts}
				}
				return llmtest.Reply{Texts: []string{" I must search.\nAction 1: Search[Nowhere]"}}
			})
			g, l := testConfig(tc.method, "completion")
			r, err := NewRunner(RunnerOptions{Config: g, LLM: l, Task: "hotpotqa", RunID: "test", Prompts: react, CoTPrompts: &cot,
				Client: openAI(t, srv, 0, nil), NewEnv: func(pipeline.Question) Environment { return loopEnv{} }})
			if err != nil {
				t.Fatal(err)
			}
			ep := r.Episode(t.Context(), pipeline.Question{ID: "q1", Task: "hotpotqa", Question: question, Answer: "Gol hills"}, 0)
			if ep.Error != "" {
				t.Fatalf("episode error: %s", ep.Error)
			}
			var sawCoT, sawReAct bool
			for i, rec := range srv.Log() {
				p := rec.Req.Prompt
				switch {
				case strings.HasSuffix(p, "\nThought:"):
					sawCoT = true
					if p != wantCoT {
						t.Errorf("request %d (CoT): %s", i+1, diffAt(p, wantCoT))
					}
				default:
					sawReAct = true
					if !strings.HasPrefix(p, reactHead) {
						t.Errorf("request %d (ReAct): %s", i+1, diffAt(p[:min(len(p), len(reactHead))], reactHead))
					}
				}
			}
			if want := map[string]string{"react-cot-sc": "cot-sc", "cot-sc-react": "react"}[tc.method]; ep.Branch != want {
				t.Errorf("branch: got %q, want %q", ep.Branch, want)
			}
			if sawCoT != tc.cot || sawReAct != tc.agents {
				t.Errorf("CoT requests %v, ReAct requests %v, want %v and %v", sawCoT, sawReAct, tc.cot, tc.agents)
			}
		})
	}
}
