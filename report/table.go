package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/reactgen/reactgen/pipeline"
)

// Row is one line of Table 1: a method and model with its HotpotQA and FEVER runs.
type Row struct {
	Label, Model    string
	HotpotQA, FEVER *Run
}

// Rows groups runs into Table 1's rows, one per (label, model), in the order first seen.
// When two runs of the same row and task are given, the later one wins.
func Rows(runs []*Run) []Row {
	var rows []Row
	index := map[string]int{}
	for _, r := range runs {
		k := r.Label() + "\x00" + r.Model
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			rows = append(rows, Row{Label: r.Label(), Model: r.Model})
		}
		if r.Task == pipeline.TaskFEVER {
			rows[i].FEVER = r
		} else {
			rows[i].HotpotQA = r
		}
	}
	return rows
}

func pct(x float64) string { return fmt.Sprintf("%.1f", 100*x) }

func ci(e Estimate) string { return fmt.Sprintf("[%s, %s]", pct(e.Lo), pct(e.Hi)) }

// WriteTable prints the paper's Table 1 layout: rows are method and model, columns
// HotpotQA EM and FEVER accuracy (percent), each with its n and 95% confidence interval.
func WriteTable(w io.Writer, runs []*Run) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "method\tmodel\tHotpotQA EM\tF1\tn\t95% CI\tFEVER acc\tn\t95% CI\t")
	for _, row := range Rows(runs) {
		cells := []string{row.Label, row.Model}
		if r := row.HotpotQA; r != nil && r.N > 0 {
			cells = append(cells, pct(r.EM.Value), pct(r.F1.Value), fmt.Sprint(r.N), ci(r.EM))
		} else {
			cells = append(cells, "-", "-", "-", "-")
		}
		if r := row.FEVER; r != nil && r.N > 0 {
			cells = append(cells, pct(r.Accuracy.Value), fmt.Sprint(r.N), ci(r.Accuracy))
		} else {
			cells = append(cells, "-", "-", "-")
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	return tw.Flush()
}

// WriteDetails prints one run's breakdown: per type and level, steps, tokens, cost and
// stop reasons.
func WriteDetails(w io.Writer, r *Run) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	metric := "EM"
	if r.Task == pipeline.TaskFEVER {
		metric = "accuracy"
	}
	fmt.Fprintf(tw, "run\t%s (%s, %s, %s)\n", r.Dir, r.Task, r.Label(), r.Model)
	fmt.Fprintf(tw, "%s\t%s%% %s (n %d, %d correct", metric, pct(r.Accuracy.Value), ci(r.Accuracy), r.N, r.Correct)
	if r.Unfinished > 0 {
		fmt.Fprintf(tw, ", %d unfinished not scored", r.Unfinished)
	}
	fmt.Fprintln(tw, ")")
	if r.Task != pipeline.TaskFEVER && r.N > 0 {
		fmt.Fprintf(tw, "F1\t%s%% %s\n", pct(r.F1.Value), ci(r.F1))
	}
	for _, g := range []struct {
		name string
		m    map[string]Estimate
	}{{"by type", r.ByType}, {"by level", r.ByLevel}, {"by branch", r.ByBranch}} {
		for _, k := range slices.Sorted(maps.Keys(g.m)) {
			e := g.m[k]
			fmt.Fprintf(tw, "%s %s\t%s%% %s (n %d)\n", g.name, k, pct(e.Value), ci(e), e.N)
		}
	}
	fmt.Fprintf(tw, "mean steps\t%.2f (answered episodes)\n", r.MeanSteps)
	fmt.Fprintf(tw, "stop reasons\t%s\n", counts(r.StopReasons))
	fmt.Fprintf(tw, "llm calls\t%d\n", r.LLMCalls)
	fmt.Fprintf(tw, "tokens\t%d prompt, %d completion\n", r.Usage.PromptTokens, r.Usage.CompletionTokens)
	fmt.Fprintf(tw, "cost\t%s (per correct episode: %s)\n", r.Usage.CostText(), r.Usage.CostPerText(r.CorrectAll))
	return tw.Flush()
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
