package generate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/pipeline"
)

// ErrPlayEnded is returned by Play when the input ends before a Finish action.
var ErrPlayEnded = errors.New("play: input ended before Finish")

// Play lets a person write an exemplar: it shows the question on out, reads a thought and
// then an action from in (a line each; the labels "Thought:" and "Action:" are optional),
// lets the environment answer, and repeats until a Finish action. It returns the episode
// as an exemplar in reactgen's format (*env.Wiki serves as w).
func Play(ctx context.Context, q pipeline.Question, w Environment, in io.Reader, out io.Writer) (prompt.Exemplar, error) {
	ex := prompt.Exemplar{Question: q.Question}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	read := func(label string) (string, error) {
		for {
			fmt.Fprintf(out, "%s %d: ", label, len(ex.Steps)+1)
			if !sc.Scan() {
				if err := sc.Err(); err != nil {
					return "", fmt.Errorf("play: read input: %w", err)
				}
				return "", ErrPlayEnded
			}
			line := strings.TrimSpace(sc.Text())
			if l, rest, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimRight(strings.TrimSpace(l), "0123456789 "), label) {
				line = strings.TrimSpace(rest)
			}
			if line != "" {
				return line, nil
			}
		}
	}
	fmt.Fprintf(out, "%s: %s\n", prompt.Label(q.Task), q.Question)
	for {
		if err := ctx.Err(); err != nil {
			return ex, err
		}
		thought, err := read("Thought")
		if err != nil {
			return ex, err
		}
		action, err := read("Action")
		if err != nil {
			return ex, err
		}
		res, err := w.Step(ctx, action)
		if err != nil {
			return ex, fmt.Errorf("play: step %d: %w", len(ex.Steps)+1, err)
		}
		st := prompt.Step{Thought: thought, Action: res.Action.String()}
		if res.Done {
			ex.Steps = append(ex.Steps, st)
			ex.Answer = res.Answer
			fmt.Fprintf(out, "Finished: %s\n", res.Answer)
			return ex, nil
		}
		st.Observation = res.Observation
		ex.Steps = append(ex.Steps, st)
		fmt.Fprintf(out, "Observation %d: %s\n", len(ex.Steps), res.Observation)
	}
}
