package filter

import (
	"bytes"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestRunLinesMatchesRun: filtering a log by its lines writes the same kept.jsonl and
// rejected.jsonl, byte for byte, and the same statistics as filtering decoded episodes
// and encoding them again, with and without a second pass, for every group rule, and
// with filter.mask_steps, which writes (or removes) the kept records' masked_steps.
// writeVerdicts runs fn with a kept and a rejected JSONL writer on name-kept and
// name-rejected in dir, commits both and returns their bytes and fn's statistics.
func writeVerdicts(t *testing.T, dir, name string, fn func(kept, rejected *pipeline.JSONLWriter) (Stats, error)) ([]byte, []byte, Stats) {
	t.Helper()
	kept, _ := pipeline.CreateJSONL(filepath.Join(dir, name+"-kept"))
	rejected, _ := pipeline.CreateJSONL(filepath.Join(dir, name+"-rejected"))
	st, err := fn(kept, rejected)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	kept.Commit()
	rejected.Commit()
	k, _ := os.ReadFile(filepath.Join(dir, name+"-kept"))
	r, _ := os.ReadFile(filepath.Join(dir, name+"-rejected"))
	return k, r, st
}

func TestRunLinesMatchesRun(t *testing.T) {
	var eps []pipeline.Episode
	for i := range 40 {
		q := fmt.Sprint("q", i%7)
		ep := episodetest.Episode(fmt.Sprintf("e%02d", i), q, fmt.Sprintf("Search[%d]", i%3), "Finish[Aldbrook]")
		switch i % 5 {
		case 1:
			ep.Prediction = "Millbrook" // wrong
		case 2:
			ep.QuestionType = "comparison"
		case 3:
			ep.Steps[0].Observation = "Quoted \"text\"\twith <tags> & é"
		}
		if i%11 == 0 {
			ep.StopReason = pipeline.StopMaxSteps
		}
		if i%4 == 0 { // a repeated search, then the Finish
			ep = episodetest.Episode(fmt.Sprintf("e%02d", i), q, fmt.Sprintf("Search[%d]", i%3), fmt.Sprintf("search[ %d ]", i%3), "Finish[Aldbrook]")
			ep.Steps[0].Argument, ep.Steps[1].Argument = fmt.Sprint(i%3), fmt.Sprintf(" %d ", i%3)
		}
		if i == 7 { // a stale mask, from a record kept before: removed
			ep.MaskedSteps = []pipeline.MaskedStep{{Step: 1, Code: "invalid_action"}}
		}
		eps = append(eps, ep)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, pipeline.EpisodesFile)
	w, err := pipeline.CreateJSONL(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		w.Write(ep)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, rules := range [][]string{
		{"correct", "finished"},
		{"correct", "dedupe"},
		{"finished", "dedupe", "balance"},
	} {
		for _, twoPass := range []bool{true, false} {
			t.Run(fmt.Sprint(rules, twoPass), func(t *testing.T) {
				cfg := pipeline.Default().Filter
				cfg.Rules, cfg.MaxPerQuestion, cfg.BalanceBy = rules, 2, "type"
				cfg.MaskSteps = []string{"repeated_search", "error_observation"}
				reopen := func() iter.Seq2[pipeline.Episode, error] { return pipeline.ReadEpisodes(log) }
				c, err := New(cfg, pipeline.TaskHotpotQA, Options{Reopen: reopen})
				if err != nil {
					t.Fatal(err)
				}
				wantK, wantR, wantSt := writeVerdicts(t, dir, "enc", func(kept, rejected *pipeline.JSONLWriter) (Stats, error) {
					return c.Run(t.Context(), pipeline.ReadEpisodes(log),
						func(ep pipeline.Episode) error { return kept.Write(ep) },
						func(r pipeline.Rejected) error { return rejected.Write(r) })
				})
				var again func() iter.Seq2[pipeline.EpisodeLine, error]
				if twoPass {
					again = func() iter.Seq2[pipeline.EpisodeLine, error] { return pipeline.ReadEpisodeLines(log, false) }
				}
				gotK, gotR, gotSt := writeVerdicts(t, dir, "copy", func(kept, rejected *pipeline.JSONLWriter) (Stats, error) {
					return c.RunLines(t.Context(), pipeline.ReadEpisodeLines(log, true), again, kept.WriteLine, rejected.WriteRejected)
				})
				if !bytes.Equal(gotK, wantK) || !bytes.Equal(gotR, wantR) {
					t.Errorf("kept or rejected differ:\n%s\n%s\n---\n%s\n%s", gotK, gotR, wantK, wantR)
				}
				if !reflect.DeepEqual(gotSt, wantSt) {
					t.Errorf("stats %+v, want %+v", gotSt, wantSt)
				}
				if len(wantK) == 0 || len(wantR) == 0 {
					t.Errorf("the case keeps %d and rejects %d bytes: want both", len(wantK), len(wantR))
				}
				masked := 0
				for ep, err := range pipeline.ReadEpisodes(filepath.Join(dir, "copy-kept")) {
					if err != nil {
						t.Fatal(err)
					}
					want := []pipeline.MaskedStep(nil)
					if len(ep.Steps) == 3 {
						want = []pipeline.MaskedStep{{Step: 2, Code: "repeated_search"}}
						masked++
					}
					if !reflect.DeepEqual(ep.MaskedSteps, want) {
						t.Errorf("kept %s: masked steps %v, want %v", ep.ID, ep.MaskedSteps, want)
					}
				}
				if masked == 0 || gotSt.MaskedEpisodes != masked || gotSt.Masked["repeated_search"] != masked {
					t.Errorf("%d kept episodes with a repeated search; stats count %d (%v)", masked, gotSt.MaskedEpisodes, gotSt.Masked)
				}
			})
		}
	}
}
