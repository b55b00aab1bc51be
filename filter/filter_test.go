package filter

import (
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
)

type result struct {
	kept     []string
	rejected map[string]string // id -> codes
	stats    Stats
}

func run(t *testing.T, cfg pipeline.FilterConfig, task string, opts Options, eps []pipeline.Episode) result {
	t.Helper()
	c, err := New(cfg, task, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	res := result{rejected: map[string]string{}}
	res.stats, err = c.Run(t.Context(), episodetest.Seq(eps),
		func(ep pipeline.Episode) error { res.kept = append(res.kept, ep.ID); return nil },
		func(r pipeline.Rejected) error { res.rejected[r.ID] = r.Codes(); return nil })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestPerEpisodeRules(t *testing.T) {
	good := episodetest.Episode("good", "q", "Search[Aldbrook]", "Finish[Aldbrook]")
	mod := func(f func(*pipeline.Episode)) pipeline.Episode {
		ep := episodetest.Episode("bad", "q", "Search[Aldbrook]", "Finish[Aldbrook]")
		ep.Steps = append([]pipeline.Step(nil), ep.Steps...)
		f(&ep)
		return ep
	}
	game := func(reward float64) pipeline.Episode {
		return mod(func(e *pipeline.Episode) {
			e.Task, e.Answer, e.Prediction, e.Reward, e.Correct = pipeline.TaskWebShop, "", "click[buy now]", &reward, reward == 1
		})
	}
	tests := []struct {
		name string
		cfg  pipeline.FilterConfig
		task string
		ep   pipeline.Episode
		want string // codes, "" for kept
	}{
		{"correct keeps", pipeline.FilterConfig{Rules: []string{"correct"}}, "hotpotqa", good, ""},
		{"correct rescored ignores recorded flag", pipeline.FilterConfig{Rules: []string{"correct"}}, "hotpotqa",
			mod(func(e *pipeline.Episode) { e.Prediction = "Elsewhere"; e.Correct = true }), "correct/wrong_answer"},
		{"correct normalises", pipeline.FilterConfig{Rules: []string{"correct"}}, "hotpotqa",
			mod(func(e *pipeline.Episode) { e.Prediction = "the aldbrook." }), ""},
		{"correct min_f1 keeps partial", pipeline.FilterConfig{Rules: []string{"correct"}, MinF1: 0.6}, "hotpotqa",
			mod(func(e *pipeline.Episode) { e.Prediction = "Aldbrook river" }), ""},
		{"correct min_f1 rejects low", pipeline.FilterConfig{Rules: []string{"correct"}, MinF1: 0.9}, "hotpotqa",
			mod(func(e *pipeline.Episode) { e.Prediction = "Aldbrook river" }), "correct/wrong_answer"},
		{"correct fever label", pipeline.FilterConfig{Rules: []string{"correct"}}, "fever",
			mod(func(e *pipeline.Episode) { e.Answer = "SUPPORTS"; e.Prediction = "supports" }), ""},
		{"correct fever wrong label", pipeline.FilterConfig{Rules: []string{"correct"}}, "fever",
			mod(func(e *pipeline.Episode) { e.Answer = "SUPPORTS"; e.Prediction = "REFUTES" }), "correct/wrong_answer"},
		{"game reward 1 keeps", pipeline.FilterConfig{Rules: []string{"correct"}}, "webshop", game(1), ""},
		{"game near-miss rejected", pipeline.FilterConfig{Rules: []string{"correct"}}, "webshop", game(0.75), "correct/wrong_answer"},
		{"game near-miss kept by min_reward", pipeline.FilterConfig{Rules: []string{"correct"}, MinReward: 0.7}, "webshop", game(0.75), ""},
		{"game under min_reward", pipeline.FilterConfig{Rules: []string{"correct"}, MinReward: 0.8}, "webshop", game(0.75), "correct/wrong_answer"},
		{"correct no gold trusts record", pipeline.FilterConfig{Rules: []string{"correct"}}, "hotpotqa",
			mod(func(e *pipeline.Episode) { e.Answer = ""; e.Correct = false }), "correct/wrong_answer"},
		{"finished", pipeline.FilterConfig{Rules: []string{"finished"}}, "hotpotqa",
			mod(func(e *pipeline.Episode) { e.StopReason = pipeline.StopMaxSteps }), "finished/not_finished"},
		{"max_steps over", pipeline.FilterConfig{Rules: []string{"max_steps"}, MaxSteps: 1}, "hotpotqa", good, "max_steps/too_many_steps"},
		{"max_steps at limit", pipeline.FilterConfig{Rules: []string{"max_steps"}, MaxSteps: 2}, "hotpotqa", good, ""},
		{"max_steps unset", pipeline.FilterConfig{Rules: []string{"max_steps"}}, "hotpotqa", good, ""},
		{"invalid action", pipeline.FilterConfig{Rules: []string{"no_invalid_actions"}}, "hotpotqa",
			mod(func(e *pipeline.Episode) { e.Steps[0].ActionType = pipeline.ActionInvalid }), "no_invalid_actions/invalid_action"},
		{"bad calls", pipeline.FilterConfig{Rules: []string{"no_bad_calls"}}, "hotpotqa",
			mod(func(e *pipeline.Episode) { e.BadCalls = 1 }), "no_bad_calls/bad_call"},
		{"loop stop reason", pipeline.FilterConfig{Rules: []string{"no_loops"}}, "hotpotqa",
			mod(func(e *pipeline.Episode) { e.StopReason = pipeline.StopLoop }), "no_loops/loop"},
		{"loop three in a row", pipeline.FilterConfig{Rules: []string{"no_loops"}}, "hotpotqa",
			episodetest.Episode("x", "q", "Search[A]", "search[a]", "Search[A] ", "Finish[A]"), "no_loops/loop"},
		{"two in a row is fine", pipeline.FilterConfig{Rules: []string{"no_loops"}}, "hotpotqa",
			episodetest.Episode("x", "q", "Search[A]", "Search[A]", "Search[B]", "Search[A]", "Finish[A]"), ""},
		{"max_tokens over", pipeline.FilterConfig{Rules: []string{"max_tokens"}, MaxTokens: 10}, "hotpotqa", good, "max_tokens/too_long"},
		{"max_tokens fits", pipeline.FilterConfig{Rules: []string{"max_tokens"}, MaxTokens: 1000}, "hotpotqa", good, ""},
		{"all failing rules recorded in order", pipeline.FilterConfig{Rules: []string{"finished", "correct", "no_bad_calls"}}, "hotpotqa",
			mod(func(e *pipeline.Episode) { e.StopReason = pipeline.StopMaxSteps; e.Prediction = "no"; e.BadCalls = 2 }),
			"finished/not_finished,correct/wrong_answer,no_bad_calls/bad_call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := tt.ep
			ep.Task = tt.task
			res := run(t, tt.cfg, tt.task, Options{}, []pipeline.Episode{ep})
			got := res.rejected[ep.ID]
			if got != tt.want {
				t.Errorf("codes: got %q, want %q", got, tt.want)
			}
			if (tt.want == "") != (len(res.kept) == 1) {
				t.Errorf("kept: got %v, want kept=%v", res.kept, tt.want == "")
			}
		})
	}
}

func TestUnknownRuleSuggestsNearest(t *testing.T) {
	_, err := New(pipeline.FilterConfig{Rules: []string{"finished", "dedup"}}, "hotpotqa", Options{})
	if err == nil {
		t.Fatal("New with unknown rule: got nil error")
	}
	for _, want := range []string{"filter.rules", `"dedup"`, `"dedupe"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %s", err, want)
		}
	}
	_, err = New(pipeline.FilterConfig{Rules: []string{"max_tokens"}, TokenCounter: "tiktokn"}, "hotpotqa", Options{})
	if err == nil || !strings.Contains(err.Error(), "filter.token_counter") {
		t.Errorf("unknown token counter: got %v, want an error naming filter.token_counter", err)
	}
}

func TestTokenCounters(t *testing.T) {
	tests := []struct {
		counter string
		in      string
		want    int
	}{
		{"", "The cat sat.", 4},                   // The, cat, sat, .
		{"o200k_base", "internationalisation", 2}, // counts checked with js-tiktoken
		{"cl100k_base", "1234567", 3},             // digits go in threes
		{"o200k_base", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.counter+"/"+tt.in, func(t *testing.T) {
			tc, err := counterFor(tt.counter, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.Count(tt.in); got != tt.want {
				t.Errorf("Count(%q): got %d, want %d", tt.in, got, tt.want)
			}
		})
	}
	_, err := counterFor("estimate", nil)
	if err == nil || !strings.Contains(err.Error(), "filter.token_counter") || !strings.Contains(err.Error(), "o200k_base") {
		t.Errorf("counter estimate: got %v, want an error naming the key and the tokenizers", err)
	}
}

func TestDedupe(t *testing.T) {
	a := episodetest.Episode("a", "q1", "Search[X]", "Finish[Aldbrook]")
	dup := episodetest.Episode("dup", "q1", "search[x]", "Finish[Aldbrook]") // same normalised trajectory
	long := episodetest.Episode("long", "q1", "Search[Y]", "Lookup[river]", "Search[X]", "Finish[Aldbrook]")
	short := episodetest.Episode("short", "q1", "Finish[Aldbrook]")
	near := episodetest.Episode("near", "q1", "Search[X]", "Lookup[mill]", "Finish[Aldbrook]")
	other := episodetest.Episode("other", "q2", "Search[Z]", "Finish[Aldbrook]")
	eps := []pipeline.Episode{a, dup, long, near, short, other}
	tests := []struct {
		policy string
		max    int
		kept   string
	}{
		{"first", 1, "a,other"},
		{"first", 3, "a,long,near,other"},
		{"shortest", 1, "short,other"},
		{"shortest", 2, "a,short,other"},
		{"diverse", 3, "a,long,short,other"},
		{"first", 0, "a,long,near,short,other"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.policy, tt.max), func(t *testing.T) {
			cfg := pipeline.FilterConfig{Rules: []string{"dedupe"}, DedupePolicy: tt.policy, MaxPerQuestion: tt.max}
			res := run(t, cfg, "hotpotqa", Options{}, eps)
			if got := strings.Join(res.kept, ","); got != tt.kept {
				t.Errorf("kept: got %s, want %s", got, tt.kept)
			}
			if got := res.rejected["dup"]; got != "dedupe/duplicate" {
				t.Errorf("dup: got %q, want dedupe/duplicate", got)
			}
		})
	}
}

func TestTwoPassMatchesBuffered(t *testing.T) {
	var eps []pipeline.Episode
	for i := range 30 {
		ep := episodetest.Episode(fmt.Sprintf("e%02d", i), fmt.Sprintf("q%d", i%7), fmt.Sprintf("Search[%d]", i%4), "Finish[Aldbrook]")
		if i%5 == 0 {
			ep.StopReason = pipeline.StopMaxSteps
		}
		ep.QuestionType = []string{"bridge", "comparison"}[i%3/2]
		eps = append(eps, ep)
	}
	cfg := pipeline.FilterConfig{Rules: []string{"finished", "dedupe", "balance"}, MaxPerQuestion: 2, DedupePolicy: "first", BalanceBy: "type"}
	buffered := run(t, cfg, "hotpotqa", Options{}, eps)
	reads := 0
	twoPass := run(t, cfg, "hotpotqa", Options{Reopen: func() iter.Seq2[pipeline.Episode, error] { reads++; return episodetest.Seq(eps) }}, eps)
	if reads != 1 {
		t.Errorf("reopen calls: got %d, want 1", reads)
	}
	if got, want := strings.Join(twoPass.kept, ","), strings.Join(buffered.kept, ","); got != want {
		t.Errorf("two-pass kept %s, buffered kept %s", got, want)
	}
	if len(twoPass.rejected) != len(buffered.rejected) {
		t.Errorf("rejected: two-pass %d, buffered %d", len(twoPass.rejected), len(buffered.rejected))
	}
	if st := twoPass.stats; st.In != 30 || st.Kept+st.Rejected != 30 || st.Kept != len(twoPass.kept) {
		t.Errorf("stats: got in %d kept %d rejected %d, want in 30 and kept+rejected=30", st.In, st.Kept, st.Rejected)
	}

	changed := append([]pipeline.Episode(nil), eps...)
	changed[1].ID = "other"
	c, err := New(cfg, "hotpotqa", Options{Reopen: func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(changed) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(t.Context(), episodetest.Seq(eps), nil, nil); err == nil {
		t.Error("Run with an input that changed between passes: got nil error")
	}
}

func TestBalance(t *testing.T) {
	var eps []pipeline.Episode
	counts := map[string]int{pipeline.LabelSupports: 20, pipeline.LabelRefutes: 10, pipeline.LabelNEI: 11}
	for label, n := range counts {
		for i := range n {
			ep := episodetest.Episode(fmt.Sprintf("%s-%d", label, i), fmt.Sprintf("%s-q%d", label, i), "Finish["+label+"]")
			ep.Task, ep.Answer, ep.Prediction, ep.QuestionType = pipeline.TaskFEVER, label, label, ""
			eps = append(eps, ep)
		}
	}
	tests := []struct {
		tol  float64
		want map[string]int
	}{
		{0, map[string]int{pipeline.LabelSupports: 10, pipeline.LabelRefutes: 10, pipeline.LabelNEI: 10}},
		{0.1, map[string]int{pipeline.LabelSupports: 11, pipeline.LabelRefutes: 10, pipeline.LabelNEI: 11}},
		{1, map[string]int{pipeline.LabelSupports: 20, pipeline.LabelRefutes: 10, pipeline.LabelNEI: 11}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.tol), func(t *testing.T) {
			cfg := pipeline.FilterConfig{Rules: []string{"correct", "balance"}, BalanceBy: "label", BalanceTolerance: tt.tol}
			res := run(t, cfg, pipeline.TaskFEVER, Options{}, eps)
			for label, want := range tt.want {
				if got := res.stats.ByLabel[label].Kept; got != want {
					t.Errorf("%s kept: got %d, want %d", label, got, want)
				}
				if got := res.stats.ByLabel[label].In; got != counts[label] {
					t.Errorf("%s in: got %d, want %d", label, got, counts[label])
				}
			}
			over := 0
			for _, n := range tt.want {
				over += n
			}
			if got := res.stats.ByRule["balance"]["over_balance"]; got != 41-over {
				t.Errorf("over_balance: got %d, want %d", got, 41-over)
			}
		})
	}
	// Deterministic: the same input in another order keeps the same episodes.
	cfg := pipeline.FilterConfig{Rules: []string{"balance"}, BalanceBy: "label"}
	first := run(t, cfg, pipeline.TaskFEVER, Options{}, eps)
	rev := append([]pipeline.Episode(nil), eps...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	second := run(t, cfg, pipeline.TaskFEVER, Options{}, rev)
	if len(first.kept) != len(second.kept) {
		t.Fatalf("kept: %d vs %d in reverse order", len(first.kept), len(second.kept))
	}
	in := map[string]bool{}
	for _, id := range first.kept {
		in[id] = true
	}
	for _, id := range second.kept {
		if !in[id] {
			t.Errorf("reverse order kept %s which forward order dropped", id)
		}
	}
}

func TestDecontaminate(t *testing.T) {
	dir := t.TempDir()
	hotpot := filepath.Join(dir, "dev.json")
	writeFile(t, hotpot, `[{"_id": "h1", "question": "Which lighthouse keeper painted the storm over Carrow Bay in the winter of 1881 while the ships sank?"},
		{"_id": "h2", "question": "Who wrote the harbour song?"}]`)
	fever := filepath.Join(dir, "fever.jsonl")
	writeFile(t, fever, `{"id": 42, "label": "SUPPORTS", "claim": "The Velmar Bridge opened in 1931."}`+"\n")
	generic := filepath.Join(dir, "more.jsonl")
	writeFile(t, generic, `{"question": "What colour is the tram in Portvale?"}`+"\n\n")

	mk := func(id, q string) pipeline.Episode {
		ep := episodetest.Episode(id, "q-"+id, "Finish[Aldbrook]")
		ep.Question = q
		return ep
	}
	eps := []pipeline.Episode{
		mk("gram", "Tell me: which lighthouse keeper painted the storm over Carrow Bay in the winter of 1881 while they slept?"),
		mk("short12", "Painted the storm over Carrow Bay in the winter of 1881 while the"),
		mk("exact", "who wrote THE harbour song"),
		mk("claim", "The Velmar Bridge opened in 1931"),
		mk("generic", "What colour is the tram in Portvale?"),
		mk("clean", "Who built the Portvale tram line?"),
	}
	eps = append(eps, mk("exact", "Who wrote the harbour song?")) // same question again: reported once
	eps[len(eps)-1].ID = "exact-again"
	cfg := pipeline.FilterConfig{Rules: []string{"decontaminate"}, EvalFiles: []string{hotpot, fever, generic}}
	res := run(t, cfg, "hotpotqa", Options{}, eps)
	if got := strings.Join(res.kept, ","); got != "short12,clean" {
		t.Errorf("kept: got %s, want short12,clean", got)
	}
	want := []Contamination{
		{QuestionID: "q-gram", EvalID: "h1", EvalFile: "dev.json", Match: "13-gram"},
		{QuestionID: "q-exact", EvalID: "h2", EvalFile: "dev.json", Match: "exact"},
		{QuestionID: "q-claim", EvalID: "42", EvalFile: "fever.jsonl", Match: "exact"},
		{QuestionID: "q-generic", EvalID: "hotpotqa-0", EvalFile: "more.jsonl", Match: "exact"},
	}
	if len(res.stats.Decontaminated) != len(want) {
		t.Fatalf("decontaminated: got %+v, want %+v", res.stats.Decontaminated, want)
	}
	for i, w := range want {
		if got := res.stats.Decontaminated[i]; got != w {
			t.Errorf("decontaminated[%d]: got %+v, want %+v", i, got, w)
		}
	}
	if got := res.stats.ByRule["decontaminate"]["contaminated"]; got != 5 {
		t.Errorf("contaminated count: got %d, want 5", got)
	}
	if _, err := New(pipeline.FilterConfig{Rules: []string{"decontaminate"}}, "hotpotqa", Options{}); err == nil {
		t.Error("decontaminate without eval files: got nil error")
	}
}

func TestChainOrderAndStats(t *testing.T) {
	wrong := episodetest.Episode("wrong", "q1", "Finish[Nowhere]")
	wrong.Prediction = "Nowhere"
	unfinished := episodetest.Episode("unfinished", "q2", "Search[A]")
	unfinished.StopReason = pipeline.StopMaxSteps
	unfinished.Prediction = ""
	eps := []pipeline.Episode{
		episodetest.Episode("k1", "q1", "Search[A]", "Finish[Aldbrook]"),
		wrong,
		episodetest.Episode("k1dup", "q1", "Search[A]", "Finish[Aldbrook]"),
		unfinished,
		episodetest.Episode("k2", "q2", "Finish[Aldbrook]"),
	}
	eps[4].QuestionType = "comparison"
	cfg := pipeline.FilterConfig{Rules: []string{"finished", "correct", "dedupe"}, MaxPerQuestion: 1, DedupePolicy: "first"}
	c, err := New(cfg, "hotpotqa", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Rules(), ","); got != "finished,correct,dedupe" {
		t.Errorf("Rules: got %s", got)
	}
	res := run(t, cfg, "hotpotqa", Options{}, eps)
	if got := strings.Join(res.kept, ","); got != "k1,k2" {
		t.Errorf("kept: got %s, want k1,k2", got)
	}
	wantRej := map[string]string{"wrong": "correct/wrong_answer", "k1dup": "dedupe/duplicate",
		"unfinished": "finished/not_finished,correct/wrong_answer"}
	for id, w := range wantRej {
		if got := res.rejected[id]; got != w {
			t.Errorf("%s: got %q, want %q", id, got, w)
		}
	}
	st := res.stats
	if st.In != 5 || st.Kept != 2 || st.Rejected != 3 {
		t.Errorf("stats: got in %d kept %d rejected %d, want 5 2 3", st.In, st.Kept, st.Rejected)
	}
	if st.ByRule["correct"]["wrong_answer"] != 2 || st.ByRule["finished"]["not_finished"] != 1 || st.ByRule["dedupe"]["duplicate"] != 1 {
		t.Errorf("by rule: got %v", st.ByRule)
	}
	if got := st.ByType["bridge"]; got != (ClassStats{In: 4, Kept: 1}) {
		t.Errorf("bridge: got %+v, want in 4 kept 1", got)
	}
	if got := st.ByType["comparison"].Rate(); got != 1 {
		t.Errorf("comparison rate: got %v, want 1", got)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDecontaminateBadEvalFile fails on an evaluation file the question reader refuses,
// naming the file and line.
func TestDecontaminateBadEvalFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "eval.jsonl")
	writeFile(t, p, "{\"id\": \"e1\", \"question\": \"Q?\"}\n{\"id\": \"e2\", \"question\": \n")
	_, err := New(pipeline.FilterConfig{Rules: []string{"decontaminate"}, EvalFiles: []string{p}}, pipeline.TaskHotpotQA, Options{})
	if want := p + " line 2: malformed JSON"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an error containing %q", err, want)
	}
}

// TestDecontaminateRealClaims runs the paper's FEVER dev claims against the FEVER dev
// file: every one of them is an evaluation question.
func TestDecontaminateRealClaims(t *testing.T) {
	dev := shareddata.Path(t, "fever/paper_dev.jsonl")
	tr := shareddata.Path(t, "react-transcripts/fever_dev_react_text-davinci-002.jsonl")
	b, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	var eps []pipeline.Episode
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct{ Transcript string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		claim, _, _ := strings.Cut(strings.TrimPrefix(rec.Transcript, "Claim: "), "\n")
		eps = append(eps, pipeline.Episode{ID: fmt.Sprint(i), QuestionID: fmt.Sprint(i), Question: claim})
	}
	res := run(t, pipeline.FilterConfig{Rules: []string{"decontaminate"}, EvalFiles: []string{dev}}, pipeline.TaskFEVER, Options{}, eps)
	if len(res.kept) != 0 || len(res.stats.Decontaminated) != len(eps) {
		t.Errorf("kept %d, decontaminated %d of %d", len(res.kept), len(res.stats.Decontaminated), len(eps))
	}
}
