package envserver_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envserver"
	"github.com/reactgen/reactgen/env/envtest"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/pipeline"
)

// testQuestions are questions about envtest.Pages(), written for these tests.
var testQuestions = []pipeline.Question{
	{ID: "lake", Question: "Which lake did the poet Orla Vint live beside?", Answer: "Marrow Lake"},
	{ID: "birds", Question: "Which birds nest in the reed beds of Marrow Lake?", Answer: "grey herons"},
	{ID: "ferry", Question: "Since when has a cable ferry crossed Marrow Lake?", Answer: "1888"},
}

var feverQuestions = []pipeline.Question{
	{ID: "101", Question: "Orla Vint is a poet from Karsa.", Answer: "SUPPORTS"},
	{ID: "102", Question: "Marrow Lake is in the south of Karsa.", Answer: "REFUTES"},
}

// envScripts are the actions of the environment's tests (env/*_test.go and
// env/envtest), played as episodes: hits, title variants, misses, disambiguation,
// lookups walking and restarting, invalid and malformed actions in both action modes,
// and Finish with answers and FEVER labels in their spellings.
var envScripts = [][]string{
	{"Search[Orla Vint]", "Lookup[she]", "Lookup[she]", "Lookup[she]", "Finish[Marrow Lake]"},
	{"Search[Marrow Lake]", "Lookup[heron]", "Lookup[heron]", "Lookup[heron]", "Lookup[heron]", "Lookup[HERON]", "Lookup[pelican]", "Finish[grey herons]"},
	{"Search[ orla_vint ]", "Search[marrow_lake]", "Lookup[ferry]", "Finish[1888]"},
	{"Search[Ostrow Tower]", "Lookup[great bell]", "Lookup[great bell]", "Lookup[born]", "Finish[Orla]"},
	{"Search[Vint]", "Search[Harrow]", "Lookup[band]", "Search[Vint River]", "Search[Vint_River]", "Finish[]"},
	{"Search[Qzxvw Plkjh]", "Search[heron Marrow]", "Lookup[x]", "Search[Qzxvw Plkjh ", "Finish[maybe]"},
	{"Lookup[heron]", "Search[Kestrel Bay]", "Search[Brannock's Ferry]", "Search[Zélie Marché]", "Lookup[Marché]", "Finish[yes] Observation 3: nothing"},
	{"search[Orla Vint]", "Search Orla Vint", "Search [Orla Vint]", "search [Orla Vint]", "Search[Orla Vint", "search[Orla Vint] and then more", "Search[Orla Vint] and then more", "Finish[  Orla Vint ]"},
	{"Search[Foo [bar]]", "Search[Foo [bar]] tail", "Search[a]]", "Search[]", "Search[", "Lookup[", "Lookup[]", "Lookup[  ]", "jump[x]", "finish"},
	{"Search[Vint]\n", "Search[Vint River]\r", "Search[Orla Vint]  \n", "Lookup[Morrow]", "\n\nFinish[the orla vint.]"},
	{"Search[Ada]", "search[ada]", "Search[Ada Lovelace]", "finish[the orla vint.]"},
	{"Finish[1,200 km"}, {"Finish[1,200 km]"},
	{"Finish[SUPPORTS]"}, {"Finish[supports!]"}, {"Finish['SUPPORTS']"}, {"finish[supports]"}, {"Finish[ refutes ]"},
	{"Finish[Refutes.]"}, {"Finish[NOT ENOUGH INFORMATION]"}, {"Finish[Not_Enough_Info]"}, {"Finish[not enough info]"},
}

// modes are the environment's observation and action modes.
var modes = []env.Options{
	{Observations: env.ObservationsPaper, Actions: env.ActionsPaper},
	{Observations: env.ObservationsPaper, Actions: env.ActionsLenient},
	{Observations: env.ObservationsRules, Actions: env.ActionsPaper, MaxObservationChars: 2000},
	{Observations: env.ObservationsRules, Actions: env.ActionsLenient, MaxObservationChars: 60},
}

func newServer(t testing.TB, o envserver.Options) *envserver.Server {
	t.Helper()
	srv, err := envserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// reference plays script as `reactgen env --json` does (env.ServeJSON on a fresh Wiki
// with the question's gold answer) and returns its lines.
func reference(t testing.TB, c env.Corpus, opts env.Options, gold string, script []string) []env.ServeLine {
	t.Helper()
	var in strings.Builder
	for _, a := range script {
		b, _ := json.Marshal(a)
		in.Write(b)
		in.WriteByte('\n')
	}
	opts.Gold = gold
	var out strings.Builder
	if err := env.ServeJSON(t.Context(), env.New(c, opts), strings.NewReader(in.String()), &out); err != nil {
		t.Fatalf("reactgen env: %v", err)
	}
	var lines []env.ServeLine
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l env.ServeLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	return lines
}

// compareEpisode plays script over /ws on question q and checks every observation,
// done and the Finish reward against `reactgen env`.
func compareEpisode(t *testing.T, ws *wsClient, c env.Corpus, opts env.Options, task string, q pipeline.Question, script []string) {
	t.Helper()
	opts.Task = task
	want := reference(t, c, opts, q.Answer, script)
	r := ws.reset(t, map[string]any{"question_id": q.ID})
	if wantText := map[bool]string{true: "Claim: ", false: "Question: "}[task == pipeline.TaskFEVER] + q.Question; r.Observation.Text != wantText || r.Done || r.Reward != nil {
		t.Fatalf("reset %s: got %+v, want text %q, not done, reward null", q.ID, r, wantText)
	}
	for i, w := range want {
		got := ws.step(t, script[i])
		if got.Observation.Text != w.Observation || got.Done != w.Done || got.Observation.Action != w.Action {
			t.Errorf("%s step %d %q:\n got %q done=%v action=%q\nwant %q done=%v action=%q", q.ID, i+1, script[i],
				got.Observation.Text, got.Done, got.Observation.Action, w.Observation, w.Done, w.Action)
		}
		if got.Observation.Step != i+1 || got.Observation.QuestionID != q.ID {
			t.Errorf("%s step %d: step %d question %q", q.ID, i+1, got.Observation.Step, got.Observation.QuestionID)
		}
		if !w.Done {
			if got.Reward == nil || *got.Reward != 0 || got.Observation.Answer != nil || got.Observation.F1 != nil {
				t.Errorf("%s step %d: reward %v answer %v f1 %v, want 0, null, null before Finish", q.ID, i+1, got.Reward, got.Observation.Answer, got.Observation.F1)
			}
			continue
		}
		// The paper's observation states the reward; the reply's reward is the same score.
		wantReward := 0.0
		if ok, _, _ := scoreOf(task, got, q); ok {
			wantReward = 1
		}
		if got.Reward == nil || *got.Reward != wantReward || got.Observation.Answer == nil || *got.Observation.Answer != w.Answer || got.Observation.F1 == nil {
			t.Errorf("%s Finish: reward %v answer %v f1 %v, want reward %v answer %q and an F1", q.ID, got.Reward, got.Observation.Answer, got.Observation.F1, wantReward, w.Answer)
		}
		if opts.Observations == env.ObservationsPaper && w.Observation != fmt.Sprintf("Episode finished, reward = %d\n", int(wantReward)) {
			t.Errorf("%s Finish: the paper observation %q disagrees with reward %v", q.ID, w.Observation, wantReward)
		}
	}
}

// scoreOf scores the Finish reply against q independently of the server: exact match
// after the official normalisation (wrappers.py), for FEVER against the label.
func scoreOf(task string, r stepResult, q pipeline.Question) (bool, float64, float64) {
	norm := func(s string) string {
		s = strings.ToLower(s)
		s = strings.Map(func(r rune) rune {
			if strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", r) {
				return -1
			}
			return r
		}, s)
		var words []string
		for _, w := range strings.Fields(s) {
			if w != "a" && w != "an" && w != "the" {
				words = append(words, w)
			}
		}
		return strings.Join(words, " ")
	}
	return norm(*r.Observation.Answer) == norm(q.Answer), 0, 0
}

func TestWSObservationsAreReactgenEnvs(t *testing.T) {
	c := envtest.NewMemory(envtest.Pages())
	for _, task := range []string{pipeline.TaskHotpotQA, pipeline.TaskFEVER} {
		qs := map[string][]pipeline.Question{pipeline.TaskHotpotQA: testQuestions, pipeline.TaskFEVER: feverQuestions}[task]
		for _, m := range modes {
			t.Run(task+"/"+m.Observations+"/"+m.Actions, func(t *testing.T) {
				opts := m
				opts.Task = task
				srv := newServer(t, envserver.Options{Corpus: c, Env: opts, Questions: qs, TaskPath: "test"})
				base, _ := serve(t, srv)
				ws := dialWS(t, base) // one session plays every episode, as a trainer's would
				for i, script := range envScripts {
					compareEpisode(t, ws, c, m, task, qs[i%len(qs)], script)
				}
			})
		}
	}
}

func TestHTTPStepIsReactgenEnvsFirstStep(t *testing.T) {
	c := envtest.NewMemory(envtest.Pages())
	for _, m := range modes {
		t.Run(m.Observations+"/"+m.Actions, func(t *testing.T) {
			opts := m
			opts.Task = pipeline.TaskHotpotQA
			base, _ := serve(t, newServer(t, envserver.Options{Corpus: c, Env: opts, Questions: testQuestions, TaskPath: "test"}))
			h := httpClient{base}
			for _, script := range envScripts {
				for _, a := range script {
					// Each HTTP step is a fresh environment: `reactgen env` given one action.
					want := reference(t, c, opts, testQuestions[0].Answer, []string{a})
					got := h.step(t, map[string]any{"action": map[string]any{"action": a}, "question_id": testQuestions[0].ID})
					if got.Observation.Text != want[0].Observation || got.Done != want[0].Done {
						t.Errorf("POST /step %q:\n got %q done=%v\nwant %q done=%v", a, got.Observation.Text, got.Done, want[0].Observation, want[0].Done)
					}
				}
			}
		})
	}
}

// tempDirs are the indexes the tests and benchmarks share, removed by TestMain.
var tempDirs []string

func TestMain(m *testing.M) {
	if job := os.Getenv(benchClientEnv); job != "" {
		os.Exit(benchClient(job)) // the client process of BenchmarkStepsOverWSClientApart
	}
	code := m.Run()
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

var (
	demoOnce  sync.Once
	demoIndex *index.Index
	demoErr   error
)

// openDemo builds the demo world's index (data/demo) once for the test binary.
func openDemo(t testing.TB) *index.Index {
	t.Helper()
	demoOnce.Do(func() {
		dir, err := os.MkdirTemp("", "envserver-demo-*")
		if err != nil {
			demoErr = err
			return
		}
		tempDirs = append(tempDirs, dir)
		ixDir := filepath.Join(dir, "index")
		if _, demoErr = index.Build(t.Context(), ixDir, []string{"../../data/demo/corpus.jsonl"}, index.BuildOptions{}); demoErr != nil {
			return
		}
		demoIndex, demoErr = index.Open(ixDir)
	})
	if demoErr != nil {
		t.Fatalf("demo index: %v", demoErr)
	}
	return demoIndex
}

func loadDemo(t testing.TB, task string) []pipeline.Question {
	t.Helper()
	path := map[string]string{pipeline.TaskHotpotQA: "../../data/demo/hotpotqa.json", pipeline.TaskFEVER: "../../data/demo/fever.jsonl"}[task]
	qs, _, err := dataset.Load(path, dataset.Options{Task: task, Format: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

// demoScript walks to q's evidence as the expert would: each supporting page, a lookup
// of the supporting sentence's last word twice, a miss, then Finish with the gold
// answer (every other question) or a wrong one.
func demoScript(q pipeline.Question, i int) []string {
	var s []string
	for _, f := range q.SupportingFacts {
		s = append(s, "Search["+f.Title+"]")
		for _, p := range q.Context {
			if p.Title == f.Title && f.Sentence < len(p.Sentences) {
				words := strings.Fields(strings.Trim(p.Sentences[f.Sentence], "."))
				s = append(s, "Lookup["+words[len(words)-1]+"]", "Lookup["+words[len(words)-1]+"]")
			}
		}
	}
	s = append(s, "Search[Nowhere At All "+q.ID[:4]+"]")
	if i%2 == 0 {
		return append(s, "Finish["+q.Answer+"]")
	}
	return append(s, "Finish[not "+q.Answer+"]")
}

func TestDemoWorldOverWS(t *testing.T) {
	ix := openDemo(t)
	for _, task := range []string{pipeline.TaskHotpotQA, pipeline.TaskFEVER} {
		t.Run(task, func(t *testing.T) {
			qs := loadDemo(t, task)
			opts := env.Options{Task: task, Observations: env.ObservationsPaper, Actions: env.ActionsPaper}
			base, _ := serve(t, newServer(t, envserver.Options{Corpus: ix, Retriever: ix, Env: opts, Questions: qs, TaskPath: "demo"}))
			ws := dialWS(t, base)
			n := 0
			for i, q := range qs {
				script := demoScript(q, i)
				if task == pipeline.TaskFEVER {
					script = []string{"Search[" + strings.Fields(q.Question)[0] + "]", "Finish[" + map[bool]string{true: q.Answer, false: "NOT ENOUGH INFO"}[i%2 == 0] + "]"}
				}
				compareEpisode(t, ws, ix, opts, task, q, script)
				n += len(script)
			}
			t.Logf("%d episodes, %d actions", len(qs), n)
		})
	}
}
