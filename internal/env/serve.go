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

// Serve plays one episode interactively: it reads one action per line from in (blank
// lines are skipped, lines of any length are accepted), steps w and writes one JSON
// ServeLine per action to out. It returns nil at the end of input or after Finish (the
// rest of the input is left unread), and an error naming the input line when the corpus
// fails, ctx ends or out cannot be written.
func Serve(ctx context.Context, w *Wiki, in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for n := 1; ; n++ {
		line, readErr := r.ReadString('\n')
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			return fmt.Errorf("read action line %d: %w", n, readErr)
		}
		if raw := strings.TrimSpace(line); raw != "" {
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
