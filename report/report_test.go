package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	pngpkg "image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/chart"
	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

func near(a, b float64) bool { return math.Abs(a-b) < 5e-4 }

func TestWilson(t *testing.T) {
	tests := []struct {
		k, n   int
		lo, hi float64
	}{
		{50, 100, 0.4038, 0.5962}, // the textbook case
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{1, 3, 0.0615, 0.7923},
	}
	for _, tc := range tests {
		e := Wilson(tc.k, tc.n)
		if !near(e.Lo, tc.lo) || !near(e.Hi, tc.hi) || e.N != tc.n {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", tc.k, tc.n, e.Lo, e.Hi, tc.lo, tc.hi)
		}
	}
	if e := Wilson(0, 0); e != (Estimate{}) {
		t.Errorf("Wilson(0, 0) = %+v", e)
	}
	m := Mean([]float64{0, 0.5, 1})
	if !near(m.Value, 0.5) || !near(m.Lo, 0) || !near(m.Hi, 1) {
		t.Errorf("Mean = %+v", m)
	}
}

// writeRun writes a run directory with the given episodes and rejects.
func writeRun(t *testing.T, task, method, model string, eps []pipeline.Episode, rejects []pipeline.Rejected) string {
	t.Helper()
	dir := t.TempDir()
	policy := "llm"
	if model == "expert" {
		policy = "expert"
	}
	m := &pipeline.Manifest{Schema: 1, RunID: "run-" + method, Stages: map[string]*pipeline.StageRecord{}, Config: map[string]any{
		"task":     map[string]any{"name": task},
		"generate": map[string]any{"method": method, "policy": policy, "prompting": "few-shot", "format": "chat"},
		"llm":      map[string]any{"model": model},
	}}
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	write := func(name string, recs []any) {
		var b bytes.Buffer
		for _, r := range recs {
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(append(line, '\n'))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var all, kept []any
	for _, ep := range eps {
		all = append(all, ep)
		if ep.Correct {
			kept = append(kept, ep)
		}
	}
	var rej []any
	for _, r := range rejects {
		rej = append(rej, r)
	}
	write(pipeline.EpisodesFile, all)
	write(pipeline.KeptFile, kept)
	write(pipeline.RejectedFile, rej)
	return dir
}

func ep(id, qid, typ, pred, gold string, attempt, steps int, stop string) pipeline.Episode {
	e := pipeline.Episode{Schema: 1, ID: id, Task: pipeline.TaskHotpotQA, QuestionID: qid, QuestionType: typ, Method: "react",
		Prediction: pred, Answer: gold, Attempt: attempt, StopReason: stop, Finished: stop == pipeline.StopFinished,
		Usage: pipeline.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110, CostUSD: 0.01}}
	for range steps {
		e.Steps = append(e.Steps, pipeline.Step{Action: "Search[x]"})
	}
	if e.Finished {
		e.Correct, e.EM, e.F1 = score.Score(pipeline.TaskHotpotQA, pred, gold)
	}
	return e
}

func hotpotRun(t *testing.T) string {
	eps := []pipeline.Episode{
		ep("e1", "q1", "bridge", "Paris", "Paris", 0, 3, pipeline.StopFinished),
		ep("e2", "q2", "bridge", "the Paris", "Paris", 0, 2, pipeline.StopFinished), // EM after normalisation
		ep("e3", "q3", "comparison", "Lyon", "Paris", 0, 4, pipeline.StopFinished),
		ep("e4", "q4", "comparison", "", "yes", 0, 7, pipeline.StopMaxSteps),
		ep("e5", "q5", "bridge", "", "no", 0, 1, pipeline.StopError),                // unfinished: not scored
		ep("e6", "q3", "comparison", "Paris", "Paris", 1, 3, pipeline.StopFinished), // a later attempt: not scored
	}
	rationalized := ep("e7", "q4", "comparison", "yes", "yes", 2, 2, pipeline.StopFinished)
	rationalized.Rationalized = true
	eps = append(eps, rationalized)
	rej := []pipeline.Rejected{
		{Episode: eps[2], Rejects: []pipeline.Reject{{Rule: "correct", Code: "wrong_answer"}}},
		{Episode: eps[3], Rejects: []pipeline.Reject{{Rule: "finished", Code: "max_steps"}, {Rule: "correct", Code: "wrong_answer"}}},
	}
	return writeRun(t, pipeline.TaskHotpotQA, "react", "gpt-test", eps, rej)
}

func TestSummarize(t *testing.T) {
	r, err := Summarize(hotpotRun(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.Episodes != 7 || r.N != 4 || r.Unfinished != 1 || r.Correct != 2 {
		t.Fatalf("episodes %d, n %d, unfinished %d, correct %d; want 7, 4, 1, 2", r.Episodes, r.N, r.Unfinished, r.Correct)
	}
	if want := Wilson(2, 4); r.EM != want || r.Accuracy != want {
		t.Errorf("EM = %+v, want %+v", r.EM, want)
	}
	if r.ByType["bridge"].N != 2 || r.ByType["bridge"].Value != 1 || r.ByType["comparison"].Value != 0 {
		t.Errorf("by type = %+v", r.ByType)
	}
	if r.Steps[3] != 1 || r.Steps[2] != 1 || r.Steps[4] != 1 || r.Steps[7] != 0 || !near(r.MeanSteps, 3) {
		t.Errorf("steps = %v, mean %v", r.Steps, r.MeanSteps)
	}
	if r.StopReasons[pipeline.StopMaxSteps] != 1 || r.StopReasons[pipeline.StopFinished] != 3 {
		t.Errorf("stop reasons = %v", r.StopReasons)
	}
	// Cost over the whole log (7 episodes at $0.01) per correct episode of the log (4).
	if r.CorrectAll != 4 || !near(r.CostPerCorrect, 0.07/4) {
		t.Errorf("cost per correct = %v over %d correct", r.CostPerCorrect, r.CorrectAll)
	}
	if r.Rejects["correct/wrong_answer"] != 2 || r.Rejects["finished/max_steps"] != 1 || r.Kept != 4 || r.Rejected != 2 {
		t.Errorf("rejects = %v, kept %d, rejected %d", r.Rejects, r.Kept, r.Rejected)
	}
}

func feverRun(t *testing.T) string {
	var eps []pipeline.Episode
	labels := []string{pipeline.LabelSupports, pipeline.LabelRefutes, pipeline.LabelNEI}
	for i := range 9 {
		gold := labels[i%3]
		pred := gold
		if i >= 6 {
			pred = pipeline.LabelSupports
		}
		e := ep("f"+string(rune('a'+i)), "c"+string(rune('a'+i)), "", pred, gold, 0, 2, pipeline.StopFinished)
		e.Task = pipeline.TaskFEVER
		eps = append(eps, e)
	}
	return writeRun(t, pipeline.TaskFEVER, "react", "gpt-test", eps, nil)
}

func TestTable(t *testing.T) {
	runs, err := Load([]string{hotpotRun(t), feverRun(t)})
	if err != nil {
		t.Fatal(err)
	}
	if runs[1].Correct != 7 || runs[1].ByType[pipeline.LabelNEI].Value != 2.0/3 {
		t.Fatalf("fever: correct %d, by type %+v", runs[1].Correct, runs[1].ByType)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, runs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("table:\n%s", b.String())
	}
	// One row: the HotpotQA and FEVER runs of react with gpt-test side by side.
	fields := strings.Fields(lines[1])
	want := []string{"react", "gpt-test", "50.0", "50.0", "4", "[15.0,", "85.0]", "77.8", "9", "[45.3,", "93.7]"}
	if strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Errorf("row = %q\nwant %q", fields, want)
	}
}

var svgTag = regexp.MustCompile(`<svg [^>]*class="chart"`)

func TestReportIsSelfContained(t *testing.T) {
	runs, err := Load([]string{hotpotRun(t), feverRun(t)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := Write(dir, runs, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	// Nothing is loaded from elsewhere: the only URL is the SVG namespace.
	if rest := strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, ""); strings.Contains(rest, "http") || strings.Contains(rest, " src=") {
		t.Errorf("the report refers to something outside itself")
	}
	charts := Charts(runs)
	if n := len(svgTag.FindAllString(html, -1)); n != len(charts) || n < 6 {
		t.Errorf("%d charts in the HTML, want %d (at least 6)", n, len(charts))
	}
	for _, name := range []string{"accuracy-hotpotqa", "accuracy-fever", "steps", "by-type", "cost", "rejects"} {
		if !strings.Contains(html, `data-chart="`+name+`"`) {
			t.Errorf("chart %s missing", name)
		}
		svg, err := os.ReadFile(filepath.Join(dir, ChartsDir, name+".svg"))
		if err != nil || !bytes.HasPrefix(svg, []byte("<?xml")) {
			t.Errorf("charts/%s.svg: %v", name, err)
		}
	}
}

const chromium = Chromium

func chromiumArgs(t *testing.T, extra ...string) []string { return ChromiumArgs(t.TempDir(), extra...) }

// TestReportInBrowser opens the report in headless Chromium: the page loads from a file,
// its script finds every chart laid out with marks in it, a screenshot is taken, and
// each chart's own PNG (compare --png) shows that chart, not a blank or its title alone.
func TestReportInBrowser(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skip("no Chromium at /usr/bin/chromium (make chromium installs Debian's)")
	}
	runs, err := Load([]string{hotpotRun(t), feverRun(t)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := Write(dir, runs, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + paths[0]
	out, err := exec.CommandContext(t.Context(), chromium, chromiumArgs(t, "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	dom := string(out)
	want := len(Charts(runs))
	if n := len(svgTag.FindAllString(dom, -1)); n != want {
		t.Errorf("the rendered DOM holds %d charts, want %d", n, want)
	}
	m := regexp.MustCompile(`data-rendered-charts="(\d+)"`).FindStringSubmatch(dom)
	if m == nil || m[1] != strconv.Itoa(want) {
		t.Errorf("charts laid out with marks = %v, want %d (the page's script did not see them all)", m, want)
	}
	if !strings.Contains(dom, `<table id="table1">`) {
		t.Errorf("Table 1 is not in the rendered page")
	}
	png := filepath.Join(dir, "report.png")
	if err := exec.CommandContext(t.Context(), chromium, chromiumArgs(t, "--hide-scrollbars", "--window-size=1000,2400", "--screenshot="+png, url)...).Run(); err != nil {
		t.Fatalf("chromium --screenshot: %v", err)
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10000 {
		t.Errorf("screenshot: %d bytes, %v", len(b), err)
	}
	// Each chart as a PNG of its own size, for a dataset card.
	charts := Charts(runs)
	pngs, err := WritePNGs(t.Context(), chromium, dir, charts)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pngs {
		checkChartPNG(t, p, charts[i])
	}
}

// titleBand is the top of a chart that holds only its title (svgOpen draws it at y=20).
const titleBand = 28

// checkChartPNG decodes a chart's PNG and asserts it is the chart's size and shows the
// chart itself: pixels of the palette's mark colours (bars, points, lines, legend keys)
// below the title band. A screenshot that clips the chart to its title, or comes out
// blank, has none.
func checkChartPNG(t *testing.T, path string, c chart.Chart) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := pngpkg.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() != c.Width || b.Dy() != c.Height {
		t.Errorf("%s: %dx%d, want %dx%d", path, b.Dx(), b.Dy(), c.Width, c.Height)
	}
	var marks, inked int
	for y := b.Min.Y + titleBand; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			px := [3]int{int(r >> 8), int(g >> 8), int(bl >> 8)}
			if px != [3]int{255, 255, 255} {
				inked++
			}
			if isMarkColour(px) {
				marks++
			}
		}
	}
	// A bar of the test's smallest value is a few hundred pixels; a blank or
	// title-only picture has no mark pixel at all.
	if marks < 200 {
		t.Errorf("%s (%s): %d pixels of a mark colour below the title band (%d not white), want at least 200: the chart is not in the picture", path, c.Name, marks, inked)
	}
	// And each bar of the SVG is where the SVG puts it: most of its inside (a CI line may
	// cross it) has its fill.
	for _, tag := range barTag.FindAllString(c.SVG, -1) {
		var x, y, w, h float64
		var fill [3]int
		_, errX := fmt.Sscan(attr(tag, "x"), &x)
		_, errY := fmt.Sscan(attr(tag, "y"), &y)
		_, errW := fmt.Sscan(attr(tag, "width"), &w)
		_, errH := fmt.Sscan(attr(tag, "height"), &h)
		_, errF := fmt.Sscanf(attr(tag, "fill"), "#%02x%02x%02x", &fill[0], &fill[1], &fill[2])
		if err := errors.Join(errX, errY, errW, errH, errF); err != nil {
			t.Fatalf("%s: bar %s: %v", c.Name, tag, err)
		}
		if w < 3 || h < 3 {
			continue // a zero or hairline bar has no inside free of anti-aliasing
		}
		inside := image.Rect(int(x)+1, int(y)+1, int(x+w)-1, int(y+h)-1).Add(b.Min)
		filled := 0
		for py := inside.Min.Y; py < inside.Max.Y; py++ {
			for px := inside.Min.X; px < inside.Max.X; px++ {
				r, g, bl, _ := img.At(px, py).RGBA()
				if colourDistance([3]int{int(r >> 8), int(g >> 8), int(bl >> 8)}, fill) <= 3*8*8 {
					filled++
				}
			}
		}
		if area := inside.Dx() * inside.Dy(); filled < area*4/5 {
			t.Errorf("%s (%s): %d of the %d pixels inside bar %s have its fill %v, want at least 80%%", path, c.Name, filled, area, tag, fill)
		}
	}
}

// barTag is a chart's bar as svg.go draws it; attr reads one attribute of such a tag.
var barTag = regexp.MustCompile(`<rect [^>]*class="bar"[^>]*>`)

func attr(tag, name string) string {
	m := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	return m[1]
}

func colourDistance(a, b [3]int) int {
	d := 0
	for i := range a {
		d += (a[i] - b[i]) * (a[i] - b[i])
	}
	return d
}

// isMarkColour says whether px is (within anti-aliasing) one of the palette's colours
// other than black, which text and axes share.
func isMarkColour(px [3]int) bool {
	for _, hex := range chart.Palette {
		var c [3]int
		if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &c[0], &c[1], &c[2]); err != nil || c == [3]int{} {
			continue
		}
		if colourDistance(px, c) <= 3*8*8 {
			return true
		}
	}
	return false
}

// TestTrainingChart: an eval run of a fine-tuned model is placed at the number of
// training rows of the job, recorded in the training run, that produced the model.
func TestTrainingChart(t *testing.T) {
	train := hotpotRun(t)
	m, err := pipeline.ReadManifest(train)
	if err != nil {
		t.Fatal(err)
	}
	m.Training = []pipeline.TrainingJob{
		{FineTunedModel: "ft:small", Status: pipeline.JobSucceeded, Files: []pipeline.TrainingFile{{Split: "train", Rows: 500}}},
		{FineTunedModel: "ft:large", Status: pipeline.JobSucceeded, Files: []pipeline.TrainingFile{{Split: "train", Rows: 3000}}},
	}
	if err := m.Write(train); err != nil {
		t.Fatal(err)
	}
	evalRun := func(model string) string {
		var eps []pipeline.Episode
		for i := range 8 {
			q := fmt.Sprintf("q%d", i)
			pred := "Paris"
			if model == "ft:small" && i%2 == 0 {
				pred = "Lyon"
			}
			eps = append(eps, ep("e"+q, q, "bridge", pred, "Paris", 0, 3, pipeline.StopFinished))
		}
		return writeRun(t, pipeline.TaskHotpotQA, "react", model, eps, nil)
	}
	runs, err := Load([]string{train, evalRun("ft:small"), evalRun("ft:large")})
	if err != nil {
		t.Fatal(err)
	}
	if runs[1].TrainExamples != 500 || runs[2].TrainExamples != 3000 || runs[0].TrainExamples != 0 {
		t.Fatalf("training examples = %d, %d, %d", runs[0].TrainExamples, runs[1].TrainExamples, runs[2].TrainExamples)
	}
	var chart *chart.Chart
	for _, c := range Charts(runs) {
		if c.Name == "training" {
			chart = &c
		}
	}
	if chart == nil {
		t.Fatal("no training chart")
	}
	if n := strings.Count(chart.SVG, `class="point"`); n != 2 {
		t.Errorf("%d points, want 2 (500 and 3000 trajectories)", n)
	}
	if !strings.Contains(chart.SVG, "50.0% at 500") || !strings.Contains(chart.SVG, "100.0% at 3000") {
		t.Errorf("the points do not carry the accuracies:\n%s", chart.SVG)
	}
}
