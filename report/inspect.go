package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/reactgen/reactgen/pipeline"
)

// InspectOptions choose the episodes Inspect prints: those of one ID or question (empty:
// any), the filter's rejects instead of the episode log, at most Limit (0: all).
type InspectOptions struct {
	ID, Question string
	Rejected     bool
	Limit        int
}

// Inspect prints the episodes of the run directory run for a person to read (`reactgen
// inspect`): each one's question, steps, answer and verdict, and with o.Rejected the
// filter's reasons. A directory that is no run is a *pipeline.InputError; no episode
// matching is an error, and nothing rejected is said on stderr.
func Inspect(stdout, stderr io.Writer, run string, o InspectOptions) error {
	if _, err := os.Stat(filepath.Join(run, pipeline.ManifestFile)); errors.Is(err, os.ErrNotExist) {
		return &pipeline.InputError{Err: fmt.Errorf("%s: %w", run, pipeline.ErrNoRun)}
	}
	n := 0
	match := func(ep *pipeline.Episode) bool {
		return (o.ID == "" || ep.ID == o.ID) && (o.Question == "" || ep.QuestionID == o.Question)
	}
	if o.Rejected {
		for r, err := range pipeline.ReadRejected(filepath.Join(run, pipeline.RejectedFile)) {
			if err != nil {
				return err
			}
			if !match(&r.Episode) {
				continue
			}
			printEpisode(stdout, &r.Episode, r.Rejects)
			if n++; o.Limit > 0 && n >= o.Limit {
				break
			}
		}
	} else {
		for ep, err := range pipeline.ReadEpisodes(filepath.Join(run, pipeline.EpisodesFile)) {
			if err != nil {
				return err
			}
			if !match(&ep) {
				continue
			}
			printEpisode(stdout, &ep, nil)
			if n++; o.Limit > 0 && n >= o.Limit {
				break
			}
		}
	}
	if n == 0 && o.Rejected && o.ID == "" && o.Question == "" {
		// Nothing rejected is an answer, not a failure; no verdicts at all is.
		if _, err := os.Stat(filepath.Join(run, pipeline.RejectedFile)); err != nil {
			return fmt.Errorf("%s has no filter verdicts; run `reactgen filter --out %s` first", run, run)
		}
		fmt.Fprintf(stderr, "the filter rejected no episode of %s\n", run)
		return nil
	}
	if n == 0 {
		return fmt.Errorf("no episode matched in %s", run)
	}
	return nil
}

// printEpisode writes one episode, and its rejects when it has some.
func printEpisode(w io.Writer, ep *pipeline.Episode, rejects []pipeline.Reject) {
	verdict := "wrong"
	if ep.Correct {
		verdict = "correct"
	}
	fmt.Fprintf(w, "=== %s  question %s  attempt %d  %s by %s ===\n", ep.ID, ep.QuestionID, ep.Attempt, ep.Method, ep.Policy)
	label := "Question"
	if ep.Task == pipeline.TaskFEVER {
		label = "Claim"
	}
	fmt.Fprintf(w, "%s: %s\n", label, ep.Question)
	for i, s := range ep.Steps {
		if s.Thought != "" {
			fmt.Fprintf(w, "Thought %d: %s\n", i+1, s.Thought)
		}
		if s.Action != "" {
			fmt.Fprintf(w, "Action %d: %s\n", i+1, s.Action)
		}
		if s.Observation != "" {
			fmt.Fprintf(w, "Observation %d: %s\n", i+1, s.Observation)
		}
	}
	if len(ep.Samples) > 0 {
		fmt.Fprintf(w, "(%d samples; branch %s)\n", len(ep.Samples), ep.Branch)
	}
	if chain, ok := ep.Chain(); ok && ep.Branch != "" {
		fmt.Fprintf(w, "Answered by %s, not by the steps above: Thought: %s\nAnswer: %s\n", ep.AnsweredBy(), chain, ep.Prediction)
	}
	for _, m := range ep.MaskedSteps {
		fmt.Fprintf(w, "(step %d masked: %s)\n", m.Step, m.Code)
	}
	fmt.Fprintf(w, "--- gold %q, predicted %q: %s; stop %s; %d steps, %d calls (%d bad), %d tokens",
		ep.Answer, ep.Prediction, verdict, ep.StopReason, len(ep.Steps), ep.LLMCalls, ep.BadCalls, ep.Usage.TotalTokens)
	if ep.Rationalized {
		fmt.Fprint(w, ", rationalized")
	}
	fmt.Fprintln(w)
	if ep.Error != "" {
		fmt.Fprintf(w, "--- error: %s\n", ep.Error)
	}
	if len(rejects) > 0 {
		parts := make([]string, len(rejects))
		for i, r := range rejects {
			parts[i] = r.Rule + "/" + r.Code
			if r.Detail != "" {
				parts[i] += " (" + r.Detail + ")"
			}
		}
		fmt.Fprintf(w, "--- rejected: %s\n", strings.Join(parts, "; "))
	}
	fmt.Fprintln(w)
}
