package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/pipeline"
)

// backOffModel plays react-cot-sc over the demo world: on every other question ReAct
// searches fruitlessly until the step limit, so that CoT-SC answers (correctly); on the
// rest it plays fakeModel's walked trajectories. CoT requests (their stop sequence is the
// next question, not an observation) answer the gold answer with a chain.
func backOffModel(t *testing.T) (*fakeModel, func(ctx context.Context, r llmtest.Req) llmtest.Reply) {
	m := newFakeModel(t)
	return m, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		_, q, _ := strings.Cut(r.Messages[1].Content, ": ")
		if !slices.Contains(r.Stop, "\nObservation") {
			return llmtest.Reply{Texts: []string{"Thought: I remember this one without looking.\nAnswer: " + m.answers[q]}}
		}
		if fruitless(q) {
			n := len(r.Messages)
			if strings.HasPrefix(r.Messages[n-1].Content, "Write only the Action") {
				return llmtest.Reply{Texts: []string{fmt.Sprintf("Action: Search[Nowhere %d]", n)}}
			}
			return llmtest.Reply{Texts: []string{fmt.Sprintf("Thought: Maybe it is under another name.\nAction: Search[Nowhere %d]", n)}}
		}
		return m.handle(ctx, r)
	}
}

func fruitless(q string) bool {
	h := fnv.New32a()
	h.Write([]byte(q))
	return h.Sum32()%2 == 0
}

type chatRow struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// readChatRows reads every row of an openai-chat view's files in the run's export.
func readChatRows(t *testing.T, dir, infix string) []chatRow {
	t.Helper()
	var rows []chatRow
	for _, split := range []string{"train", "validation"} {
		f, err := os.Open(filepath.Join(dir, "export", "openai-chat"+infix+"."+split+".jsonl"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var r chatRow
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", f.Name(), err)
			}
			rows = append(rows, r)
		}
		f.Close()
	}
	return rows
}

// TestBackOffNeverExportedAsReAct drives react-cot-sc episodes answered by their CoT-SC
// back-off through generate, filter and export: no exported react-view example ends in a
// Finish the agent did not take; the back-off episodes are exported as their winning
// chain in the cot view, or, by the default filter, not at all.
func TestBackOffNeverExportedAsReAct(t *testing.T) {
	model, handle := backOffModel(t)
	srv := llmtest.NewServer(t, handle)
	dir := t.TempDir()
	cfg := testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{
		"task.limit":       24,
		"generate.method":  "react-cot-sc",
		"generate.samples": 3,
		"filter.rules":     []string{"finished", "correct"}, // keeps what CoT-SC answered too
		"export.views":     []string{"react", "cot"},
	})
	out := filepath.Join(dir, "run")
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	kept := logLines(t, filepath.Join(out, pipeline.KeptFile))
	byQuestion := map[string]pipeline.Episode{}
	walked, backOff := 0, 0
	for _, ep := range kept {
		byQuestion[ep.Question] = ep
		switch ep.Branch {
		case "react":
			walked++
		case "cot-sc":
			backOff++
			for i, st := range ep.Steps {
				if st.ActionType == pipeline.ActionFinish {
					t.Errorf("episode %s (answered by CoT-SC): step %d is a Finish %q", ep.ID, i+1, st.Action)
				}
			}
			if len(ep.Steps) > 7 {
				t.Errorf("episode %s: %d steps, more than max_steps 7", ep.ID, len(ep.Steps))
			}
		}
	}
	t.Logf("kept %d walked, %d answered by CoT-SC", walked, backOff)
	if walked == 0 || backOff == 0 {
		t.Fatalf("kept %d walked and %d back-off episodes, want some of each", walked, backOff)
	}
	for _, ep := range kept {
		if ep.Branch == "cot-sc" {
			res := invoke(t, "", nil, "inspect", "--run", out, "--id", ep.ID)
			if !strings.Contains(res.stdout, "Answered by cot-sc, not by the steps above") {
				t.Errorf("inspect of a back-off episode does not say CoT-SC answered it:\n%s", res.stdout)
			}
			break
		}
	}

	react := readChatRows(t, out, "")
	if len(react) != walked {
		t.Errorf("react view: %d rows, want the %d walked trajectories", len(react), walked)
	}
	for i, row := range react {
		q := strings.TrimPrefix(row.Messages[0].Content, "Question: ")
		ep, ok := byQuestion[q]
		if !ok {
			t.Fatalf("react row %d: question %q is not kept", i, q)
		}
		last := ep.Steps[len(ep.Steps)-1]
		got := row.Messages[len(row.Messages)-1].Content
		if ep.Branch != "react" || last.ActionType != pipeline.ActionFinish || len(last.Calls) == 0 ||
			got != "Thought: "+last.Thought+"\nAction: "+last.Action {
			t.Errorf("react row %d ends in %q; its episode %s (branch %s) ends in %q with %d calls: a Finish the agent did not take",
				i, got, ep.ID, ep.Branch, last.Action, len(last.Calls))
		}
		if n := len(row.Messages) / 2; n > 7 {
			t.Errorf("react row %d: %d assistant turns, more than max_steps", i, n)
		}
	}
	cot := readChatRows(t, out, ".cot")
	if len(cot) != backOff {
		t.Errorf("cot view: %d rows, want the %d episodes CoT-SC answered", len(cot), backOff)
	}
	for i, row := range cot {
		q := strings.TrimPrefix(row.Messages[0].Content, "Question: ")
		want := "Thought: I remember this one without looking.\nAnswer: " + model.answers[q]
		if len(row.Messages) != 2 || row.Messages[1].Content != want {
			t.Errorf("cot row %d: %+v, want the winning chain %q", i, row.Messages, want)
		}
	}
	m := readManifest(t, out)
	if c := m.Stages["export"].Counts; c["view:react"] != walked || c["outside:react"] != backOff || c["view:cot"] != backOff {
		t.Errorf("export counts %v: want view:react %d, outside:react %d, view:cot %d", c, walked, backOff, backOff)
	}

	// With only the react view, an episode it cannot hold fails the export, naming what to change.
	res := invoke(t, "", env, "export", "--config", cfg, "--out", out, "--set", "export.views=[react]")
	if res.code == 0 || !strings.Contains(res.stderr, "filter.answered_by") || !strings.Contains(res.stderr, "export.views") {
		t.Errorf("react-only export of back-off episodes: exit %d, stderr %q; want a failure naming export.views and filter.answered_by", res.code, res.stderr)
	}

	// The default filter keeps only what ReAct answered.
	for _, args := range [][]string{
		{"filter", "--config", cfg, "--out", out, "--set", "filter.rules=[finished,correct,answered_by]"},
		{"export", "--config", cfg, "--out", out, "--set", "export.views=[react]"},
	} {
		if res := invoke(t, "", env, args...); res.code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], res.code, res.stderr)
		}
	}
	for _, r := range logLines(t, filepath.Join(out, pipeline.KeptFile)) {
		if r.AnsweredBy() != "react" {
			t.Errorf("default rules kept %s, answered by %s", r.ID, r.AnsweredBy())
		}
	}
	if n := len(readChatRows(t, out, "")); n != walked {
		t.Errorf("react view after the default filter: %d rows, want %d", n, walked)
	}
}

// TestMaskedNearMissEndToEnd: episodes that search the same entity twice before they
// answer are kept with that step masked (filter.mask_steps), and the export trains on
// every step but it: weight 0 on exactly those turns, counted in the card and stats.
func TestMaskedNearMissEndToEnd(t *testing.T) {
	model := newFakeModel(t)
	srv := llmtest.NewServer(t, func(ctx context.Context, r llmtest.Req) llmtest.Reply {
		_, q, _ := strings.Cut(r.Messages[1].Content, ": ")
		obs := 0
		for _, m := range r.Messages[2:] {
			if m.Role == "user" && strings.HasPrefix(m.Content, "Observation: ") {
				obs++
			}
		}
		if obs == 1 && !strings.HasPrefix(r.Messages[len(r.Messages)-1].Content, "Write only") {
			return llmtest.Reply{Texts: []string{"Thought: Let me read that page once more.\nAction: Search[" + entity(q) + "]"}}
		}
		return model.handle(ctx, r)
	})
	dir := t.TempDir()
	cfg := testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{
		"task.limit":        16,
		"filter.rules":      []string{"finished", "correct", "no_loops"},
		"filter.mask_steps": []string{"repeated_search"},
		"export.weights":    true,
	})
	out := filepath.Join(dir, "run")
	if res := invoke(t, "", map[string]string{"OPENAI_API_KEY": "sk-test"}, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	kept := logLines(t, filepath.Join(out, pipeline.KeptFile))
	masked := 0
	for _, ep := range kept {
		want := len(ep.Steps) == 3 && ep.Steps[1].Action == ep.Steps[0].Action
		if want != (len(ep.MaskedSteps) == 1 && ep.MaskedSteps[0] == pipeline.MaskedStep{Step: 2, Code: "repeated_search"}) {
			t.Errorf("kept %s (%d steps): masked %v", ep.ID, len(ep.Steps), ep.MaskedSteps)
		}
		if want {
			masked++
		}
	}
	if masked == 0 {
		t.Fatalf("no kept episode with a repeated search among %d", len(kept))
	}
	zero, one := 0, 0
	for _, split := range []string{"train", "validation"} {
		path := filepath.Join(out, "export", "openai-chat."+split+".jsonl")
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		for line := range strings.Lines(string(b)) {
			var row struct {
				Messages []struct {
					Role    string   `json:"role"`
					Content string   `json:"content"`
					Weight  *float64 `json:"weight"`
				} `json:"messages"`
			}
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			for i, m := range row.Messages {
				switch {
				case m.Role != "assistant":
				case m.Weight == nil:
					t.Errorf("%s: assistant turn %d has no weight", path, i)
				case *m.Weight == 0:
					zero++
					if !strings.HasPrefix(m.Content, "Thought: Let me read that page once more.") {
						t.Errorf("weight 0 on %q, a step that was not masked", m.Content)
					}
				default:
					one++
				}
			}
		}
	}
	if zero != masked || one == 0 {
		t.Errorf("openai-chat: %d turns with weight 0 and %d with 1; want %d with 0", zero, one, masked)
	}
	card, err := os.ReadFile(filepath.Join(out, "export", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(card), fmt.Sprintf(" | %d | %d |\n", one, zero)) {
		t.Errorf("the card does not count %d trained turns and %d with weight 0", one, zero)
	}
	if res := invoke(t, "", nil, "stats", "--run", out); !strings.Contains(res.stdout, fmt.Sprintf("repeated_search %d", masked)) {
		t.Errorf("stats does not count the masked steps:\n%s", res.stdout)
	}
}

// TestTargetCountsKept: generate.target_correct counts what the filter will keep
// (correct and distinct per question under dedupe), not correct episodes: with two
// attempts a question solved at once gets no second one, the run stops with the target
// in kept.jsonl (give or take the episodes in flight), and a resume with a higher target
// counts the first run's episodes and goes on from there.
func TestTargetCountsKept(t *testing.T) {
	model := newFakeModel(t)
	srv := llmtest.NewServer(t, model.handle)
	dir := t.TempDir()
	const conc = 4
	cfg := testConfig(t, filepath.Join(dir, "cfg"), srv.URL, map[string]any{
		"task.limit":              60,
		"generate.attempts":       2,
		"generate.concurrency":    conc,
		"generate.target_correct": 12,
		"filter.rules":            []string{"finished", "correct", "dedupe"},
	})
	out := filepath.Join(dir, "run")
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	check := func(target int) {
		t.Helper()
		eps := logLines(t, filepath.Join(out, pipeline.EpisodesFile))
		byQ := map[string][]pipeline.Episode{}
		for _, ep := range eps {
			byQ[ep.QuestionID] = append(byQ[ep.QuestionID], ep)
		}
		seconds := 0
		for q, list := range byQ {
			for i, ep := range list {
				if ep.Attempt == 0 {
					continue
				}
				seconds++
				for _, prev := range list[:i] {
					if prev.Correct {
						t.Errorf("%s: attempt %d ran after attempt %d was correct", q, ep.Attempt, prev.Attempt)
					}
				}
			}
		}
		if seconds == 0 {
			t.Errorf("no second attempt ran: the case has no question that failed its first")
		}
		kept := len(logLines(t, filepath.Join(out, pipeline.KeptFile)))
		if kept < target || kept > target+conc-1 {
			t.Errorf("target %d: kept.jsonl holds %d (of %d episodes), want the target, past it by at most the %d in flight", target, kept, len(eps), conc-1)
		}
		m := readManifest(t, out)
		if c := m.Stages["generate"].Counts; c["will_keep_total"] != kept {
			t.Errorf("generate counted %d toward the target, the filter kept %d", c["will_keep_total"], kept)
		}
	}
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", out); res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	check(12)
	if res := invoke(t, "", env, "run", "--config", cfg, "--out", out, "--set", "generate.target_correct=20"); res.code != 0 {
		t.Fatalf("resume: exit %d: %s", res.code, res.stderr)
	}
	check(20)
}
