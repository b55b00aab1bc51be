package export

import (
	"fmt"
	"strings"

	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/pipeline"
)

// ValidationError is an example that may not be exported. The export fails with it; an
// invalid example is never silently dropped.
type ValidationError struct {
	ID     string // episode id
	View   string
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid example %s (view %s): %s", e.ID, e.View, e.Reason)
}

// ValidateOptions are the checks Validate makes beyond the structural ones.
type ValidateOptions struct {
	CorrectOnly bool // the episode must be correct
	// TrainObservations allows observation turns to be trainable (export.train_observations).
	TrainObservations bool
}

// Chat token accounting, as OpenAI's cookbook counts a chat request: each message costs
// its role and content plus perMessage tokens of template (start, role separator, end),
// and the reply is primed with replyPriming more.
const (
	perMessage   = 3
	replyPriming = 3
)

// ChatTokens counts the tokens of chat messages with c: role and content of every turn,
// perMessage tokens of template each, and replyPriming for the reply. It is what
// export.max_tokens limits and what the card's token figures show.
func ChatTokens(c bpe.Counter, msgs []Message) int {
	n := replyPriming
	for _, m := range msgs {
		n += perMessage + c.Count(m.Role) + c.Count(m.Content)
		if m.Reasoning != "" {
			n += c.Count(m.Reasoning)
		}
	}
	return n
}

// ToolChatTokens counts the tool-calling form of ex the same way: each turn's role,
// content and calls (name and arguments), and the task's tool definitions as JSON.
func ToolChatTokens(c bpe.Counter, ex *Example) int {
	n := replyPriming + c.Count(toolsOf(ex.Task, ex.View).json)
	for _, m := range ex.ToolMessages {
		n += perMessage + c.Count(m.Role) + c.Count(m.Content)
		if m.Reasoning != "" {
			n += c.Count(m.Reasoning)
		}
		for _, call := range m.ToolCalls {
			n += c.Count(call.Name) + c.Count(call.Arguments)
		}
	}
	return n
}

// Validate checks ex strictly: required fields, role order (system? user (assistant
// user)* assistant), the final turn is the assistant's Finish (or, in the standard view,
// its Answer), the loss mask and correctness. The token limit is not its business: an
// over-long example is dropped and counted by Run, not fatal.
func Validate(ex *Example, opts ValidateOptions) error {
	game := pipeline.GameTask(ex.Task) // a game has no gold answer: its reward judged it
	for _, f := range []struct{ name, v string }{
		{"id", ex.ID}, {"task", ex.Task}, {"method", ex.Method}, {"question_id", ex.QuestionID},
		{"question", ex.Question}, {"answer", ex.Answer}, {"prediction", ex.Prediction}, {"view", ex.View},
	} {
		if strings.TrimSpace(f.v) == "" && !(game && f.name == "answer") {
			return invalid(ex, "required field %s is empty", f.name)
		}
	}
	if opts.CorrectOnly && !ex.Correct {
		return invalid(ex, "not correct (export.correct_only): predicted %q, gold %q", ex.Prediction, ex.Answer)
	}
	msgs, err := validateTurns(ex, opts)
	if err != nil {
		return err
	}
	if err := validateEnd(ex, msgs[len(msgs)-1].Content, game); err != nil {
		return err
	}
	return validateTools(ex, opts)
}

// invalid is the ValidationError of ex for the reason format and args say.
func invalid(ex *Example, format string, args ...any) error {
	return &ValidationError{ID: ex.ID, View: ex.View, Reason: fmt.Sprintf(format, args...)}
}

// validateTurns checks the turns' roles, order and loss mask, and returns the turns after
// the system message.
func validateTurns(ex *Example, opts ValidateOptions) ([]Message, error) {
	msgs := ex.Messages
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		if msgs[0].Trainable {
			return nil, invalid(ex, "system message is marked trainable")
		}
		msgs = msgs[1:]
	}
	if len(msgs) < 2 {
		return nil, invalid(ex, "want at least a user and an assistant turn, got %d turns", len(msgs))
	}
	for i, m := range msgs {
		want := RoleUser
		if i%2 == 1 {
			want = RoleAssistant
		}
		if m.Role != want {
			return nil, invalid(ex, "turn %d: role %q, want %q (order: system? user (assistant user)* assistant)", i+1, m.Role, want)
		}
		if m.Role == RoleAssistant && !m.Trainable && !ex.isMasked(i/2) {
			return nil, invalid(ex, "turn %d: assistant turn is not trainable", i+1)
		}
		if m.Role == RoleUser && m.Trainable && (i == 0 || !opts.TrainObservations || !strings.HasPrefix(m.Content, "Observation:")) {
			return nil, invalid(ex, "turn %d: user turn is marked trainable", i+1)
		}
	}
	if len(msgs)%2 != 0 {
		return nil, invalid(ex, "the last turn is a user turn, want the assistant's Finish")
	}
	if !msgs[len(msgs)-1].Trainable {
		return nil, invalid(ex, "the last turn, the assistant's answer, is masked (masked steps: %v)", ex.masked)
	}
	for _, k := range ex.masked {
		if k < 0 || k >= len(ex.Steps) {
			return nil, invalid(ex, "masked step %d is not a step of the %d-step trajectory", k+1, len(ex.Steps))
		}
	}
	return msgs, nil
}

// validateEnd checks that the last turn is what ends the view's example: the Answer
// (standard), the chain and Answer (cot), the Finish and no Finish before it (react,
// act), or a game's last action.
func validateEnd(ex *Example, last string, game bool) error {
	switch ex.View {
	case ViewStandard:
		if !strings.HasPrefix(last, "Answer: ") {
			return invalid(ex, "the last turn %q is not the assistant's Answer", clip(last))
		}
	case ViewCoT:
		if !strings.Contains("\n"+last, "\nAnswer: ") {
			return invalid(ex, "the last turn %q is not the assistant's chain of thought and Answer", clip(last))
		}
	default:
		if game {
			// The last turn is the action after which the environment said done.
			if n := len(ex.Steps); n == 0 || ex.Steps[n-1].Action != ex.Prediction {
				return invalid(ex, "the last turn %q is not the action that ended the game (%q)", clip(last), ex.Prediction)
			}
			return nil
		}
		for k, st := range ex.Steps[:max(len(ex.Steps)-1, 0)] {
			if st.ActionType == pipeline.ActionFinish {
				return invalid(ex, "step %d is a Finish before the last step", k+1)
			}
		}
		i := strings.LastIndex(last, "Action: ")
		if i < 0 || !strings.HasPrefix(last[i+len("Action: "):], "Finish[") || len(ex.Steps) == 0 {
			return invalid(ex, "the last turn %q is not the assistant's Finish", clip(last))
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
