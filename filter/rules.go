package filter

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// Compile-time checks.
var (
	_ Rule = correctRule{}
	_ Rule = finishedRule{}
	_ Rule = maxStepsRule{}
	_ Rule = noInvalidRule{}
	_ Rule = noBadCallsRule{}
	_ Rule = noLoopsRule{}
	_ Rule = maxTokensRule{}
	_ Rule = (*decontaminate)(nil)
)

func reject(rule, code, detail string) (bool, pipeline.Reject) {
	return false, pipeline.Reject{Rule: rule, Code: code, Detail: detail}
}

// correctRule re-scores the prediction against the gold answer. An episode with no gold
// answer (an import without a gold file) keeps its recorded verdict, ep.Correct. A game
// episode (alfworld, webshop) is judged by its environment's reward: 1, or at least
// minReward when that is set.
type correctRule struct {
	task      string
	minF1     float64
	minReward float64
}

func (correctRule) Name() string { return "correct" }

func (r correctRule) Keep(ep *pipeline.Episode) (bool, pipeline.Reject) {
	if pipeline.GameTask(ep.Task) {
		switch {
		case ep.Reward == nil:
			return reject("correct", CodeWrongAnswer, "no reward: the game did not end")
		case *ep.Reward == 1 || (r.minReward > 0 && *ep.Reward >= r.minReward):
			return true, pipeline.Reject{}
		}
		return reject("correct", CodeWrongAnswer, fmt.Sprintf("reward %g, want 1 (or filter.min_reward %g)", *ep.Reward, r.minReward))
	}
	if ep.Answer == "" {
		if ep.Correct {
			return true, pipeline.Reject{}
		}
		return reject("correct", CodeWrongAnswer, fmt.Sprintf("recorded as incorrect, prediction %q", ep.Prediction))
	}
	if ep.Prediction == ep.Answer {
		return true, pipeline.Reject{} // correct: equal strings normalise alike
	}
	correct, _, f1 := score.Score(r.task, ep.Prediction, ep.Answer)
	if correct || (r.minF1 > 0 && r.task != pipeline.TaskFEVER && f1 >= r.minF1) {
		return true, pipeline.Reject{}
	}
	return reject("correct", CodeWrongAnswer, fmt.Sprintf("prediction %q, gold %q, f1 %.2f", ep.Prediction, ep.Answer, f1))
}

type finishedRule struct{}

func (finishedRule) Name() string { return "finished" }

func (finishedRule) Keep(ep *pipeline.Episode) (bool, pipeline.Reject) {
	if ep.StopReason == pipeline.StopFinished {
		return true, pipeline.Reject{}
	}
	return reject("finished", CodeNotFinished, "stop reason "+ep.StopReason)
}

// maxStepsRule keeps episodes of at most max steps; max 0 keeps all.
type maxStepsRule struct{ max int }

func (maxStepsRule) Name() string { return "max_steps" }

func (r maxStepsRule) Keep(ep *pipeline.Episode) (bool, pipeline.Reject) {
	if r.max <= 0 || len(ep.Steps) <= r.max {
		return true, pipeline.Reject{}
	}
	return reject("max_steps", CodeTooManySteps, fmt.Sprintf("%d steps > %d", len(ep.Steps), r.max))
}

type noInvalidRule struct{}

func (noInvalidRule) Name() string { return "no_invalid_actions" }

func (noInvalidRule) Keep(ep *pipeline.Episode) (bool, pipeline.Reject) {
	for i, s := range ep.Steps {
		if s.ActionType == pipeline.ActionInvalid {
			return reject("no_invalid_actions", CodeInvalidAction, fmt.Sprintf("step %d: %q", i+1, s.Action))
		}
	}
	return true, pipeline.Reject{}
}

type noBadCallsRule struct{}

func (noBadCallsRule) Name() string { return "no_bad_calls" }

func (noBadCallsRule) Keep(ep *pipeline.Episode) (bool, pipeline.Reject) {
	if ep.BadCalls == 0 {
		return true, pipeline.Reject{}
	}
	return reject("no_bad_calls", CodeBadCall, fmt.Sprintf("%d bad calls", ep.BadCalls))
}

// noLoopsRule rejects an episode that stopped for a loop or that holds the same action
// (compared normalised) three times in a row.
type noLoopsRule struct{}

func (noLoopsRule) Name() string { return "no_loops" }

func (noLoopsRule) Keep(ep *pipeline.Episode) (bool, pipeline.Reject) {
	if ep.StopReason == pipeline.StopLoop {
		return reject("no_loops", CodeLoop, "stop reason loop")
	}
	var bufs [2][64]byte
	run, last := 0, []byte(nil)
	for i, s := range ep.Steps {
		a := appendFolded(bufs[i%2][:0], s.Action) // normAction(s.Action); last is in the other buffer
		if last != nil && string(a) == string(last) {
			run++
		} else {
			run = 1
		}
		last = a
		if run >= 3 {
			return reject("no_loops", CodeLoop, fmt.Sprintf("steps %d-%d repeat %q", i-1, i+1, s.Action))
		}
	}
	return true, pipeline.Reject{}
}

// normAction is the comparison form of an action: lower-case, whitespace collapsed.
func normAction(a string) string { return strings.Join(strings.Fields(strings.ToLower(a)), " ") }

// maxTokensRule keeps episodes whose rendered example fits max tokens; max 0 keeps all.
type maxTokensRule struct {
	max     int
	counter TokenCounter
}

func (maxTokensRule) Name() string { return "max_tokens" }

func (r maxTokensRule) Keep(ep *pipeline.Episode) (bool, pipeline.Reject) {
	if r.max <= 0 {
		return true, pipeline.Reject{}
	}
	if n := r.counter.Count(Render(ep)); n > r.max {
		return reject("max_tokens", CodeTooLong, fmt.Sprintf("%d tokens > %d", n, r.max))
	}
	return true, pipeline.Reject{}
}

// Render is the text max_tokens counts: what the chat messages of a training example
// hold, i.e. the question, then per step "Thought: …\nAction: …" and "Observation: …".
// It leaves out the system prompt and exemplars, which the exporter adds at a fixed cost.
func Render(ep *pipeline.Episode) string {
	var b strings.Builder
	b.WriteString(ep.Question)
	for _, s := range ep.Steps {
		b.WriteString("\n")
		if s.Thought != "" {
			b.WriteString("Thought: ")
			b.WriteString(s.Thought)
			b.WriteString("\n")
		}
		b.WriteString("Action: ")
		b.WriteString(s.Action)
		if s.Observation != "" {
			b.WriteString("\nObservation: ")
			b.WriteString(s.Observation)
		}
	}
	return b.String()
}

// counterFor resolves filter.token_counter: a counter handed in by name, else an embedded
// encoding or a tokenizer.json path (internal/bpe); "" is bpe.Default.
func counterFor(name string, extra map[string]TokenCounter) (TokenCounter, error) {
	if tc, ok := extra[name]; ok {
		return tc, nil
	}
	if name == "estimate" || name == "bytes4" {
		return nil, &pipeline.ConfigError{Key: "filter.token_counter", Message: fmt.Sprintf("%q was removed: counts come from a real tokenizer (%s, or the path of a tokenizer.json)", name, strings.Join(bpe.Names, ", "))}
	}
	tc, err := bpe.Open(name)
	if err != nil {
		return nil, &pipeline.ConfigError{Key: "filter.token_counter", Message: err.Error()}
	}
	return tc, nil
}

// trajectoryHash hashes the normalised action sequence with the normalised thoughts, and
// each normalised action alone: 64-bit FNV-1a (hash/fnv's New64a) over each action
// folded, a 0 byte, the thought folded and a 1 byte, per step; computed inline, without
// a hash.Hash or a buffer on the heap per step.
func trajectoryHash(ep *pipeline.Episode) (uint64, []uint64) {
	all := uint64(fnvOffset64)
	acts := make([]uint64, 0, len(ep.Steps))
	var buf [256]byte
	for _, s := range ep.Steps {
		a := appendFolded(buf[:0], s.Action) // normAction(s.Action), without allocating
		acts = append(acts, fnvAdd(fnvOffset64, a))
		all = fnvAdd(all, a)
		all = fnvAdd(all, []byte{0})
		all = foldHash(all, s.Thought)
		all = fnvAdd(all, []byte{1})
	}
	return all, acts
}

// FNV-1a's 64-bit parameters (hash/fnv).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// fnvAdd continues the FNV-1a hash h over b.
func fnvAdd(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

// foldHash continues h over s lower-cased with its whitespace collapsed: two thoughts
// that differ only in case or spacing count as the same.
func foldHash(h uint64, s string) uint64 {
	var buf [256]byte
	return fnvAdd(h, appendFolded(buf[:0], s))
}

// appendFolded appends normAction(s) to dst: s lower-cased, its runs of white space one
// space, none at either end.
func appendFolded(dst []byte, s string) []byte {
	space, started := false, false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if c == ' ' || c-'\t' <= '\r'-'\t' {
				space = started
				continue
			}
			if space {
				dst = append(dst, ' ')
				space = false
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			started = true
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if unicode.IsSpace(r) {
			space = started
			continue
		}
		if space {
			dst = append(dst, ' ')
			space = false
		}
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		started = true
	}
	return dst
}
