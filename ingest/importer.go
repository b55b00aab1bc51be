// Package ingest turns existing ReAct corpora into reactgen episodes, so that they can
// be filtered and exported like generated ones. It consumes files in one of six
// formats (FireAct's OpenAI chat and Alpaca files, the paper's GPT-3 transcripts,
// FireAct's raw trajectory dumps, and the interchange formats ADP and ATIF) plus an
// optional gold file, and produces pipeline.Episode records with Policy
// "import:<format>" and Method "react" (a trajectory reactgen exported to ADP or ATIF
// keeps its own id, method and policy). Stage is
// the import stage of a run: a source of episodes in place of generate, followed by the
// same filter and export stages.
//
// Imports: pipeline and the internal/ libraries; never another stage (what it records for
// export is pipeline.Imported).
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/react"
	"github.com/reactgen/reactgen/internal/score"
	"github.com/reactgen/reactgen/pipeline"
)

// Formats are the input formats Import reads.
var Formats = []string{"openai-chat", "alpaca", "react-transcript", "fireact-trajs", "adp", "atif"}

// Options configures one import.
type Options struct {
	Format string // one of Formats
	Task   string // hotpotqa or fever; empty means hotpotqa
	// Gold is an optional question file of the task with the gold answers, in any
	// format the dataset package reads (HotpotQA JSON, full or simplified, FEVER JSONL,
	// generic JSONL), matched by normalised question text, else by question id. A matched
	// episode gets the gold answer and type and is re-scored; an unmatched one keeps the
	// outcome the corpus recorded.
	Gold string
	// SkipBad skips records that cannot be read (counted in Report.Skipped) instead of
	// failing.
	SkipBad bool
	RunID   string // written into each episode's RunID; may be empty
	// Provenance names the corpus and its model for the dataset card; empty fields take
	// DefaultProvenance's.
	Provenance Provenance
}

// Report counts one import.
type Report struct {
	Read     int `json:"read"`     // records read
	Imported int `json:"imported"` // episodes emitted
	Skipped  int `json:"skipped"`  // bad records skipped under SkipBad
	Correct  int `json:"correct"`  // emitted episodes marked correct
}

// ErrBadRecord marks a record that holds no usable trajectory.
var ErrBadRecord = errors.New("bad record")

// record is one trajectory as read from any format, before it becomes an episode.
type record struct {
	qid, question, gold, pred string
	steps                     []pipeline.Step
	outcome                   *bool // the corpus' recorded verdict, when it has one
	em, f1                    *float64
	questionType              string
	// What a trajectory reactgen exported says of its episode (adp, atif): its id,
	// method and policy; empty for every other source.
	id, method, policy, task string
	llmCalls                 int // the requests its steps record (atif metrics)
}

// Import reads files in opts.Format and calls emit for each episode, in file order.
// Episode ids are pipeline.EpisodeID(task, question id, "import-"+format, n, false) where
// n counts earlier episodes of the same question in this import; the question id is the
// record's own, else the matched gold record's, else "q" plus a hash of the normalised
// question text. A record that cannot be read fails the import with its file and line
// (or record key) unless opts.SkipBad; an error from emit stops the import.
func Import(ctx context.Context, opts Options, files []string, emit func(pipeline.Episode) error) (Report, error) {
	var rep Report
	if opts.Task == "" {
		opts.Task = pipeline.TaskHotpotQA
	}
	if opts.Task != pipeline.TaskHotpotQA && opts.Task != pipeline.TaskFEVER {
		return rep, fmt.Errorf("import: task %q is not one of hotpotqa, fever", opts.Task)
	}
	var read func(ctx context.Context, path string, fn func(where string, r record, err error) error) error
	switch opts.Format {
	case "openai-chat":
		read = readChat
	case "alpaca":
		read = readAlpaca
	case "react-transcript":
		read = readTranscripts
	case "fireact-trajs":
		read = readTrajs
	case "adp":
		read = readADP
	case "atif":
		read = readATIF
	default:
		return rep, fmt.Errorf("import: format %q is not one of %s", opts.Format, strings.Join(Formats, ", "))
	}
	var gold *goldSet
	if opts.Gold != "" {
		g, err := loadGold(opts.Gold, opts.Task)
		if err != nil {
			return rep, err
		}
		gold = g
	}
	perQuestion := map[string]int{}
	for _, path := range files {
		err := read(ctx, path, func(where string, r record, err error) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			rep.Read++
			if err == nil && (strings.TrimSpace(r.question) == "" || len(r.steps) == 0) {
				err = fmt.Errorf("%w: no question or no steps", ErrBadRecord)
			}
			if err == nil && r.task != "" && r.task != opts.Task {
				err = fmt.Errorf("%w: a %s trajectory, imported as %s (give --task %s)", ErrBadRecord, r.task, opts.Task, r.task)
			}
			if err != nil {
				if opts.SkipBad {
					rep.Skipped++
					return nil
				}
				return fmt.Errorf("import %s %s: %w", path, where, err)
			}
			ep := build(opts, gold, r, perQuestion)
			if err := emit(ep); err != nil {
				return fmt.Errorf("import %s %s: %w", path, where, err)
			}
			rep.Imported++
			if ep.Correct {
				rep.Correct++
			}
			return nil
		})
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func build(opts Options, gold *goldSet, r record, perQuestion map[string]int) pipeline.Episode {
	format := opts.Format
	question := strings.TrimSpace(r.question)
	g, matched := gold.find(r.qid, question)
	qid := r.qid
	if qid == "" && matched {
		qid = g.id
	}
	if qid == "" {
		sum := sha256.Sum256([]byte(score.NormalizeAnswer(question)))
		qid = "q" + hex.EncodeToString(sum[:])[:12]
	}
	attempt := perQuestion[qid]
	perQuestion[qid]++
	ep := pipeline.Episode{
		Schema: pipeline.SchemaVersion, ID: cmpOr(r.id, pipeline.EpisodeID(opts.Task, qid, "import-"+format, attempt, false)),
		RunID: opts.RunID, Task: opts.Task, QuestionID: qid, Question: question, Answer: r.gold,
		QuestionType: r.questionType, Method: cmpOr(r.method, "react"), Policy: cmpOr(r.policy, "import:"+format), Attempt: attempt,
		Steps: r.steps, Prediction: r.pred, StopReason: pipeline.StopMaxSteps, LLMCalls: r.llmCalls,
	}
	for _, s := range r.steps {
		for _, c := range s.Calls {
			ep.Usage = ep.Usage.Add(c.Usage)
		}
	}
	if format == "openai-chat" {
		ep.Format = "chat"
	}
	if last := r.steps[len(r.steps)-1]; last.ActionType == pipeline.ActionFinish {
		ep.Finished, ep.StopReason = true, pipeline.StopFinished
		if ep.Prediction == "" {
			ep.Prediction = last.Argument
		}
	}
	if matched {
		ep.Answer = g.answer
		if g.typ != "" {
			ep.QuestionType = g.typ
		}
	}
	if opts.Task == pipeline.TaskFEVER {
		// Labels in the dataset's spelling, as generated episodes carry them.
		ep.Prediction, _ = score.Label(ep.Prediction)
		ep.Answer, _ = score.Label(ep.Answer)
	}
	switch {
	case matched || (ep.Answer != "" && r.outcome == nil):
		ep.Correct, ep.EM, ep.F1 = score.Score(opts.Task, ep.Prediction, ep.Answer)
	case r.outcome != nil:
		ep.Correct = *r.outcome
		if ep.Answer != "" {
			_, ep.EM, ep.F1 = score.Score(opts.Task, ep.Prediction, ep.Answer)
		} else if ep.Correct {
			// A recorded success means the prediction matched the gold answer the
			// source scored against, so it stands in for the gold the file omits.
			ep.EM, ep.F1 = 1, 1
			ep.Answer = ep.Prediction
		}
	}
	if r.em != nil {
		ep.EM = *r.em
	}
	if r.f1 != nil {
		ep.F1 = *r.f1
	}
	for _, s := range ep.Steps {
		if s.ActionType == pipeline.ActionInvalid {
			ep.BadCalls++
		}
	}
	return ep
}

// rewardRe matches the closing observation of FireAct and the paper's environment.
var rewardRe = regexp.MustCompile(`(?i)episode finished,?\s*reward\s*=\s*([A-Za-z0-9.]+)`)

// ParseReward reads the outcome of a closing observation such as "Episode finished,
// reward = True": True, 1 and 1.0 are a success, False and 0 a failure; ok is false when
// the text holds no outcome marker.
func ParseReward(obs string) (correct, ok bool) {
	m := rewardRe.FindStringSubmatch(obs)
	if m == nil {
		return false, false
	}
	v := strings.ToLower(m[1])
	if v == "true" {
		return true, true
	}
	if v == "false" {
		return false, true
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "."), 64)
	if err != nil {
		return false, false
	}
	return f > 0, true
}

var (
	obsLabelRe  = regexp.MustCompile(`(?im)^[ \t]*observation[ \t]*\d*[ \t]*:[ \t]?`)
	turnLabelRe = regexp.MustCompile(`(?im)^[ \t]*(?:thought|action)[ \t]*\d*[ \t]*:`)
	questionRe  = regexp.MustCompile(`(?im)^[ \t]*(?:question|claim)[ \t]*:[ \t]*(.*)$`)
)

// stripLabel drops a leading "Observation:", "Question:" or "Claim:" label.
func stripLabel(s string) string {
	s = strings.TrimSpace(s)
	for _, l := range []string{"observation", "question", "claim"} {
		if len(s) > len(l) && strings.EqualFold(s[:len(l)], l) {
			rest := strings.TrimLeft(s[len(l):], " \t0123456789")
			if strings.HasPrefix(rest, ":") {
				return strings.TrimSpace(rest[1:])
			}
		}
	}
	return s
}

// step turns one assistant turn into a step.
func step(text string, n int) pipeline.Step {
	p := react.Step(text, n)
	return pipeline.Step{Thought: p.Thought, Action: p.Action, ActionType: cmpOr(p.ActionType, pipeline.ActionInvalid), Argument: p.Argument}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// markRefused marks a step invalid when the recorded environment answered "Invalid
// action": the corpus' own verdict wins over the tolerant parser, so an episode whose
// Finish was refused is not counted as finished.
func markRefused(s *pipeline.Step) {
	if len(s.Observation) >= 14 && strings.EqualFold(s.Observation[:14], "invalid action") {
		s.ActionType, s.Argument = pipeline.ActionInvalid, ""
	}
}

// steps reads a trajectory written as text (Thought / Action / Observation lines,
// numbered or not) into steps, and the outcome of its closing observation.
func steps(text string) ([]pipeline.Step, *bool) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []pipeline.Step
	var outcome *bool
	pos := 0
	for _, loc := range obsLabelRe.FindAllStringIndex(text, -1) {
		if loc[0] < pos {
			continue
		}
		chunk := text[pos:loc[0]]
		end := len(text)
		if next := turnLabelRe.FindStringIndex(text[loc[1]:]); next != nil {
			end = loc[1] + next[0]
		}
		obs := strings.TrimSpace(text[loc[1]:end])
		pos = end
		if c, ok := ParseReward(obs); ok {
			outcome = &c
		}
		if strings.TrimSpace(chunk) == "" {
			if len(out) > 0 {
				out[len(out)-1].Observation = strings.TrimSpace(out[len(out)-1].Observation + "\n" + obs)
			}
			continue
		}
		s := step(chunk, len(out)+1)
		s.Observation = obs
		markRefused(&s)
		out = append(out, s)
	}
	if rest := text[pos:]; strings.TrimSpace(rest) != "" {
		out = append(out, step(rest, len(out)+1))
	}
	return out, outcome
}

type goldRec struct {
	id, answer, typ string
	pos             int // 0-based position in the gold file
}

type goldSet struct {
	byID   map[string]goldRec
	byText map[string][]goldRec
}

// find matches by normalised question text; when the text is ambiguous (FEVER repeats
// some claims with different labels) the record whose id, or position, equals the
// corpus' id wins, else the first. Without a text match, the id alone decides.
func (g *goldSet) find(id, question string) (goldRec, bool) {
	if g == nil {
		return goldRec{}, false
	}
	if rs := g.byText[score.NormalizeAnswer(question)]; len(rs) > 0 {
		for _, r := range rs {
			if id != "" && (r.id == id || strconv.Itoa(r.pos) == id) {
				return r, true
			}
		}
		return rs[0], true
	}
	r, ok := g.byID[id]
	return r, ok && id != ""
}

// loadGold reads a question file of the import's task with the project's question
// reader (dataset): HotpotQA JSON (full or simplified), FEVER JSONL or generic JSONL.
func loadGold(path, task string) (*goldSet, error) {
	r, err := dataset.Open(path, dataset.Options{Task: task})
	if err != nil {
		return nil, fmt.Errorf("import gold: %w", err)
	}
	defer r.Close()
	g := &goldSet{byID: map[string]goldRec{}, byText: map[string][]goldRec{}}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return g, nil
		}
		if err != nil {
			return nil, fmt.Errorf("import gold: %w", err)
		}
		gr := goldRec{id: rec.ID, answer: rec.Answer, typ: rec.Type, pos: rec.Index}
		g.byID[gr.id] = gr
		k := score.NormalizeAnswer(rec.Question.Question)
		g.byText[k] = append(g.byText[k], gr)
	}
}
