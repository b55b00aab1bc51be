package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

// TestStarTwoRounds runs two STaR rounds on the demo world: round 1 with a weaker model
// solves part of the questions, round 2 with the "fine-tuned" model asks only the rest,
// carries round 1's kept episodes, and the merged kept set counts no question twice.
func TestStarTwoRounds(t *testing.T) {
	srv, base := demoModelRun(t, 45)
	r1 := filepath.Join(t.TempDir(), "round1")
	if res := invoke(t, "", nil, append([]string{"run", "--out", r1, "--set", "llm.model=weak-base"}, base...)...); res.code != 0 {
		t.Fatalf("round 1: %s", res.stderr)
	}
	solved1 := map[string]bool{}
	for ep, err := range pipeline.ReadKept(filepath.Join(r1, pipeline.KeptFile)) {
		if err != nil {
			t.Fatal(err)
		}
		solved1[ep.QuestionID] = true
	}
	if len(solved1) == 0 || len(solved1) == 45 {
		t.Fatalf("round 1 solved %d of 45: the test needs some solved and some not", len(solved1))
	}
	questions := map[string]string{} // id -> text
	for ep, err := range pipeline.ReadEpisodes(filepath.Join(r1, pipeline.EpisodesFile)) {
		if err != nil {
			t.Fatal(err)
		}
		questions[ep.QuestionID] = ep.Question
	}

	before := len(srv.Log())
	r2 := filepath.Join(t.TempDir(), "round2")
	args2 := append([]string{"run", "--out", r2, "--set", "llm.model=ft:round1", "--set", "star.previous=" + r1}, base...)
	if res := invoke(t, "", nil, args2...); res.code != 0 {
		t.Fatalf("round 2: %s", res.stderr)
	}
	// Round 2 asked only the questions round 1 did not solve.
	for _, rec := range srv.Log()[before:] {
		text := rec.Req.Prompt
		for _, m := range rec.Req.Messages {
			text += "\n" + m.Content
		}
		for qid := range solved1 {
			if strings.Contains(text, "Question: "+questions[qid]) {
				t.Fatalf("round 2 asked %s, which round 1 solved", qid)
			}
		}
	}
	byQuestion := map[string]int{}
	rounds := map[int]int{}
	for ep, err := range pipeline.ReadKept(filepath.Join(r2, pipeline.KeptFile)) {
		if err != nil {
			t.Fatal(err)
		}
		byQuestion[ep.QuestionID]++
		rounds[ep.Round]++
		if want := map[bool]int{true: 1, false: 2}[solved1[ep.QuestionID]]; ep.Round != want {
			t.Errorf("question %s kept from round %d, want %d", ep.QuestionID, ep.Round, want)
		}
		if ep.Round == 2 && ep.Policy != "ft:round1" || ep.Round == 1 && ep.Policy != "weak-base" {
			t.Errorf("round %d episode %s has policy %s", ep.Round, ep.ID, ep.Policy)
		}
	}
	for qid, n := range byQuestion {
		if n > 1 {
			t.Errorf("question %s kept %d times", qid, n)
		}
	}
	if len(byQuestion) != 45 || rounds[1] != len(solved1) || rounds[2] != 45-len(solved1) {
		t.Errorf("kept %d questions, by round %v; want 45, round 1 %d", len(byQuestion), rounds, len(solved1))
	}
	m := readManifest(t, r2)
	if m.Round != 2 || len(m.Rounds) != 1 || m.Rounds[0].Model != "weak-base" || m.Rounds[0].Kept != len(solved1) {
		t.Errorf("manifest round %d, rounds %+v", m.Round, m.Rounds)
	}
	// stats and the card show the rounds.
	res := invoke(t, "", nil, "stats", "--run", r2, "--json")
	var s pipeline.Summary
	if err := json.Unmarshal([]byte(res.stdout), &s); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, res.stdout)
	}
	if s.Rounds[1].Kept != len(solved1) || s.Rounds[2].Kept != 45-len(solved1) || s.Rounds[2].Model != "ft:round1" {
		t.Errorf("stats by round = %+v", s.Rounds)
	}
	card := readFile(t, filepath.Join(r2, pipeline.ExportDir, "README.md"))
	if !strings.Contains(card, "## STaR rounds") || !strings.Contains(card, "| 2 | ft:round1 |") {
		t.Errorf("the card lacks the rounds:\n%s", card)
	}
	// A resumed round 2 changes nothing: round 1's episodes are not carried twice.
	n := countLines(t, filepath.Join(r2, pipeline.EpisodesFile))
	if res := invoke(t, "", nil, args2...); res.code != 0 {
		t.Fatalf("round 2 again: %s", res.stderr)
	}
	if again := countLines(t, filepath.Join(r2, pipeline.EpisodesFile)); again != n {
		t.Errorf("the resumed round wrote %d more records", again-n)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
