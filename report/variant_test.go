package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/chart"
	"github.com/reactgen/reactgen/pipeline"
)

// setConfig changes one setting of a run directory's recorded config.
func setConfig(t *testing.T, dir, section, key string, v any) {
	t.Helper()
	m, err := pipeline.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Config[section].(map[string]any)
	if s == nil {
		s = map[string]any{}
		m.Config[section] = s
	}
	s[key] = v
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
}

// TestCompareKeepsSameMethodRunsApart: runs sharing method, model and task (chat
// against tools, two temperatures, or nothing but their directory) each keep their own
// row, label and colour, labelled by what differs; none overwrites another.
func TestCompareKeepsSameMethodRunsApart(t *testing.T) {
	eps := []pipeline.Episode{ep("a", "q1", "bridge", "Oslo", "Oslo", 0, 2, pipeline.StopFinished)}
	chat := writeRun(t, pipeline.TaskHotpotQA, "react", "gpt-4o-mini", eps, nil)
	tools := writeRun(t, pipeline.TaskHotpotQA, "react", "gpt-4o-mini", eps, nil)
	setConfig(t, tools, "generate", "format", "tools")
	hot := writeRun(t, pipeline.TaskHotpotQA, "react", "gpt-4o-mini", eps, nil)
	setConfig(t, hot, "generate", "format", "tools")
	setConfig(t, hot, "llm", "temperature", 0.7)
	twin := writeRun(t, pipeline.TaskHotpotQA, "react", "gpt-4o-mini", eps, nil)
	for _, d := range []string{chat, tools, twin} {
		setConfig(t, d, "llm", "temperature", 0)
	}
	other := writeRun(t, pipeline.TaskHotpotQA, "act", "gpt-4o-mini", eps, nil)

	runs, err := Load([]string{chat, tools, hot, twin, other})
	if err != nil {
		t.Fatal(err)
	}
	rows := Rows(runs)
	if len(rows) != 5 {
		t.Fatalf("%d rows for 5 runs: %+v", len(rows), rows)
	}
	labels := map[string]bool{}
	for _, r := range rows {
		if labels[r.Label] {
			t.Errorf("label %q twice", r.Label)
		}
		labels[r.Label] = true
	}
	for _, want := range []string{"react [format chat, temperature 0, " + filepath.Base(chat) + "]", "react [format chat, temperature 0, " + filepath.Base(twin) + "]",
		"react [format tools, temperature 0]", "react [format tools, temperature 0.7]", "act"} {
		if !labels[want] {
			t.Errorf("no row labelled %q in %v", want, labels)
		}
	}
	if other := runs[4]; other.Variant != "" {
		t.Errorf("a run no other shares its method with got variant %q", other.Variant)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, runs); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(table.String(), "gpt-4o-mini"); n != 5 {
		t.Errorf("the table has %d rows of the model, want 5:\n%s", n, table.String())
	}
	for _, c := range Charts(runs) {
		if c.Name != "accuracy-hotpotqa" {
			continue
		}
		for l := range labels {
			if !strings.Contains(c.SVG, l) {
				t.Errorf("the accuracy chart lacks the label %q", l)
			}
		}
	}
}

func TestChartsKeepLongLabelsAndDistinctColours(t *testing.T) {
	long := "react [format tools, exemplars prompts_naive.json#webthink_simple6, temperature 0.7] · ft:gpt-4o-mini-2024-07-18:acme::x1"
	var bars []chart.Bar
	seen := map[string]bool{}
	for i := range 20 {
		bars = append(bars, chart.Bar{Label: long + strings.Repeat("!", i), Value: 0.5, Colour: i})
		c := chart.Colour(i)
		if seen[c] {
			t.Errorf("colour %d repeats %s", i, c)
		}
		seen[c] = true
	}
	c := chart.Bars("x", "x", bars, 1, pctTick)
	if !strings.Contains(c.SVG, ">"+strings.ReplaceAll(long, "&", "&amp;")+"<") || c.Width <= chart.Width {
		t.Errorf("a long label is cut or the chart did not widen (width %d)", c.Width)
	}
	// No run rejected anything and none recorded a cost: no chart of nothing.
	run := &Run{Method: "react", Model: "m", Task: pipeline.TaskHotpotQA, Steps: map[int]int{}, Rejects: map[string]int{}}
	for _, c := range Charts([]*Run{run}) {
		if c.Name == "rejects" || c.Name == "cost" || c.Name == "steps" {
			t.Errorf("an empty %s chart was drawn", c.Name)
		}
	}
}
