package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

// verdictEpisodes are records that trip every per-episode rule, both ways, and hold the
// fields decodeLean skips (calls, samples, reasoning, tool calls, usage), for a task.
func verdictEpisodes(task string) []pipeline.Episode {
	var eps []pipeline.Episode
	for i := range 62 {
		full := episodetest.Full()
		ep := episodetest.Episode(fmt.Sprintf("e%02d", i), fmt.Sprint("q", i%9), fmt.Sprintf("Search[%d]", i%4), "Lookup[river]", "Finish[Aldbrook]")
		ep.Task, ep.Steps[0].Calls, ep.Samples, ep.Usage = task, full.Steps[0].Calls, full.Samples, full.Usage
		ep.Steps[1].Reasoning, ep.Steps[1].ToolCall, ep.Steps[0].Argument = "why \"so\"", full.Steps[0].ToolCall, fmt.Sprint(i%4)
		if i%6 == 0 {
			ep.QuestionType = "comparison"
		}
		if i%8 == 0 {
			ep.Steps[0].Observation = strings.Repeat("Much text. ", 100) // over max_tokens
		}
		switch i % 10 {
		case 0: // two different searches: no repeat
			ep.Steps[1].Action, ep.Steps[1].ActionType, ep.Steps[1].Argument = "Search[other]", pipeline.ActionSearch, "other"
		case 1:
			ep.Prediction = "the ALDBROOK." // correct once normalised
		case 2:
			ep.Prediction = "Aldbrook river" // F1 2/3
		case 3:
			ep.StopReason = pipeline.StopMaxSteps
		case 4:
			ep.Steps[1].ActionType, ep.Steps[1].Action = pipeline.ActionInvalid, "Dance[x]"
		case 5: // a loop
			ep.Steps = append([]pipeline.Step{ep.Steps[0], ep.Steps[0], ep.Steps[0]}, ep.Steps[1:]...)
		case 6:
			ep.BadCalls = 2
		case 7:
			ep.Method, ep.Branch = pipeline.MethodReActCoTSC, pipeline.MethodCoTSC
		case 8: // a repeated search
			ep.Steps = append([]pipeline.Step{ep.Steps[0], ep.Steps[0]}, ep.Steps[1:]...)
			ep.Steps[1].Action = strings.ToUpper(ep.Steps[1].Action)
		case 9:
			ep.MaskedSteps = []pipeline.MaskedStep{{Step: 1, Code: MaskInvalidAction}} // stale
		}
		if i >= 60 { // the same actions, other thoughts: no duplicates
			ep = episodetest.Episode(fmt.Sprint("t", i), "qt", "Search[x]", "Finish[Aldbrook]")
			ep.Task, ep.Steps[0].Thought = task, fmt.Sprint("Thought ", i)
		}
		if i%7 == 3 {
			ep.Answer = "" // no gold: the recorded verdict
			ep.Correct = i%2 == 0
		}
		switch task {
		case pipeline.TaskFEVER:
			ep.Answer = []string{pipeline.LabelSupports, pipeline.LabelRefutes, pipeline.LabelNEI}[i%3]
			ep.Prediction = []string{"supports", pipeline.LabelRefutes, "NOT ENOUGH INFO", pipeline.LabelRefutes}[i%4]
		case pipeline.TaskALFWorld:
			r := []float64{1, 0, 0.5}[i%3]
			ep.Reward = &r
			if i%5 == 0 {
				ep.Reward = nil
			}
		}
		eps = append(eps, ep)
	}
	return eps
}

// TestLeanDecodeJudgesAsFull: filtering a log through RunLog, which decodes only what the
// rules read (decodeLean) and scans the log once, writes the bytes and the statistics that
// filtering whole decoded records writes, for every rule that reads no text under every
// dedupe policy, balance class and mask code, on every task, and with a rule that reads
// text (where RunLog decodes whole records).
func TestLeanDecodeJudgesAsFull(t *testing.T) {
	noText := []string{"correct", "finished", "answered_by", "max_steps", "no_invalid_actions", "no_bad_calls", "no_loops", "dedupe", "balance"}
	for _, task := range []string{pipeline.TaskHotpotQA, pipeline.TaskFEVER, pipeline.TaskALFWorld} {
		dir := t.TempDir()
		log := filepath.Join(dir, pipeline.EpisodesFile)
		w, err := pipeline.CreateJSONL(log)
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range verdictEpisodes(task) {
			w.Write(ep)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		for k, tc := range []struct {
			rules         []string
			policy, by    string
			mask          []string
			lean, minGame bool
		}{
			{rules: noText, policy: "first", by: "type", lean: true},
			{rules: noText, policy: "shortest", by: "label", mask: []string{MaskRepeatedSearch}, lean: true, minGame: true},
			{rules: noText[:8], policy: "diverse", by: "type", mask: []string{MaskRepeatedSearch}, lean: true},
			{rules: []string{"correct", "no_loops", "dedupe"}, policy: "first", mask: []string{MaskInvalidAction, MaskRepeatedSearch}, lean: true},
			{rules: []string{"finished", "max_tokens", "dedupe"}, policy: "first", mask: []string{MaskInvalidAction}},
			{rules: []string{"correct"}, mask: []string{MaskErrorObservation}},
		} {
			t.Run(fmt.Sprint(task, k), func(t *testing.T) {
				cfg := pipeline.Default().Filter
				cfg.Rules, cfg.DedupePolicy, cfg.BalanceBy, cfg.MaskSteps = tc.rules, tc.policy, tc.by, tc.mask
				cfg.MaxPerQuestion, cfg.MaxSteps, cfg.MinF1, cfg.MaxTokens = 2, 4, 0.6, 200
				if tc.minGame {
					cfg.MinReward = 0.5
				}
				c, err := New(cfg, task, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if lean := c.readsText() == false; lean != tc.lean {
					t.Fatalf("the chain decodes lean: %v, want %v", lean, tc.lean)
				}
				wantK, wantR, wantSt := writeVerdicts(t, dir, "whole", func(kept, rejected *pipeline.JSONLWriter) (Stats, error) {
					return c.Run(t.Context(), pipeline.ReadEpisodes(log),
						func(ep pipeline.Episode) error { return kept.Write(ep) },
						func(r pipeline.Rejected) error { return rejected.Write(r) })
				})
				gotK, gotR, gotSt := writeVerdicts(t, dir, "log", func(kept, rejected *pipeline.JSONLWriter) (Stats, error) {
					return c.RunLog(t.Context(), log, kept.WriteLine, rejected.WriteRejected)
				})
				if !bytes.Equal(gotK, wantK) || !bytes.Equal(gotR, wantR) {
					t.Errorf("kept or rejected differ:\n%s\n%s\n---\n%s\n%s", gotK, gotR, wantK, wantR)
				}
				if !reflect.DeepEqual(gotSt, wantSt) {
					t.Errorf("stats %+v, want %+v", gotSt, wantSt)
				}
				if wantSt.Kept == 0 || wantSt.Rejected == 0 {
					t.Errorf("the case keeps %d and rejects %d: want both", wantSt.Kept, wantSt.Rejected)
				}
			})
		}
	}
}

// TestDecodeLeanMatchesWhole: what decodeLean sets is what the whole record holds, for
// every field of leanEpisode, and a line it cannot read gets the whole decoder's error.
func TestDecodeLeanMatchesWhole(t *testing.T) {
	for _, ep := range []pipeline.Episode{episodetest.Full(), episodetest.Small(), {ID: "bare"}} {
		b, err := json.Marshal(ep)
		if err != nil {
			t.Fatal(err)
		}
		var lean, whole pipeline.Episode
		if err := decodeLean(b, &lean); err != nil {
			t.Fatal(err)
		}
		if err := pipeline.DecodeEpisode(b, &whole); err != nil {
			t.Fatal(err)
		}
		lt := reflect.TypeOf(leanEpisode{})
		for i := range lt.NumField() {
			name := lt.Field(i).Name
			got, want := reflect.ValueOf(lean).FieldByName(name), reflect.ValueOf(whole).FieldByName(name)
			if name == "Steps" {
				if got.Len() != want.Len() {
					t.Fatalf("%s: %d steps, want %d", ep.ID, got.Len(), want.Len())
				}
				for j := range got.Len() {
					gs, ws := got.Index(j).Interface().(pipeline.Step), want.Index(j).Interface().(pipeline.Step)
					ws = pipeline.Step{Thought: ws.Thought, Action: ws.Action, ActionType: ws.ActionType, Argument: ws.Argument}
					if !reflect.DeepEqual(gs, ws) {
						t.Errorf("%s step %d: %+v, want %+v", ep.ID, j, gs, ws)
					}
				}
				continue
			}
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("%s %s: %v, want %v", ep.ID, name, got, want)
			}
		}
	}
	bad := []byte(`{"schema":2,"id":"x","steps":[{"thought":3}]}`)
	var ep, whole pipeline.Episode
	lerr, werr := decodeLean(bad, &ep), pipeline.DecodeEpisode(bad, &whole)
	if lerr == nil || werr == nil || lerr.Error() != werr.Error() {
		t.Errorf("bad line: decodeLean %v, whole %v", lerr, werr)
	}
}
