package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/pipeline"
)

type inspectOptions struct {
	run      string
	id       string
	question string
	rejected bool
	limit    int
}

func (a *app) newInspectCmd() *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Print a run's episodes for a person to read",
		Example: `  reactgen inspect --run runs/demo --limit 3
  reactgen inspect --run runs/demo --question bf9a7a2609c2c5c79113f0c7
  reactgen inspect --run runs/demo --rejected`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runInspect(o) },
	}
	cmd.Flags().StringVar(&o.run, "run", "", "run directory")
	cmd.MarkFlagRequired("run")
	cmd.Flags().StringVar(&o.id, "id", "", "only the episode with this id")
	cmd.Flags().StringVar(&o.question, "question", "", "only episodes of this question id")
	cmd.Flags().BoolVar(&o.rejected, "rejected", false, "only rejected episodes, with their reasons")
	cmd.Flags().IntVar(&o.limit, "limit", 0, "print at most this many (0 = all)")
	return cmd
}

func (a *app) runInspect(o inspectOptions) error {
	if _, err := os.Stat(filepath.Join(o.run, pipeline.ManifestFile)); errors.Is(err, os.ErrNotExist) {
		return usagef("%s: %w", o.run, pipeline.ErrNoRun)
	}
	n := 0
	match := func(ep *pipeline.Episode) bool {
		return (o.id == "" || ep.ID == o.id) && (o.question == "" || ep.QuestionID == o.question)
	}
	if o.rejected {
		for r, err := range pipeline.ReadRejected(filepath.Join(o.run, pipeline.RejectedFile)) {
			if err != nil {
				return err
			}
			if !match(&r.Episode) {
				continue
			}
			printEpisode(a.stdout, &r.Episode, r.Rejects)
			if n++; o.limit > 0 && n >= o.limit {
				break
			}
		}
	} else {
		for ep, err := range pipeline.ReadEpisodes(filepath.Join(o.run, pipeline.EpisodesFile)) {
			if err != nil {
				return err
			}
			if !match(&ep) {
				continue
			}
			printEpisode(a.stdout, &ep, nil)
			if n++; o.limit > 0 && n >= o.limit {
				break
			}
		}
	}
	if n == 0 && o.rejected && o.id == "" && o.question == "" {
		// Nothing rejected is an answer, not a failure; no verdicts at all is.
		if _, err := os.Stat(filepath.Join(o.run, pipeline.RejectedFile)); err != nil {
			return fmt.Errorf("%s has no filter verdicts; run `reactgen filter --out %s` first", o.run, o.run)
		}
		fmt.Fprintf(a.stderr, "the filter rejected no episode of %s\n", o.run)
		return nil
	}
	if n == 0 {
		return fmt.Errorf("no episode matched in %s", o.run)
	}
	return nil
}

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
