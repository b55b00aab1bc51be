package main

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"testing"

	"github.com/reactgen/reactgen/internal/filetest"
	"github.com/reactgen/reactgen/pipeline"
	"github.com/reactgen/reactgen/report"
)

// TestStatsAndEvalCountAlike: stats and eval (and compare, which reads a run as eval
// does) count a run directory once, through pipeline.Summarize, so they agree on every
// count both print: episodes in the log, correct ones, model calls, tokens, kept and
// rejected episodes, reject reasons, kept episodes per STaR round; and eval's scored and
// unfinished first attempts are the questions of a one-attempt log. The runs: a weak
// model's run (the filter rejects its wrong answers), a second STaR round on it, and an
// eval of the weak model.
func TestStatsAndEvalCountAlike(t *testing.T) {
	_, base := demoModelRun(t, 24)
	dirs := map[string]string{}
	for _, c := range []struct{ name, cmd, model, previous string }{
		{"round1", "run", "weak-base", ""}, {"round2", "run", "ft:round1", "round1"}, {"eval", "eval", "weak-base", ""},
	} {
		dirs[c.name] = filepath.Join(t.TempDir(), c.name)
		args := append([]string{c.cmd, "--out", dirs[c.name], "--set", "llm.model=" + c.model}, base...)
		if c.previous != "" {
			args = append(args, "--set", "star.previous="+dirs[c.previous])
		}
		if res := invoke(t, "", nil, args...); res.code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, res.code, res.stderr)
		}
	}
	for _, name := range []string{"round1", "round2", "eval"} {
		dir := dirs[name]
		res := invoke(t, "", nil, "stats", "--run", dir, "--json")
		var s pipeline.Summary
		if err := json.Unmarshal([]byte(res.stdout), &s); res.code != 0 || err != nil {
			t.Fatalf("%s: stats --json: exit %d, %v: %s", name, res.code, err, res.stderr)
		}
		var r report.Run
		if name == "eval" {
			filetest.ReadJSON(t, filepath.Join(dir, report.EvalFile), &r)
		} else {
			res := invoke(t, "", nil, "compare", dir, "--json", "--out", filepath.Join(t.TempDir(), "report"))
			var runs []report.Run
			if err := json.Unmarshal([]byte(res.stdout), &runs); res.code != 0 || err != nil || len(runs) != 1 {
				t.Fatalf("%s: compare --json: exit %d, %v: %s", name, res.code, err, res.stderr)
			}
			r = runs[0]
		}
		if s.Episodes != r.Episodes || s.Correct != r.CorrectAll || s.LLMCalls != r.LLMCalls || s.Usage != r.Usage ||
			s.Kept != r.Kept || s.Rejected != r.Rejected || !maps.Equal(s.RejectReasons, r.Rejects) {
			t.Errorf("%s: stats counts episodes %d, correct %d, calls %d, usage %+v, kept %d, rejected %d, rejects %v;\n"+
				"eval counts %d, %d, %d, %+v, %d, %d, %v", name, s.Episodes, s.Correct, s.LLMCalls, s.Usage, s.Kept, s.Rejected,
				s.RejectReasons, r.Episodes, r.CorrectAll, r.LLMCalls, r.Usage, r.Kept, r.Rejected, r.Rejects)
		}
		rounds := map[int]int{}
		for k, c := range s.Rounds {
			if c.Kept > 0 {
				rounds[k] = c.Kept
			}
		}
		if !maps.Equal(rounds, r.Rounds) {
			t.Errorf("%s: kept by round: stats %v, eval %v", name, s.Rounds, r.Rounds)
		}
		// The runs are worth comparing: the model was asked, and got some questions wrong.
		if s.LLMCalls == 0 || s.Usage.TotalTokens == 0 || s.Correct == 0 || s.Correct == s.Episodes && name != "round2" {
			t.Errorf("%s: calls %d, tokens %d, correct %d of %d", name, s.LLMCalls, s.Usage.TotalTokens, s.Correct, s.Episodes)
		}
		switch name {
		case "round1":
			if s.Rejected == 0 || s.Kept == 0 {
				t.Errorf("round 1: kept %d, rejected %d; want both", s.Kept, s.Rejected)
			}
		case "round2":
			if len(rounds) != 2 {
				t.Errorf("round 2: kept by round %v, want rounds 1 and 2", rounds)
			}
		case "eval":
			if r.N+r.Unfinished != 24 || s.Episodes != 24 || r.Correct != s.Correct {
				t.Errorf("eval: %d scored and %d unfinished of %d episodes, correct %d (stats %d); want 24 questions",
					r.N, r.Unfinished, s.Episodes, r.Correct, s.Correct)
			}
		}
	}
}
