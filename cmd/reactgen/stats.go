package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/pipeline"
)

type statsOptions struct {
	run    string
	asJSON bool
}

func (a *app) newStatsCmd() *cobra.Command {
	var o statsOptions
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Counts per stage, success rate, steps, tokens and reject reasons of a run",
		Example: `  reactgen stats --run runs/demo
  reactgen stats --run runs/demo --json | jq .reject_reasons`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := runStats(o.run)
			if err != nil {
				return err
			}
			if o.asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return s.print(a.stdout)
		},
	}
	cmd.Flags().StringVar(&o.run, "run", "", "run directory")
	cmd.MarkFlagRequired("run")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON")
	return cmd
}

// runSummary is what `reactgen stats` reports.
type runSummary struct {
	RunID         string                           `json:"run_id"`
	Stages        map[string]*pipeline.StageRecord `json:"stages"`
	Episodes      int                              `json:"episodes"`
	Correct       int                              `json:"correct"`
	SuccessRate   float64                          `json:"success_rate"`
	StopReasons   map[string]int                   `json:"stop_reasons"`
	MeanSteps     float64                          `json:"mean_steps"`
	StepHistogram map[int]int                      `json:"step_histogram"`
	LLMCalls      int                              `json:"llm_calls"`
	BadCalls      int                              `json:"bad_calls"`
	Usage         pipeline.Usage                   `json:"usage"`
	CostPerKept   float64                          `json:"cost_per_kept_usd,omitempty"`
	// CostPerKeptNoCache is CostPerKept had the server cached no prompt tokens.
	CostPerKeptNoCache float64               `json:"cost_per_kept_without_prompt_cache_usd,omitempty"`
	Kept               int                   `json:"kept"`
	Rejected           int                   `json:"rejected"`
	RejectReasons      map[string]int        `json:"reject_reasons"`
	Classes            map[string]classCount `json:"by_class"` // per question type (FEVER: label)
	Outputs            []pipeline.Output     `json:"outputs"`
}

// classCount counts the episodes of one question type or label, generated and kept.
type classCount struct {
	Generated int `json:"generated"`
	Kept      int `json:"kept"`
}

// episodeClass is the group an episode's accept rate is counted in.
func episodeClass(ep *pipeline.Episode) string {
	if ep.QuestionType != "" {
		return ep.QuestionType
	}
	return "all"
}

func runStats(dir string) (*runSummary, error) {
	m, err := pipeline.ReadManifest(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usagef("%s: %w", dir, pipeline.ErrNoRun)
	}
	if err != nil {
		return nil, err
	}
	s, err := summarize(dir)
	if err != nil {
		return nil, err
	}
	s.RunID, s.Stages, s.Outputs = m.RunID, m.Stages, m.Outputs
	return s, nil
}

// summarize counts a run directory's episodes and verdicts: what stats prints and what
// the dataset card reports.
func summarize(dir string) (*runSummary, error) {
	s := &runSummary{StopReasons: map[string]int{}, StepHistogram: map[int]int{},
		RejectReasons: map[string]int{}, Classes: map[string]classCount{}}
	steps := 0
	for ep, err := range pipeline.ReadEpisodes(filepath.Join(dir, pipeline.EpisodesFile)) {
		if err != nil {
			return nil, err
		}
		s.Episodes++
		if ep.Correct {
			s.Correct++
		}
		s.StopReasons[ep.StopReason]++
		s.StepHistogram[len(ep.Steps)]++
		steps += len(ep.Steps)
		s.LLMCalls += ep.LLMCalls
		s.BadCalls += ep.BadCalls
		s.Usage = s.Usage.Add(ep.Usage)
		c := s.Classes[episodeClass(&ep)]
		c.Generated++
		s.Classes[episodeClass(&ep)] = c
	}
	if s.Episodes > 0 {
		s.SuccessRate = float64(s.Correct) / float64(s.Episodes)
		s.MeanSteps = float64(steps) / float64(s.Episodes)
	}
	for ep, err := range pipeline.ReadKept(filepath.Join(dir, pipeline.KeptFile)) {
		if err != nil {
			return nil, err
		}
		s.Kept++
		c := s.Classes[episodeClass(&ep)]
		c.Kept++
		s.Classes[episodeClass(&ep)] = c
	}
	for r, err := range pipeline.ReadRejected(filepath.Join(dir, pipeline.RejectedFile)) {
		if err != nil {
			return nil, err
		}
		s.Rejected++
		for _, x := range r.Rejects {
			s.RejectReasons[x.Rule+"/"+x.Code]++
		}
	}
	if s.Kept > 0 {
		s.CostPerKept = s.Usage.CostUSD / float64(s.Kept)
		s.CostPerKeptNoCache = s.Usage.CostWithoutCacheUSD() / float64(s.Kept)
	}
	return s, nil
}

func (s *runSummary) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\n", s.RunID)
	for _, name := range []string{"index", "generate", "filter", "export"} {
		if st, ok := s.Stages[name]; ok {
			fmt.Fprintf(tw, "stage %s\t%s\t%s\n", name, st.Status, formatCounts(st.Counts))
		}
	}
	fmt.Fprintf(tw, "episodes\t%d\n", s.Episodes)
	fmt.Fprintf(tw, "correct\t%d (%.1f%%)\n", s.Correct, 100*s.SuccessRate)
	fmt.Fprintf(tw, "stop reasons\t%s\n", formatCounts(s.StopReasons))
	fmt.Fprintf(tw, "mean steps\t%.2f\n", s.MeanSteps)
	fmt.Fprintf(tw, "llm calls\t%d (bad %d)\n", s.LLMCalls, s.BadCalls)
	fmt.Fprintf(tw, "tokens\t%d prompt, %d completion\n", s.Usage.PromptTokens, s.Usage.CompletionTokens)
	fmt.Fprintf(tw, "cost\t$%.4f (per kept: $%.4f)\n", s.Usage.CostUSD, s.CostPerKept)
	fmt.Fprintf(tw, "prompt caching\t%d cached prompt tokens; without caching $%.4f (per kept: $%.4f)\n",
		s.Usage.CachedTokens, s.Usage.CostWithoutCacheUSD(), s.CostPerKeptNoCache)
	fmt.Fprintf(tw, "kept / rejected\t%d / %d\n", s.Kept, s.Rejected)
	fmt.Fprintf(tw, "reject reasons\t%s\n", formatCounts(s.RejectReasons))
	return tw.Flush()
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s %d", k, m[k])
	}
	if out == "" {
		return "-"
	}
	return out
}
