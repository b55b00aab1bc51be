// Package filter decides which generated episodes become training data. It consumes
// pipeline.Episode records (a stream, re-readable through Options.Reopen) and a
// pipeline.FilterConfig, and produces two streams, kept episodes and pipeline.Rejected
// records carrying every reason, plus Stats. Answers are scored by internal/score, the
// same code generate and the importer use. Stage is the filter stage of a run (a
// pipeline.Stage): episodes.jsonl into kept.jsonl and rejected.jsonl.
//
// Rules come in two kinds. A Rule judges one episode alone (correct, finished,
// answered_by, max_steps, no_invalid_actions, no_bad_calls, no_loops, max_tokens, decontaminate);
// every per-episode rule runs on every episode, so a rejected record lists all the
// per-episode rules it failed, in configured order. A GroupRule (dedupe, balance) sees
// the survivors of the per-episode rules together, runs in configured order on what the
// previous group rule left, and adds one reason to the episodes it drops.
//
// Imports: pipeline, env and the internal/ libraries; never another stage.
package filter

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/reactgen/reactgen/internal/levenshtein"
	"github.com/reactgen/reactgen/pipeline"
)

// Rule judges one episode by itself.
//
// Keep must not modify ep, must be safe for concurrent use, and returns (true, zero
// Reject) to keep; when it returns false the Reject names the rule and a snake_case code.
type Rule interface {
	Name() string
	Keep(ep *pipeline.Episode) (bool, pipeline.Reject)
}

// Candidate is the compact summary of one surviving episode that group rules decide
// on; group rules never hold whole episodes.
type Candidate struct {
	Index      int    // position in the input stream
	ID         string // episode id
	QuestionID string
	Class      string   // the balance class (label or question type); set under balance only
	Correct    bool     // the re-scored verdict
	Steps      int      // number of steps
	Trajectory uint64   // hash of the normalised action sequence and thoughts
	Actions    []uint64 // hashes of the normalised actions, in order

	masks  []pipeline.MaskedStep // filter.mask_steps, for the kept record
	remask bool                  // the kept record's masked_steps change
}

// GroupRule decides over all survivors at once.
//
// Select receives the candidates still alive, in input order, and returns the rejects
// it adds keyed by Candidate.Index; it must be deterministic for a given input.
type GroupRule interface {
	Name() string
	Select(cands []Candidate) map[int]pipeline.Reject
}

// TokenCounter counts the tokens of a text. Count is safe for concurrent use and never
// returns a negative number.
type TokenCounter interface {
	Count(s string) int
}

// Options hands the chain what the config cannot carry.
type Options struct {
	// Reopen re-reads the same input from its start, in the same order. With it, a
	// chain that has group rules keeps only a Candidate per survivor in memory and
	// reads the input twice; without it, survivors are buffered whole until the end.
	Reopen func() iter.Seq2[pipeline.Episode, error]
	// TokenCounters adds or overrides counters that filter.token_counter may name;
	// "estimate" and "bytes4" are built in.
	TokenCounters map[string]TokenCounter
}

// ClassStats counts one question type or label.
type ClassStats struct {
	In   int `json:"in"`
	Kept int `json:"kept"`
}

// Rate is the accepted share, 0 when nothing came in.
func (c ClassStats) Rate() float64 {
	if c.In == 0 {
		return 0
	}
	return float64(c.Kept) / float64(c.In)
}

// Contamination is one question dropped by decontaminate.
type Contamination struct {
	QuestionID string `json:"question_id"`
	EvalID     string `json:"eval_id"`
	EvalFile   string `json:"eval_file"`
	Match      string `json:"match"` // exact or 13-gram
}

// Stats summarises one Run.
type Stats struct {
	In       int `json:"in"`
	Kept     int `json:"kept"`
	Rejected int `json:"rejected"`
	// ByRule counts rejects per rule and code; an episode failing two rules counts in both.
	ByRule map[string]map[string]int `json:"by_rule"`
	// ByType and ByLabel count episodes in and kept per HotpotQA question type and per
	// gold FEVER label (the episode's Answer for FEVER).
	ByType  map[string]ClassStats `json:"by_type,omitempty"`
	ByLabel map[string]ClassStats `json:"by_label,omitempty"`
	// Decontaminated lists each contaminated question once.
	Decontaminated []Contamination `json:"decontaminated,omitempty"`
	// Masked counts the masked steps of kept episodes per filter.mask_steps code, and
	// MaskedEpisodes the kept episodes with at least one.
	Masked         map[string]int `json:"masked,omitempty"`
	MaskedEpisodes int            `json:"masked_episodes,omitempty"`
}

// Chain is a configured filter. A Chain is not safe for concurrent Runs.
type Chain struct {
	task   string
	rules  []Rule
	groups []GroupRule
	decon  *decontaminate
	bal    string   // filter.balance_by under the balance rule, else ""
	mask   []string // filter.mask_steps codes, in MaskCodes order
	opts   Options
}

// RuleNames are the rule names filter.rules accepts.
var RuleNames = []string{"correct", "finished", "answered_by", "max_steps", "no_invalid_actions", "no_bad_calls",
	"no_loops", "max_tokens", "dedupe", "decontaminate", "balance"}

// New builds the chain that cfg describes for a task. It loads filter.eval_files when
// decontaminate is on (failing on a file it cannot read) and rejects unknown rule names,
// dedupe policies, balance keys and token counters.
func New(cfg pipeline.FilterConfig, task string, opts Options) (*Chain, error) {
	c := &Chain{task: task, opts: opts}
	mask, err := newMasker(cfg.MaskSteps, cfg.Rules)
	if err != nil {
		return nil, err
	}
	c.mask = mask
	seen := map[string]bool{}
	for _, name := range cfg.Rules {
		if seen[name] {
			return nil, &pipeline.ConfigError{Key: "filter.rules", Message: fmt.Sprintf("rule %q is listed twice", name)}
		}
		seen[name] = true
		switch name {
		case "correct":
			c.rules = append(c.rules, correctRule{task: task, minF1: cfg.MinF1, minReward: cfg.MinReward})
		case "finished":
			c.rules = append(c.rules, finishedRule{})
		case "answered_by":
			r, err := newAnsweredBy(cfg.AnsweredBy)
			if err != nil {
				return nil, err
			}
			c.rules = append(c.rules, r)
		case "max_steps":
			c.rules = append(c.rules, maxStepsRule{max: cfg.MaxSteps})
		case "no_invalid_actions":
			c.rules = append(c.rules, noInvalidRule{})
		case "no_bad_calls":
			c.rules = append(c.rules, noBadCallsRule{})
		case "no_loops":
			c.rules = append(c.rules, noLoopsRule{})
		case "max_tokens":
			tc, err := counterFor(cfg.TokenCounter, opts.TokenCounters)
			if err != nil {
				return nil, err
			}
			c.rules = append(c.rules, maxTokensRule{max: cfg.MaxTokens, counter: tc})
		case "decontaminate":
			d, err := loadDecontaminate(cfg.EvalFiles)
			if err != nil {
				return nil, err
			}
			c.decon = d
			c.rules = append(c.rules, d)
		case "dedupe":
			switch cfg.DedupePolicy {
			case "", "first", "shortest", "diverse":
			default:
				return nil, &pipeline.ConfigError{Key: "filter.dedupe_policy", Message: fmt.Sprintf("%q is not one of first, shortest, diverse", cfg.DedupePolicy)}
			}
			c.groups = append(c.groups, dedupeRule{max: cfg.MaxPerQuestion, policy: cfg.DedupePolicy})
		case "balance":
			switch cfg.BalanceBy {
			case "label", "type":
			default:
				return nil, &pipeline.ConfigError{Key: "filter.balance_by", Message: fmt.Sprintf("%q is not one of label, type", cfg.BalanceBy)}
			}
			if cfg.BalanceTolerance < 0 {
				return nil, &pipeline.ConfigError{Key: "filter.balance_tolerance", Message: "must not be negative"}
			}
			c.bal = cfg.BalanceBy
			c.groups = append(c.groups, balanceRule{tolerance: cfg.BalanceTolerance})
		default:
			return nil, &pipeline.ConfigError{Key: "filter.rules", Message: fmt.Sprintf("unknown rule %q (did you mean %q? valid: %s)",
				name, nearest(name, RuleNames), strings.Join(RuleNames, ", "))}
		}
	}
	return c, nil
}

// Rules returns the names of the configured rules, per-episode rules first.
func (c *Chain) Rules() []string {
	var names []string
	for _, r := range c.rules {
		names = append(names, r.Name())
	}
	for _, g := range c.groups {
		names = append(names, g.Name())
	}
	return names
}

// Run reads every episode of in, calls keep for each kept episode and reject for each
// rejected one, and returns the counts. Episodes failing a per-episode rule are rejected
// as they stream past; kept ones come out in input order. Without group rules Run holds
// nothing. With group rules it keeps a Candidate per survivor and, with Options.Reopen,
// reads the input a second time to emit the survivors' verdicts in input order (an input
// whose ids changed between the passes is an error); without Reopen it buffers the
// survivors. An error from in, keep or reject stops the run and is returned.
func (c *Chain) Run(ctx context.Context, in iter.Seq2[pipeline.Episode, error],
	keep func(pipeline.Episode) error, reject func(pipeline.Rejected) error) (Stats, error) {
	var reopen rereader
	if c.opts.Reopen != nil {
		reopen = everyRecord(func() iter.Seq2[record, error] { return episodeRecords(c.opts.Reopen()) })
	}
	var k func(record) error
	if keep != nil {
		k = func(r record) error {
			ep := *r.ep
			if r.remask {
				ep.MaskedSteps = r.masks
			}
			return keep(ep)
		}
	}
	var rj func(record, []pipeline.Reject) error
	if reject != nil {
		rj = func(r record, rejects []pipeline.Reject) error {
			return reject(pipeline.Rejected{Episode: *r.ep, Rejects: rejects})
		}
	}
	return c.run(ctx, episodeRecords(in), reopen, k, rj)
}

// RunLines is Run over an episode file read with its lines (pipeline.ReadEpisodeLines):
// each kept record reaches keep as its line, unchanged (but for its masked_steps, under
// filter.mask_steps: a record whose masks change is encoded again), and each rejected one reaches
// reject as its line with its rejects, so that the caller copies records instead of
// encoding them again. With group rules, reopen re-reads the same records from the start
// in the same order; that second pass needs only their ids and lines (ReadEpisodeLines
// with decode false), and Options.Reopen is not used. Without reopen the survivors are
// buffered. A line handed to keep or reject is only valid during the call.
func (c *Chain) RunLines(ctx context.Context, in iter.Seq2[pipeline.EpisodeLine, error],
	reopen func() iter.Seq2[pipeline.EpisodeLine, error],
	keep func(line []byte) error, reject func(line []byte, rejects []pipeline.Reject) error) (Stats, error) {
	var again rereader
	if reopen != nil {
		again = everyRecord(func() iter.Seq2[record, error] { return lineRecords(reopen(), false) })
	}
	return c.runLines(ctx, in, again, keep, reject)
}

// runLines is RunLines with its second pass's reader.
func (c *Chain) runLines(ctx context.Context, in iter.Seq2[pipeline.EpisodeLine, error], again rereader,
	keep func(line []byte) error, reject func(line []byte, rejects []pipeline.Reject) error) (Stats, error) {
	var k func(record) error
	if keep != nil {
		k = func(r record) error {
			if !r.remask {
				return keep(r.line)
			}
			line, err := remask(r.line, r.masks)
			if err != nil {
				return err
			}
			return keep(line)
		}
	}
	var rj func(record, []pipeline.Reject) error
	if reject != nil {
		rj = func(r record, rejects []pipeline.Reject) error { return reject(r.line, rejects) }
	}
	return c.run(ctx, lineRecords(in, true), again, k, rj)
}

// record is one input record as the chain sees it: the episode (nil in a second pass
// over lines), its id, and its line when the input is a file read by lines. A kept record
// whose masked steps differ from what it holds (remask) is kept with masks.
type record struct {
	ep     *pipeline.Episode
	id     string
	line   []byte
	masks  []pipeline.MaskedStep
	remask bool
}

func episodeRecords(in iter.Seq2[pipeline.Episode, error]) iter.Seq2[record, error] {
	return func(yield func(record, error) bool) {
		for ep, err := range in {
			if !yield(record{ep: &ep, id: ep.ID}, err) {
				return
			}
		}
	}
}

func lineRecords(in iter.Seq2[pipeline.EpisodeLine, error], decoded bool) iter.Seq2[record, error] {
	if !decoded { // the record's episode is not kept: nothing of it goes to the heap
		return func(yield func(record, error) bool) {
			for rec, err := range in {
				if !yield(record{id: rec.Episode.ID, line: rec.Line}, err) {
					return
				}
			}
		}
	}
	return func(yield func(record, error) bool) {
		for rec, err := range in {
			if !yield(record{ep: &rec.Episode, id: rec.Episode.ID, line: rec.Line}, err) {
				return
			}
		}
	}
}

// run is Run and RunLines: the first pass judges each record, the second (reopen, or
// the buffered survivors) emits the group rules' verdicts.
func (c *Chain) run(ctx context.Context, in iter.Seq2[record, error], reopen rereader,
	keep func(record) error, reject func(record, []pipeline.Reject) error) (Stats, error) {
	st := Stats{ByRule: map[string]map[string]int{}, ByType: map[string]ClassStats{}, ByLabel: map[string]ClassStats{}}
	if c.decon != nil {
		c.decon.reported = map[string]bool{}
		c.decon.found = nil
	}
	sv, err := c.firstPass(ctx, &st, in, reopen == nil, keep, reject)
	if err != nil {
		return st, err
	}
	if c.decon != nil {
		st.Decontaminated = c.decon.found
	}
	if len(c.groups) == 0 {
		return st, nil
	}
	cands := sv.jobs.wait()
	verdict := c.decide(cands) // candidate position -> reject (absent: keep)
	emit := func(pos int, rec record) error {
		if r, ok := verdict[pos]; ok {
			return c.emitReject(&st, rec, []pipeline.Reject{r}, reject)
		}
		rec.masks, rec.remask = cands[pos].masks, cands[pos].remask
		return c.emitKeep(&st, rec, sv.classes[pos], keep)
	}
	if reopen == nil {
		for i, rec := range sv.buffered {
			if err := emit(i, rec); err != nil {
				return st, err
			}
		}
		return st, nil
	}
	return st, secondPass(ctx, reopen, cands, emit)
}

// survivors is what the first pass keeps of the records that every per-episode rule
// kept, for the group rules: their candidates, their classes (per candidate) and, with no
// second pass, the records themselves.
type survivors struct {
	jobs     *candidateJobs
	classes  []class
	buffered []record
}

// firstPass judges each record of in: a rejected one is emitted at once, and so is a
// kept one when there are no group rules; the others become candidates.
func (c *Chain) firstPass(ctx context.Context, st *Stats, in iter.Seq2[record, error], buffer bool,
	keep func(record) error, reject func(record, []pipeline.Reject) error) (survivors, error) {
	sv := survivors{jobs: newCandidateJobs(c)}
	idx := -1
	for rec, err := range in {
		if err != nil {
			return sv, fmt.Errorf("filter: read episode %d: %w", idx+2, err)
		}
		if err := ctx.Err(); err != nil {
			return sv, err
		}
		idx++
		st.In++
		cl := c.classOf(rec.ep)
		c.countIn(st, cl)
		if rejects := c.judge(rec.ep); len(rejects) > 0 {
			if err := c.emitReject(st, rec, rejects, reject); err != nil {
				return sv, err
			}
			continue
		}
		if len(c.groups) == 0 {
			rec.masks = maskSteps(rec.ep, c.mask)
			rec.remask = len(rec.masks) > 0 || len(rec.ep.MaskedSteps) > 0
			if err := c.emitKeep(st, rec, cl, keep); err != nil {
				return sv, err
			}
			continue
		}
		sv.jobs.add(idx, rec.ep)
		sv.classes = append(sv.classes, cl)
		if buffer {
			ep := *rec.ep
			sv.buffered = append(sv.buffered, record{ep: &ep, id: rec.id, line: bytes.Clone(rec.line)})
		}
	}
	return sv, nil
}

// rereader reads the input again for the second pass: the records of the candidates, in
// their order (the input's), and no others.
type rereader func(cands []Candidate) iter.Seq2[record, error]

// everyRecord is the rereader of an input read again whole: it picks the candidates'
// records by their input positions (Candidate.Index).
func everyRecord(reread func() iter.Seq2[record, error]) rereader {
	return func(cands []Candidate) iter.Seq2[record, error] {
		return func(yield func(record, error) bool) {
			idx, k := -1, 0
			for rec, err := range reread() {
				if err != nil {
					yield(record{}, fmt.Errorf("read episode %d: %w", idx+2, err))
					return
				}
				idx++
				if k == len(cands) {
					return
				}
				if idx == cands[k].Index {
					k++
					if !yield(rec, nil) {
						return
					}
				}
			}
		}
	}
}

// secondPass reads the candidates' records again and emits each one's; an input whose
// ids changed between the passes is an error.
func secondPass(ctx context.Context, reopen rereader, cands []Candidate, emit func(pos int, rec record) error) error {
	if len(cands) == 0 {
		return nil
	}
	for i := 1; i < len(cands); i++ {
		if cands[i].Index <= cands[i-1].Index {
			return fmt.Errorf("filter: second pass: candidates out of input order (%d after %d)", cands[i].Index, cands[i-1].Index)
		}
	}
	pos := 0
	for rec, err := range reopen(cands) {
		if err != nil {
			return fmt.Errorf("filter: second pass: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if pos == len(cands) || rec.id != cands[pos].ID {
			want := "none"
			if pos < len(cands) {
				want = cands[pos].ID
			}
			return fmt.Errorf("filter: second pass: episode %d is %s, first pass saw %s: the input changed", cands[min(pos, len(cands)-1)].Index+1, rec.id, want)
		}
		if err := emit(pos, rec); err != nil {
			return err
		}
		pos++
	}
	if pos < len(cands) {
		return fmt.Errorf("filter: second pass: input ended %d episodes early", len(cands)-pos)
	}
	return nil
}

// judge runs every per-episode rule and returns all their rejects.
func (c *Chain) judge(ep *pipeline.Episode) []pipeline.Reject {
	var out []pipeline.Reject
	for _, r := range c.rules {
		if ok, rej := r.Keep(ep); !ok {
			if rej.Rule == "" {
				rej.Rule = r.Name()
			}
			out = append(out, rej)
		}
	}
	return out
}

// decide runs the group rules in order over the shrinking set of candidates and returns
// the rejects keyed by position in cands.
func (c *Chain) decide(cands []Candidate) map[int]pipeline.Reject {
	pos := func(index int) int { // cands are in input order
		i, _ := slices.BinarySearchFunc(cands, index, func(cd Candidate, index int) int { return cmp.Compare(cd.Index, index) })
		return i
	}
	out := map[int]pipeline.Reject{}
	alive := cands
	for _, g := range c.groups {
		rejects := g.Select(slices.Clone(alive))
		if len(rejects) == 0 {
			continue
		}
		next := alive[:0:0]
		for _, cd := range alive {
			if r, ok := rejects[cd.Index]; ok {
				if r.Rule == "" {
					r.Rule = g.Name()
				}
				out[pos(cd.Index)] = r
				continue
			}
			next = append(next, cd)
		}
		alive = next
	}
	return out
}

// nearest returns the valid name closest to a mistyped one.
func nearest(s string, candidates []string) string {
	best, _ := levenshtein.Nearest(s, candidates)
	return best
}

// ErrNoEvalFiles is returned by New when decontaminate is on and filter.eval_files is
// empty.
var ErrNoEvalFiles = errors.New("filter.eval_files is empty: decontaminate needs the evaluation questions")

// Reject codes, as written to rejected.jsonl.
const (
	CodeWrongAnswer     = "wrong_answer"
	CodeNotFinished     = "not_finished"
	CodeTooManySteps    = "too_many_steps"
	CodeInvalidAction   = "invalid_action"
	CodeBadCall         = "bad_call"
	CodeLoop            = "loop"
	CodeTooLong         = "too_long"
	CodeDuplicate       = "duplicate"
	CodeOverQuestionCap = "over_question_cap"
	CodeContaminated    = "contaminated"
	CodeOverBalance     = "over_balance"
	CodeOtherBranch     = "other_branch"
)
