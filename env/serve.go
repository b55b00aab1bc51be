package env

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ServeLine is one line that Serve writes: the normalised action, what the environment
// answered and whether the episode is over (with the answer when it is).
type ServeLine struct {
	Action      string `json:"action"`
	Observation string `json:"observation"`
	Done        bool   `json:"done"`
	Answer      string `json:"answer,omitempty"`
}

// Serve plays one episode interactively: it reads one action per line from in, steps w
// and writes one JSON ServeLine per action to out. A line is the action as it stands,
// without its line end (paper actions are judged with their spaces); blank lines are
// skipped and lines of any length are accepted. It returns nil at the end of input or
// after Finish (the rest of the input is left unread), and an error naming the input
// line when the corpus fails, ctx ends or out cannot be written.
func Serve(ctx context.Context, w *Wiki, in io.Reader, out io.Writer) error {
	return serve(ctx, w, in, out, func(line string) (string, error) { return line, nil })
}

// ServeJSON is Serve with each non-blank input line a JSON string holding one action,
// so that an action may hold line breaks ("\n\nFinish[x]", as a model wrote it).
func ServeJSON(ctx context.Context, w *Wiki, in io.Reader, out io.Writer) error {
	return serve(ctx, w, in, out, func(line string) (string, error) {
		var action string
		if err := json.Unmarshal([]byte(line), &action); err != nil {
			return "", fmt.Errorf("want a JSON string: %w", err)
		}
		return action, nil
	})
}

func serve(ctx context.Context, w *Wiki, in io.Reader, out io.Writer, decode func(string) (string, error)) error {
	r := bufio.NewReader(in)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for n := 1; ; n++ {
		line, readErr := r.ReadString('\n')
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			return fmt.Errorf("read action line %d: %w", n, readErr)
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if strings.TrimSpace(line) != "" {
			raw, err := decode(line)
			if err != nil {
				return fmt.Errorf("action line %d: %w", n, err)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("action line %d: %w", n, err)
			}
			res, err := w.Step(ctx, raw)
			if err != nil {
				return fmt.Errorf("action line %d: %w", n, err)
			}
			out := ServeLine{Action: res.Action.String(), Observation: res.Observation, Done: res.Done, Answer: res.Answer}
			if err := enc.Encode(out); err != nil {
				return fmt.Errorf("write answer to action line %d: %w", n, err)
			}
			if res.Done {
				return nil
			}
		}
		if readErr != nil {
			return nil
		}
	}
}
