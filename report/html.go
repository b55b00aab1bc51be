package report

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/internal/chart"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

// ReportFile is the HTML report's name in the output directory; the charts are written
// beside it as charts/<name>.svg.
const (
	ReportFile = "report.html"
	ChartsDir  = "charts"
)

func runName(r *Run) string {
	return fmt.Sprintf("%s · %s · %s", r.Label(), r.Model, r.Task)
}

func pctTick(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }

// Charts draws every chart the runs have data for.
func Charts(runs []*Run) []chart.Chart {
	var charts []chart.Chart
	for _, task := range []string{pipeline.TaskHotpotQA, pipeline.TaskFEVER} {
		var bars []chart.Bar
		for i, r := range runs {
			if r.Task == task && r.N > 0 {
				bars = append(bars, chart.Bar{Label: r.Label() + " · " + r.Model, Value: r.Accuracy.Value, Lo: r.Accuracy.Lo, Hi: r.Accuracy.Hi,
					HasCI: true, Note: fmt.Sprintf("n %d", r.N), Colour: i})
			}
		}
		if len(bars) > 0 {
			metric := "EM"
			if task == pipeline.TaskFEVER {
				metric = "accuracy"
			}
			charts = append(charts, chart.Bars("accuracy-"+task, fmt.Sprintf("%s %s per method, with 95%% CI", taskTitle(task), metric), bars, 1, pctTick))
		}
	}
	if c, ok := trainingChart(runs); ok {
		charts = append(charts, c)
	}
	anySteps := false
	for _, r := range runs {
		anySteps = anySteps || len(r.Steps) > 0
	}
	if anySteps {
		charts = append(charts, stepsChart(runs))
	}
	var typeBars []chart.Bar
	for i, r := range runs {
		for _, k := range slices.Sorted(maps.Keys(r.ByType)) {
			e := r.ByType[k]
			typeBars = append(typeBars, chart.Bar{Label: r.Label() + " · " + k, Value: e.Value, Lo: e.Lo, Hi: e.Hi, HasCI: true,
				Note: fmt.Sprintf("n %d", e.N), Colour: i})
		}
	}
	if len(typeBars) > 0 {
		charts = append(charts, chart.Bars("by-type", "Success by question type (FEVER: gold label), with 95% CI", typeBars, 1, pctTick))
	}
	if c, ok := costChart(runs); ok {
		charts = append(charts, c)
	}
	if c, ok := rejectsChart(runs); ok {
		charts = append(charts, c)
	}
	return charts
}

// costChart is the cost per correct episode of each run; false when no run recorded a
// cost.
func costChart(runs []*Run) (chart.Chart, bool) {
	var costBars []chart.Bar
	anyCost := false
	for _, r := range runs {
		anyCost = anyCost || r.Usage.CostUSD > 0 || r.Usage.UnpricedCalls > 0
	}
	for i, r := range runs {
		if !anyCost {
			break // no run recorded a cost: no chart of zeros
		}
		note := fmt.Sprintf("%d correct", r.CorrectAll)
		switch {
		case r.Usage.UnpricedCalls > 0:
			note += ", " + r.Usage.CostPerText(r.CorrectAll) + " each"
		case r.Usage.CostUSD == 0:
			note += ", no cost recorded"
		}
		costBars = append(costBars, chart.Bar{Label: runName(r), Value: r.CostPerCorrect, Note: note, Colour: i})
	}
	if len(costBars) == 0 {
		return chart.Chart{}, false
	}
	return chart.Bars("cost", "Cost per correct episode (USD)", costBars, 0, func(v float64) string { return fmt.Sprintf("$%.4f", v) }), true
}

// rejectsChart is each run's filter rejects by reason; false when no run rejected
// anything.
func rejectsChart(runs []*Run) (chart.Chart, bool) {
	var rejBars []chart.Bar
	most := 4.0 // count axes get at least four whole ticks
	anyRejects := false
	for _, r := range runs {
		anyRejects = anyRejects || len(r.Rejects) > 0
	}
	for i, r := range runs {
		if !anyRejects {
			break // the filter rejected nothing in any run: no empty chart
		}
		for _, k := range slices.Sorted(maps.Keys(r.Rejects)) {
			rejBars = append(rejBars, chart.Bar{Label: runName(r) + " · " + k, Value: float64(r.Rejects[k]), Colour: i})
			most = max(most, float64(r.Rejects[k]))
		}
		if len(r.Rejects) == 0 {
			rejBars = append(rejBars, chart.Bar{Label: runName(r) + " · none", Value: 0, Note: fmt.Sprintf("%d kept", r.Kept), Colour: i})
		}
	}
	if len(rejBars) == 0 {
		return chart.Chart{}, false
	}
	return chart.Bars("rejects", "Filter reject reasons per run (episodes)", rejBars, chart.NiceMax(most), func(v float64) string { return fmt.Sprintf("%.0f", v) }), true
}

func taskTitle(task string) string {
	if task == pipeline.TaskFEVER {
		return "FEVER"
	}
	return "HotpotQA"
}

// trainingChart is the Figure 3 shape: accuracy against the number of training
// trajectories, one line per task and method, when runs are linked to the jobs that
// fine-tuned their models; else accuracy per model when the runs hold several models.
func trainingChart(runs []*Run) (chart.Chart, bool) {
	byKey := map[string]*chart.Series{}
	var keys []string
	for _, r := range runs {
		if r.TrainExamples == 0 || r.N == 0 {
			continue
		}
		k := taskTitle(r.Task) + " " + r.Label()
		if byKey[k] == nil {
			byKey[k] = &chart.Series{Name: k}
			keys = append(keys, k)
		}
		byKey[k].Points = append(byKey[k].Points, chart.Point{X: float64(r.TrainExamples), Y: r.Accuracy.Value, Lo: r.Accuracy.Lo, Hi: r.Accuracy.Hi})
	}
	if len(keys) > 0 {
		series := make([]chart.Series, 0, len(keys))
		for _, k := range keys {
			s := byKey[k]
			sort.Slice(s.Points, func(i, j int) bool { return s.Points[i].X < s.Points[j].X })
			series = append(series, *s)
		}
		return chart.Lines("training", "Accuracy against training trajectories (fine-tuned models)", "training trajectories", series, true), true
	}
	var models []string
	for _, r := range runs {
		if !slices.Contains(models, r.Model) {
			models = append(models, r.Model)
		}
	}
	if len(models) < 2 {
		return chart.Chart{}, false
	}
	var bars []chart.Bar
	for _, m := range models {
		for _, r := range runs {
			if r.Model == m && r.N > 0 {
				bars = append(bars, chart.Bar{Label: m + " · " + r.Label() + " · " + taskTitle(r.Task), Value: r.Accuracy.Value, Lo: r.Accuracy.Lo,
					Hi: r.Accuracy.Hi, HasCI: true, Note: fmt.Sprintf("n %d", r.N), Colour: slices.Index(models, m)})
			}
		}
	}
	return chart.Bars("by-model", "Accuracy per model, with 95% CI", bars, 1, pctTick), true
}

func stepsChart(runs []*Run) chart.Chart {
	maxStep := 1
	for _, r := range runs {
		for s := range r.Steps {
			maxStep = max(maxStep, s)
		}
	}
	bins := make([]int, maxStep)
	for i := range bins {
		bins[i] = i + 1
	}
	groups := make([]string, len(runs))
	counts := make([][]int, len(runs))
	for g, r := range runs {
		groups[g] = runName(r)
		counts[g] = make([]int, maxStep)
		for s, n := range r.Steps {
			if s >= 1 {
				counts[g][s-1] = n
			}
		}
	}
	return chart.Histogram("steps", "Steps to the answer (answered episodes, share per run)", groups, bins, counts)
}

// WriteHTML writes the self-contained report: Table 1, each run's details and every chart
// inline. It loads nothing from elsewhere.
func WriteHTML(w io.Writer, runs []*Run, charts []chart.Chart, generated time.Time) error {
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>reactgen report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:sans-serif;margin:24px;color:#222;max-width:980px}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
td:first-child,td:nth-child(2),th:first-child,th:nth-child(2){text-align:left}
h2{margin-top:32px}figure{margin:16px 0}pre{background:#f6f6f6;padding:8px;overflow-x:auto}
</style></head>
<body>
<h1>reactgen: runs compared</h1>
`)
	fmt.Fprintf(&b, "<p>%d runs, generated %s. Accuracy is HotpotQA exact match (official normalisation) or FEVER label accuracy over each question's first attempt; intervals are 95%% Wilson intervals (F1: normal approximation).</p>\n",
		len(runs), html.EscapeString(generated.UTC().Format(time.RFC3339)))
	b.WriteString(`<h2>Table 1</h2><table id="table1"><tr><th>method</th><th>model</th><th>HotpotQA EM</th><th>F1</th><th>n</th><th>95% CI</th><th>FEVER acc</th><th>n</th><th>95% CI</th></tr>` + "\n")
	for _, row := range Rows(runs) {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td>", html.EscapeString(row.Label), html.EscapeString(row.Model))
		if r := row.HotpotQA; r != nil && r.N > 0 {
			fmt.Fprintf(&b, "<td>%s</td><td>%s</td><td>%d</td><td>%s</td>", pct(r.EM.Value), pct(r.F1.Value), r.N, ci(r.EM))
		} else {
			b.WriteString("<td>-</td><td>-</td><td>-</td><td>-</td>")
		}
		if r := row.FEVER; r != nil && r.N > 0 {
			fmt.Fprintf(&b, "<td>%s</td><td>%d</td><td>%s</td>", pct(r.Accuracy.Value), r.N, ci(r.Accuracy))
		} else {
			b.WriteString("<td>-</td><td>-</td><td>-</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n<h2>Charts</h2>\n")
	for _, c := range charts {
		fmt.Fprintf(&b, "<figure id=\"chart-%s\">%s</figure>\n", html.EscapeString(c.Name), c.SVG)
	}
	b.WriteString("<h2>Runs</h2>\n")
	for _, r := range runs {
		var d strings.Builder
		WriteDetails(&d, r)
		fmt.Fprintf(&b, "<h3>%s</h3><pre>%s</pre>\n", html.EscapeString(runName(r)), html.EscapeString(d.String()))
	}
	// Counts the charts the browser laid out with marks in them, for the browser test and
	// for a person who wonders whether every chart drew.
	b.WriteString(`<script>
addEventListener('load', function () {
  var n = 0;
  document.querySelectorAll('svg.chart').forEach(function (s) {
    var r = s.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && s.querySelector('rect.bar, circle.point')) n++;
  });
  document.body.setAttribute('data-rendered-charts', String(n));
});
</script>
</body></html>
`)
	_, err := w.Write(b.Bytes())
	return err
}

// Write writes report.html and charts/<name>.svg into dir, each atomically, and returns
// the paths written.
// NotReportError is a compare --out directory that holds what compare did not write.
type NotReportError struct{ Dir, Entry, Why string }

func (e *NotReportError) Error() string {
	return fmt.Sprintf("compare --out %s: %s %s: compare writes only into a new or empty directory or over its own "+
		"earlier output (%s and %s/*.svg, *.png); choose another --out", e.Dir, e.Entry, e.Why, ReportFile, ChartsDir)
}

// CheckOut refuses a --out directory compare must not write into: one that is, or holds
// at ReportFile or ChartsDir, a symbolic link (compare would write through it), and one
// holding anything but an earlier report (ReportFile, ChartsDir with *.svg and *.png) and
// the hidden temporary files of a killed compare, which it removes. A missing or empty
// directory is fine.
func CheckOut(dir string) error {
	if err := safefile.NotLink(filepath.Clean(dir)); err != nil {
		return &NotReportError{Dir: dir, Entry: dir, Why: "is a symbolic link"}
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	check := func(where string, ents []os.DirEntry, ok func(os.DirEntry) bool) error {
		for _, e := range ents {
			p := filepath.Join(where, e.Name())
			switch {
			case strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") && e.Type().IsRegular():
				_ = os.Remove(p) // a killed compare's temporary file
			case e.Type()&fs.ModeSymlink != 0:
				return &NotReportError{Dir: dir, Entry: p, Why: "is a symbolic link"}
			case !ok(e):
				return &NotReportError{Dir: dir, Entry: p, Why: "was not written by compare"}
			}
		}
		return nil
	}
	if err := check(dir, ents, func(e os.DirEntry) bool {
		return e.Name() == ReportFile && e.Type().IsRegular() || e.Name() == ChartsDir && e.IsDir()
	}); err != nil {
		return err
	}
	charts := filepath.Join(dir, ChartsDir)
	cents, err := os.ReadDir(charts)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return check(charts, cents, func(e os.DirEntry) bool {
		ext := filepath.Ext(e.Name())
		return e.Type().IsRegular() && (ext == ".svg" || ext == ".png")
	})
}

func Write(dir string, runs []*Run, now time.Time) ([]string, error) {
	if err := CheckOut(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, ChartsDir), 0o755); err != nil {
		return nil, err
	}
	charts := Charts(runs)
	var paths []string
	for _, c := range charts {
		p := filepath.Join(dir, ChartsDir, c.Name+".svg")
		if err := atomicfile.WriteFile(p, func(w io.Writer) error {
			_, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+c.SVG+"\n")
			return err
		}); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	p := filepath.Join(dir, ReportFile)
	if err := atomicfile.WriteFile(p, func(w io.Writer) error { return WriteHTML(w, runs, charts, now) }); err != nil {
		return nil, err
	}
	return append([]string{p}, paths...), nil
}
