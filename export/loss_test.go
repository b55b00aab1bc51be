package export

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestCompletionTrainsNoObservation: the completion and alpaca formats put their loss on
// the whole completion (output), so with export.train_observations off no observation may
// be in it: one row per step, each completion one step's thought and action. With it on,
// one row per example holds the whole trajectory, observations included.
func TestCompletionTrainsNoObservation(t *testing.T) {
	const n = 12
	steps := 0
	for i := range n {
		steps += len(episodetest.Synth(i).Steps)
	}
	for _, trainObs := range []bool{false, true} {
		cfg := pipeline.ExportConfig{Formats: []string{"completion", "alpaca"}, TrainObservations: trainObs,
			Views: []string{ViewReAct, ViewAct, ViewStandard}}
		res, dir := runExport(t, cfg, episodetest.Stream(n, nil))
		for _, f := range res.Files {
			if f.Format != "completion" && f.Format != "alpaca" {
				continue
			}
			rows := readJSONLRows(t, filepath.Join(dir, f.Path))
			want := n
			if f.View != ViewStandard && !trainObs {
				want = steps
			}
			if len(rows) != want || f.Rows != want {
				t.Errorf("train_observations %v, %s: %d rows (listed %d), want %d", trainObs, f.Path, len(rows), f.Rows, want)
			}
			key := "completion"
			if f.Format == "alpaca" {
				key = "output"
			}
			withObs := 0
			for _, row := range rows {
				if strings.Contains(row[key].(string), "\nObservation ") {
					withObs++
				}
			}
			if wantObs := trainObs && f.View != ViewStandard; wantObs != (withObs == len(rows)) || !wantObs && withObs > 0 {
				t.Errorf("train_observations %v, %s: %d of %d trained texts hold an observation", trainObs, f.Path, withObs, len(rows))
			}
			if trainObs || f.View == ViewStandard {
				checkJSONLRows(t, f.Format, rows, expected(t, n, cfg, f.View, f.Split), cfg)
			}
		}
	}
}
