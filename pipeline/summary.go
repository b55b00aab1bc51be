package pipeline

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"text/tabwriter"
)

// Summary is the run summary: what `reactgen stats` prints, what the dataset card
// reports, and the counts `reactgen eval`, `compare` and `inspect` build their scores on
// (report.Summarize). Summarize is the one place a run's episodes and verdicts are
// counted.
type Summary struct {
	RunID         string                  `json:"run_id"`
	Stages        map[string]*StageRecord `json:"stages"`
	Episodes      int                     `json:"episodes"`
	Correct       int                     `json:"correct"`
	SuccessRate   float64                 `json:"success_rate"`
	StopReasons   map[string]int          `json:"stop_reasons"`
	MeanSteps     float64                 `json:"mean_steps"`
	StepHistogram map[int]int             `json:"step_histogram"`
	LLMCalls      int                     `json:"llm_calls"`
	BadCalls      int                     `json:"bad_calls"`
	Usage         Usage                   `json:"usage"`
	CostPerKept   float64                 `json:"cost_per_kept_usd,omitempty"`
	// CostPerKeptNoCache is CostPerKept had the server cached no prompt tokens.
	CostPerKeptNoCache float64        `json:"cost_per_kept_without_prompt_cache_usd,omitempty"`
	Kept               int            `json:"kept"`
	Rejected           int            `json:"rejected"`
	RejectReasons      map[string]int `json:"reject_reasons"` // "rule/code" -> rejected episodes
	// MaskedSteps counts the masked steps of kept episodes by code (filter.mask_steps).
	MaskedSteps map[string]int        `json:"masked_steps,omitempty"`
	Classes     map[string]ClassCount `json:"by_class"` // per question type (FEVER: label)
	// Rounds counts a STaR round's episodes per round (its own and those carried from
	// earlier rounds); empty outside rounds.
	Rounds  map[int]RoundCount `json:"by_round,omitempty"`
	Outputs []Output           `json:"outputs"`
	// ExportStale says why the export is older than kept.jsonl (it was made from an
	// earlier filter result); empty when it is not, or when there is no export.
	ExportStale string `json:"export_stale,omitempty"`
	// PendingCommit names the stage whose commit a kill interrupted: the next command on
	// the run completes it, and until then the stage's files may be half of it.
	PendingCommit string `json:"pending_commit,omitempty"`
	// FirstAttempts are each question's first attempt (attempt 0, not rationalized) in
	// the order the log first holds the question, what an evaluation scores; only when
	// SummaryOptions.FirstAttempts asks for them, and never printed.
	FirstAttempts []Episode `json:"-"`
}

// exportStale says why the export a manifest records is older than its kept.jsonl, or "".
func exportStale(m *Manifest) string {
	exported, keptSHA := false, ""
	for _, o := range m.Outputs {
		switch {
		case o.Stage == StageExport:
			exported = true
		case o.Stage == StageFilter && o.Path == KeptFile:
			keptSHA = o.SHA256
		}
	}
	if !exported || keptSHA == "" {
		return ""
	}
	if m.ExportedFrom != "" {
		if m.ExportedFrom != keptSHA {
			return fmt.Sprintf("the export was made from an earlier kept.jsonl (sha256 %.12s…, now %.12s…): run `reactgen export` again", m.ExportedFrom, keptSHA)
		}
		return ""
	}
	// An export that records no kept.jsonl (an older reactgen): by the stages' times.
	ex, fi := m.Stages[StageExport], m.Stages[StageFilter]
	if ex != nil && fi != nil && !ex.Ended.IsZero() && fi.Ended.After(ex.Ended) {
		return "the filter ran after the export: run `reactgen export` again"
	}
	return ""
}

// ClassCount counts the episodes of one question type or label, generated and kept.
type ClassCount struct {
	Generated int `json:"generated"`
	Kept      int `json:"kept"`
}

// RoundCount counts the episodes of one STaR round in a run's log and kept set, and the
// model that generated them.
type RoundCount struct {
	Model     string `json:"model"`
	Generated int    `json:"generated"` // in the log (for carried rounds: their kept episodes)
	Kept      int    `json:"kept"`
}

// countRound adds ep to its round's counts, when it belongs to one.
func (s *Summary) countRound(ep *Episode, kept bool) {
	if ep.Round == 0 {
		return
	}
	if s.Rounds == nil {
		s.Rounds = map[int]RoundCount{}
	}
	c := s.Rounds[ep.Round]
	if c.Model == "" {
		c.Model = ep.Policy
	}
	if kept {
		c.Kept++
	} else {
		c.Generated++
	}
	s.Rounds[ep.Round] = c
}

// episodeClass is the group an episode's accept rate is counted in.
func episodeClass(ep *Episode) string {
	if ep.QuestionType != "" {
		return ep.QuestionType
	}
	return "all"
}

// SummaryOptions says what Summarize keeps beside its counts.
type SummaryOptions struct {
	// FirstAttempts keeps each question's first attempt in Summary.FirstAttempts, for an
	// evaluation that scores them (report). Without it Summarize keeps no episode, so
	// stats and the export hold no copy of the log however long it is.
	FirstAttempts bool
}

// Summarize counts a run directory's episodes and verdicts, and takes the run id, the
// stages and the outputs from its manifest m. It reads the log, kept.jsonl and
// rejected.jsonl once each, in that order; a missing file counts nothing.
func Summarize(dir string, m *Manifest, o SummaryOptions) (*Summary, error) {
	s := &Summary{StopReasons: map[string]int{}, StepHistogram: map[int]int{},
		RejectReasons: map[string]int{}, Classes: map[string]ClassCount{}}
	if m != nil {
		s.RunID, s.Stages, s.Outputs = m.RunID, m.Stages, m.Outputs
		s.ExportStale = exportStale(m)
	}
	if stage, ok := PendingCommit(dir); ok {
		s.PendingCommit = stage
	}
	if err := s.readLog(filepath.Join(dir, EpisodesFile), o.FirstAttempts); err != nil {
		return nil, err
	}
	if err := s.readKept(filepath.Join(dir, KeptFile)); err != nil {
		return nil, err
	}
	for r, err := range ReadRejected(filepath.Join(dir, RejectedFile)) {
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

// readLog counts every record of the episode log at path and, with firstAttempts, keeps
// each question's first attempt (FirstAttempts).
func (s *Summary) readLog(path string, firstAttempts bool) error {
	steps := 0
	slots := map[string]int{} // question id -> its index in s.FirstAttempts
	for ep, err := range ReadEpisodes(path) {
		if err != nil {
			return err
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
		s.countRound(&ep, false)
		if firstAttempts && ep.Attempt == 0 && !ep.Rationalized {
			// A resumed run may hold a retryable record and then the finished one for the
			// same slot: the last record of a slot wins, in the place of its first.
			if i, seen := slots[ep.QuestionID]; seen {
				s.FirstAttempts[i] = ep
			} else {
				slots[ep.QuestionID] = len(s.FirstAttempts)
				s.FirstAttempts = append(s.FirstAttempts, ep)
			}
		}
	}
	if s.Episodes > 0 {
		s.SuccessRate = float64(s.Correct) / float64(s.Episodes)
		s.MeanSteps = float64(steps) / float64(s.Episodes)
	}
	return nil
}

// readKept counts the kept episodes at path, their masked steps, classes and rounds.
func (s *Summary) readKept(path string) error {
	for ep, err := range ReadKept(path) {
		if err != nil {
			return err
		}
		s.Kept++
		for _, m := range ep.MaskedSteps {
			if s.MaskedSteps == nil {
				s.MaskedSteps = map[string]int{}
			}
			s.MaskedSteps[m.Code]++
		}
		c := s.Classes[episodeClass(&ep)]
		c.Kept++
		s.Classes[episodeClass(&ep)] = c
		s.countRound(&ep, true)
	}
	return nil
}

// Print writes the summary for a person, one line a figure.
func (s *Summary) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\n", s.RunID)
	if s.PendingCommit != "" {
		fmt.Fprintf(tw, "interrupted commit\tstage %s: a kill cut its commit short; the next reactgen command on this run completes it\n", s.PendingCommit)
	}
	if s.ExportStale != "" {
		fmt.Fprintf(tw, "export\tolder than kept.jsonl: %s\n", s.ExportStale)
	}
	for _, name := range StageOrder {
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
	fmt.Fprintf(tw, "cost\t%s (per kept: %s)\n", s.Usage.CostText(), s.Usage.CostPerText(s.Kept))
	fmt.Fprintf(tw, "prompt caching\t%d cached prompt tokens; without caching %s (per kept: %s)\n",
		s.Usage.CachedTokens, s.Usage.WithoutCache().CostText(), s.Usage.WithoutCache().CostPerText(s.Kept))
	fmt.Fprintf(tw, "kept / rejected\t%d / %d\n", s.Kept, s.Rejected)
	fmt.Fprintf(tw, "reject reasons\t%s\n", formatCounts(s.RejectReasons))
	if len(s.MaskedSteps) > 0 {
		fmt.Fprintf(tw, "masked steps (kept)\t%s\n", formatCounts(s.MaskedSteps))
	}
	for _, k := range sortedRounds(s.Rounds) {
		c := s.Rounds[k]
		fmt.Fprintf(tw, "round %d\t%s: %d in the log, %d kept\n", k, c.Model, c.Generated, c.Kept)
	}
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

func sortedRounds(m map[int]RoundCount) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
