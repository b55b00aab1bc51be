// Package report scores and compares run directories the way the ReAct paper reports
// its results. It reads a run directory through pipeline.Summarize, the one count of a
// run's episodes and verdicts (the run summary `reactgen stats` prints), and builds a
// Run on it: HotpotQA EM and F1 with the official normalisation, FEVER accuracy, 95%
// confidence intervals, per question type and level, steps, tokens, cost and stop
// reasons. From the Runs it writes the paper's Table 1 as text and a self-contained HTML
// report whose charts are inline SVG drawn here, with the same charts as standalone SVG
// files. Compare does all of that for `reactgen compare`, and Inspect
// prints a run's episodes for a person to read (`reactgen inspect`).
//
// Imports: pipeline and the internal/ libraries (score, chart, dataset); never a stage.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// Estimate is a proportion or mean with its 95% confidence interval, all in [0, 1].
type Estimate struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	N     int     `json:"n"`
}

// z is the 97.5% quantile of the standard normal: a two-sided 95% interval.
const z = 1.959963984540054

// Wilson is the proportion k/n with its Wilson score interval, which stays inside [0, 1]
// and is sound for small n and for proportions near 0 or 1 (unlike the normal
// approximation).
func Wilson(k, n int) Estimate {
	if n == 0 {
		return Estimate{}
	}
	p := float64(k) / float64(n)
	nf := float64(n)
	d := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / d
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return Estimate{Value: p, Lo: math.Max(0, center-half), Hi: math.Min(1, center+half), N: n}
}

// Mean is the mean of xs with a normal-approximation interval (mean ± z·sd/√n), clipped to
// [0, 1]: for F1, whose values lie in [0, 1].
func Mean(xs []float64) Estimate {
	n := len(xs)
	if n == 0 {
		return Estimate{}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	m := sum / float64(n)
	if n == 1 {
		return Estimate{Value: m, Lo: 0, Hi: 1, N: 1}
	}
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	half := z * math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	return Estimate{Value: m, Lo: math.Max(0, m-half), Hi: math.Min(1, m+half), N: n}
}

// Run is the summary of one run directory.
type Run struct {
	Dir       string `json:"dir"`
	RunID     string `json:"run_id"`
	Task      string `json:"task"`
	Method    string `json:"method"`
	Model     string `json:"model"` // the model name, or "expert"
	Prompting string `json:"prompting"`
	Format    string `json:"format,omitempty"`
	// TrainExamples is the number of training trajectories the model was fine-tuned on,
	// when a run given to Load recorded the job that produced the model; else 0.
	TrainExamples int `json:"train_examples,omitempty"`

	Episodes       int                    `json:"episodes"`   // every record in the log
	N              int                    `json:"n"`          // scored: first attempts that reached an outcome
	Unfinished     int                    `json:"unfinished"` // first attempts cut by an error, the budget or a stop
	Correct        int                    `json:"correct"`
	Accuracy       Estimate               `json:"accuracy"` // FEVER accuracy; HotpotQA: EM
	EM             Estimate               `json:"em"`
	F1             Estimate               `json:"f1"`
	ByType         map[string]Estimate    `json:"by_type,omitempty"`   // accuracy per question type (FEVER: gold label)
	ByLevel        map[string]Estimate    `json:"by_level,omitempty"`  // HotpotQA: easy, medium, hard
	ByBranch       map[string]Estimate    `json:"by_branch,omitempty"` // combined methods: the method that answered
	Steps          map[int]int            `json:"steps"`               // steps of the scored episodes that answered
	MeanSteps      float64                `json:"mean_steps"`          // over those
	StopReasons    map[string]int         `json:"stop_reasons"`
	Usage          pipeline.Usage         `json:"usage"` // over every episode of the log
	LLMCalls       int                    `json:"llm_calls"`
	CostPerCorrect float64                `json:"cost_per_correct_usd"` // usage cost over correct episodes of the log
	CorrectAll     int                    `json:"correct_all"`          // correct episodes of the log, every attempt
	Rounds         map[int]int            `json:"rounds,omitempty"`     // STaR: kept examples per round
	Kept           int                    `json:"kept"`
	Rejected       int                    `json:"rejected"`
	Rejects        map[string]int         `json:"rejects"` // rule/code of the filter's rejects
	Training       []pipeline.TrainingJob `json:"training,omitempty"`
	// Variant tells this run apart from the other runs given with it that share its
	// method, model and task: the settings in which they differ ("format tools",
	// "temperature 0.7"), else its directory's name. Empty when no other run shares them.
	Variant string `json:"variant,omitempty"`

	config map[string]any // the manifest's config, for Variant
}

// Label is the row name of a run: method, how it was prompted when not few-shot, and
// its variant when other runs share its method, model and task.
func (r *Run) Label() string {
	l := r.Method
	if r.Prompting != "" && r.Prompting != "few-shot" {
		l += " (" + r.Prompting + ")"
	}
	if r.Variant != "" {
		l += " [" + r.Variant + "]"
	}
	return l
}

// levels and types are read from the task file when the records do not carry them.
type questionInfo struct{ typ, level string }

// Summarize reads the run in dir as an evaluation: each question's first attempt, scored
// again when it finished, with 95% intervals, as the paper's tables report a method. The
// counting is pipeline.Summarize's, the run summary `reactgen stats` prints: the whole
// log's episodes, calls, usage and correct ones, the filter's verdicts and each
// question's first attempt; Summarize scores the first attempts and adds the estimates
// and the labels.
func Summarize(dir string) (*Run, error) {
	m, err := pipeline.ReadManifest(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, pipeline.ErrNoRun)
	}
	if err != nil {
		return nil, err
	}
	s, err := pipeline.Summarize(dir, m, pipeline.SummaryOptions{FirstAttempts: true})
	if err != nil {
		return nil, err
	}
	r := newRun(dir, m)
	r.count(s)
	r.score(s.FirstAttempts, taskLevels(configString(m.Config, "task", "path"), r.Task))
	return r, nil
}

// newRun is the run's row as its manifest describes it, nothing counted yet.
func newRun(dir string, m *pipeline.Manifest) *Run {
	r := &Run{Dir: dir, RunID: m.RunID, ByType: map[string]Estimate{}, ByLevel: map[string]Estimate{}, ByBranch: map[string]Estimate{},
		Steps: map[int]int{}, StopReasons: map[string]int{}, Training: m.Training, config: m.Config}
	r.Task = configString(m.Config, "task", "name")
	r.Method = configString(m.Config, "generate", "method")
	r.Prompting = configString(m.Config, "generate", "prompting")
	if r.Prompting == "" {
		r.Prompting = "few-shot"
	}
	r.Model = configString(m.Config, "llm", "model")
	if configString(m.Config, "generate", "policy") == "expert" {
		r.Model, r.Prompting = "expert", ""
	} else {
		r.Format = configString(m.Config, "generate", "format")
	}
	return r
}

// count takes the counts of the whole log and of the filter's verdicts from the run's
// summary: every record's usage, calls and correct ones (the cost per correct episode is
// over those), and the kept episodes per STaR round.
func (r *Run) count(s *pipeline.Summary) {
	r.Episodes, r.Usage, r.LLMCalls, r.CorrectAll = s.Episodes, s.Usage, s.LLMCalls, s.Correct
	if r.CorrectAll > 0 {
		r.CostPerCorrect = r.Usage.CostUSD / float64(r.CorrectAll)
	}
	r.Kept, r.Rejected, r.Rejects = s.Kept, s.Rejected, s.RejectReasons
	for round, c := range s.Rounds {
		if round > 0 && c.Kept > 0 {
			if r.Rounds == nil {
				r.Rounds = map[int]int{}
			}
			r.Rounds[round] = c.Kept
		}
	}
}

// score scores the first attempts that reached an outcome (again, when they finished)
// and fills the accuracy, its breakdowns and the steps.
func (r *Run) score(first []pipeline.Episode, levels map[string]questionInfo) {
	type tally struct{ k, n int }
	byType, byLevel, byBranch := map[string]*tally{}, map[string]*tally{}, map[string]*tally{}
	add := func(t map[string]*tally, key string, ok bool) {
		if key == "" {
			return
		}
		if t[key] == nil {
			t[key] = &tally{}
		}
		t[key].n++
		if ok {
			t[key].k++
		}
	}
	var f1s []float64
	steps := 0
	for _, ep := range first {
		if ep.Retryable() {
			r.Unfinished++
			continue
		}
		correct, f1 := ep.Correct, ep.F1
		if ep.Finished {
			correct, _, f1 = score.Score(r.Task, ep.Prediction, ep.Answer)
		}
		r.N++
		r.StopReasons[ep.StopReason]++
		if correct {
			r.Correct++
		}
		f1s = append(f1s, f1)
		typ := ep.QuestionType
		if r.Task == pipeline.TaskFEVER && typ == "" {
			typ = ep.Answer
		}
		add(byType, typ, correct)
		if q, ok := levels[ep.QuestionID]; ok {
			add(byLevel, q.level, correct)
			if typ == "" {
				add(byType, q.typ, correct)
			}
		}
		add(byBranch, ep.Branch, correct)
		if ep.Finished {
			r.Steps[len(ep.Steps)]++
			steps += len(ep.Steps)
		}
	}
	r.Accuracy = Wilson(r.Correct, r.N)
	if r.Task == pipeline.TaskFEVER {
		r.EM = r.Accuracy
	} else {
		r.EM = Wilson(r.Correct, r.N)
		r.F1 = Mean(f1s)
	}
	if answered := sumCounts(r.Steps); answered > 0 {
		r.MeanSteps = float64(steps) / float64(answered)
	}
	for k, t := range byType {
		r.ByType[k] = Wilson(t.k, t.n)
	}
	for k, t := range byLevel {
		r.ByLevel[k] = Wilson(t.k, t.n)
	}
	for k, t := range byBranch {
		r.ByBranch[k] = Wilson(t.k, t.n)
	}
}

func sumCounts(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// configString reads section.key from a manifest's config map.
func configString(cfg map[string]any, section, key string) string {
	s, _ := cfg[section].(map[string]any)
	v, _ := s[key].(string)
	return v
}

// Load summarizes every run directory and links each fine-tuned model to the training
// job of another given run that produced it (for accuracy against training size).
func Load(dirs []string) ([]*Run, error) {
	runs := make([]*Run, 0, len(dirs))
	for _, d := range dirs {
		r, err := Summarize(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	trained := map[string]int{}
	for _, r := range runs {
		for _, j := range r.Training {
			if j.FineTunedModel != "" && len(j.Files) > 0 {
				trained[j.FineTunedModel] = j.Files[0].Rows
			}
		}
	}
	for _, r := range runs {
		if n, ok := trained[r.Model]; ok {
			r.TrainExamples = n
		}
	}
	setVariants(runs)
	return runs, nil
}

// variantKeys are the settings that tell apart runs of one method, model and task, in
// the order their differences are named.
var variantKeys = [][2]string{
	{"generate", "format"}, {"generate", "exemplars"}, {"generate", "num_exemplars"}, {"llm", "temperature"},
	{"generate", "max_steps"}, {"generate", "samples"}, {"generate", "sample_temperature"}, {"llm", "base_url"},
	{"llm", "endpoints"}, {"generate", "instruction"}, {"task", "path"}, {"run", "id"},
}

// setVariants gives every run that shares its method, prompting, model and task with
// another run a Variant: the settings in which the group's runs differ, else the run
// directory's name (added to the settings of runs they do not tell apart); a variant
// two runs still share gets "#2", "#3" after it.
func setVariants(runs []*Run) {
	groups := map[string][]*Run{}
	var order []string
	for _, r := range runs {
		k := r.Label() + "\x00" + r.Model + "\x00" + r.Task
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		for _, key := range variantKeys {
			if !allSame(g, key) {
				for _, r := range g {
					if r.Variant != "" {
						r.Variant += ", "
					}
					r.Variant += key[1] + " " + settingText(r.config, key)
				}
			}
		}
		count := map[string]int{}
		for _, r := range g {
			count[r.Variant]++
		}
		seen := map[string]int{}
		for _, r := range g {
			if count[r.Variant] > 1 { // settings alone do not tell these apart: their directories do
				name := filepath.Base(filepath.Clean(r.Dir))
				if r.Variant != "" {
					name = r.Variant + ", " + name
				}
				r.Variant = name
			}
			seen[r.Variant]++
			if n := seen[r.Variant]; n > 1 {
				r.Variant += fmt.Sprintf(" #%d", n)
			}
		}
	}
}

func allSame(g []*Run, key [2]string) bool {
	first := settingText(g[0].config, key)
	for _, r := range g[1:] {
		if settingText(r.config, key) != first {
			return false
		}
	}
	return true
}

// settingText is a setting of a recorded config as a person reads it: a path's base
// name, a number or list as written, "-" when unset.
func settingText(cfg map[string]any, key [2]string) string {
	s, _ := cfg[key[0]].(map[string]any)
	v, ok := s[key[1]]
	if !ok || v == nil || v == "" {
		return "-"
	}
	switch x := v.(type) {
	case string:
		if key[1] == "exemplars" || key[1] == "path" {
			return filepath.Base(x)
		}
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// taskLevels reads the type and level of each question from the task file, for records
// that do not carry them. A missing or unreadable file gives none.
func taskLevels(path, task string) map[string]questionInfo {
	if path == "" {
		return nil
	}
	qs, _, err := dataset.Load(path, dataset.Options{Task: task, SkipBad: true})
	if err != nil {
		return nil
	}
	out := make(map[string]questionInfo, len(qs))
	for _, q := range qs {
		if q.Level != "" || q.Type != "" {
			out[q.ID] = questionInfo{typ: q.Type, level: q.Level}
		}
	}
	return out
}
