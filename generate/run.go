package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/pipeline"
)

// Why a run stopped, as in Summary.Stopped.
const (
	StoppedDone        = "done"        // every planned episode ran
	StoppedTarget      = "target"      // generate.target_correct episodes the filter will keep exist
	StoppedBudget      = "budget"      // the LLM budget ran out (resumable)
	StoppedInterrupted = "interrupted" // ctx was cancelled (resumable)
	StoppedUnusable    = "unusable"    // every request failed: llm.ErrUnusable
	StoppedEnvironment = "environment" // the environment stopped answering: ErrEnvironmentDown
)

// Tally counts the episodes the filter will keep, as generate writes them, so that
// generate.target_correct counts those (correct and distinct per question under the run's
// dedupe policy, not merely correct) and further attempts go only to questions that are
// not solved. cmd builds one from the run's filter (filter.Chain.Tally); a nil Tally in
// RunOptions counts correct episodes and calls a question solved once one is. Its methods
// are called under one lock, never concurrently.
type Tally interface {
	// Add counts a written episode and reports whether the filter will keep it.
	Add(ep *pipeline.Episode) bool
	// Solved reports whether the question holds as many kept episodes as the filter
	// keeps per question: a further attempt at it could add none.
	Solved(questionID string) bool
	// Kept is how many episodes counted so far the filter will keep.
	Kept() int
}

// correctTally is the Tally without a filter: correct episodes, one question solved by
// its first.
type correctTally struct {
	n      int
	solved map[string]bool
}

func (c *correctTally) Add(ep *pipeline.Episode) bool {
	if !ep.Correct || ep.Retryable() {
		return false
	}
	if c.solved == nil {
		c.solved = map[string]bool{}
	}
	c.solved[ep.QuestionID] = true
	c.n++
	return true
}

func (c *correctTally) Solved(qid string) bool { return c.solved[qid] }
func (c *correctTally) Kept() int              { return c.n }

// RunOptions configure a bootstrap run.
type RunOptions struct {
	Config    pipeline.GenerateConfig
	LLM       pipeline.LLMConfig
	Task      string
	RunID     string
	Questions []pipeline.Question
	// Done holds the keys (pipeline.Episode.Key, "qid#attempt") already finished by an
	// earlier run; they are skipped. Tally, when set, has counted those episodes already
	// (nil: a fresh correctTally, which knows nothing of earlier runs).
	Done       map[string]bool
	Tally      Tally
	Prompts    prompt.Set                            // as loaded by prompt.Load
	CoTPrompts *prompt.Set                           // generate.cot_exemplars; nil = derived from Prompts (see RunnerOptions)
	NewEnv     func(q pipeline.Question) Environment // one episode's environment, for q (its answer is the paper reward's gold)
	Client     llm.Client
	NewActor   ActorFactory // nil = LLMActor
	// NewGame and GamePrompts serve a game task in place of NewEnv and Prompts (see
	// RunnerOptions).
	NewGame     func(q pipeline.Question) GameEnv
	GamePrompts map[string]string
	System      string // export.system, for generate.prompting trained (see RunnerOptions)
	Round       int    // the STaR round (see RunnerOptions)
	Sink        pipeline.Sink
	Progress    io.Writer // nil or generate.progress off = none
	Scoring     bool      // eval: count correct episodes, not kept ones (see Stage.Scoring)
	Logger      *slog.Logger
	// Hard, when set, is the context in-flight episodes run under: cancelling Run's ctx
	// stops new episodes, cancelling Hard (at the end of the grace period) cuts the
	// in-flight ones short (StopInterrupted). When nil, Run's ctx serves as both.
	Hard context.Context
}

// Summary is what a run did.
type Summary struct {
	Planned      int // episodes this run could run (after Done): at most, as solved questions get no further attempt
	Episodes     int // episodes written
	Correct      int // correct episodes written
	Kept         int // episodes written that the filter will keep (Tally)
	KeptTotal    int // episodes the filter will keep, this run's and earlier runs'
	Skipped      int // attempts not run because their question was solved
	Rationalized int // rationalized episodes written
	Requests     int
	Usage        pipeline.Usage
	Stopped      string // StoppedDone, StoppedTarget, StoppedBudget, StoppedInterrupted, StoppedUnusable or StoppedEnvironment
	Elapsed      time.Duration
}

type job struct {
	q           *pipeline.Question
	qi          int
	attempt     int
	rationalize bool
}

// Run bootstraps episodes (STaR-like): questions in a seeded shuffled order,
// generate.concurrency episodes in flight, each taking its next step as soon as its own
// reply arrives. A question gets up to generate.attempts attempts, one after another: the
// next only once the last has ended and only while the question is not solved (Tally),
// so that no attempt is spent on a question whose episodes the filter already keeps; a
// question's next attempt goes ahead of new questions. Run stops starting episodes once
// target_correct episodes the filter will keep exist (Tally: correct and distinct per
// question, with those of earlier runs), when the questions run out, when ctx ends, or
// when the budget runs out; the episodes in flight then finish (or are cut short by
// Hard). With generate.rationalize, questions whose attempts all failed get one more
// attempt, index generate.attempts, with the answer as a hint. Every episode is written
// to Sink and dropped. The error is non-nil only for llm.ErrUnusable, ErrToolsRefused,
// ErrEnvironmentDown (from an environment NewEnv guarded) or a Sink failure.
func Run(ctx context.Context, o RunOptions) (Summary, error) {
	start := time.Now()
	runner, err := NewRunner(RunnerOptions{
		Config: o.Config, LLM: o.LLM, Task: o.Task, RunID: o.RunID, Prompts: o.Prompts, CoTPrompts: o.CoTPrompts,
		Client: o.Client, NewEnv: o.NewEnv, NewActor: o.NewActor, System: o.System, Round: o.Round,
		NewGame: o.NewGame, GamePrompts: o.GamePrompts,
	})
	if err != nil {
		return Summary{}, err
	}
	if o.Sink == nil {
		return Summary{}, errors.New("generate: a sink is required")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hard := o.Hard
	if hard == nil {
		hard = ctx
	}
	tally := o.Tally
	if tally == nil {
		tally = &correctTally{}
	}
	attempts := max(o.Config.Attempts, 1)
	order := make([]int, len(o.Questions))
	for i := range order {
		order[i] = i
	}
	if o.Config.Shuffle {
		rng := rand.New(rand.NewPCG(uint64(o.Config.Seed), 0x5eed))
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	done := func(qi, a int) bool { return o.Done[fmt.Sprintf("%s#%d", o.Questions[qi].ID, a)] }
	var sum Summary
	for _, qi := range order {
		if tally.Solved(o.Questions[qi].ID) {
			continue
		}
		for a := range attempts {
			if !done(qi, a) {
				sum.Planned++
			}
		}
	}

	var (
		kept       atomic.Int64 // toward the target, with earlier runs'
		stopBudget atomic.Bool
		mu         sync.Mutex // guards sum's counters, tally, failed, fatal
		fatal      error
		// failed[qi] counts this run's failed attempts of question qi, for rationalization.
		failed = make([]uint16, len(o.Questions))
	)
	kept.Store(int64(tally.Kept()))
	prog := newProgress(o.Progress, o.Config.Progress, sum.Planned, o.Config.TargetCorrect, tally.Kept())
	prog.scoring = o.Scoring

	// stop reports why no new episode may start, or "".
	stop := func() string {
		mu.Lock()
		f := fatal
		mu.Unlock()
		switch {
		case f != nil:
			switch {
			case errors.Is(f, llm.ErrUnusable):
				return StoppedUnusable
			case errors.Is(f, ErrEnvironmentDown):
				return StoppedEnvironment
			}
			return StoppedInterrupted
		case stopBudget.Load():
			return StoppedBudget
		case ctx.Err() != nil:
			if errors.Is(context.Cause(ctx), ErrEnvironmentDown) {
				return StoppedEnvironment // a guard stopped new episodes (see envGuard)
			}
			return StoppedInterrupted
		case o.Config.TargetCorrect > 0 && kept.Load() >= int64(o.Config.TargetCorrect):
			return StoppedTarget
		}
		return ""
	}

	exec := func(j job) {
		var ep pipeline.Episode
		var err error
		ep, err = runner.run(hard, *j.q, j.attempt, j.rationalize)
		if errors.Is(err, llm.ErrBudget) {
			stopBudget.Store(true)
		}
		werr := o.Sink.Write(context.WithoutCancel(hard), ep)
		mu.Lock()
		defer mu.Unlock()
		if (stopsRun(err) || errors.Is(err, ErrToolsRefused)) && fatal == nil {
			fatal = err
		}
		if werr != nil && fatal == nil {
			fatal = fmt.Errorf("write episode %s: %w", ep.ID, werr)
		}
		if werr != nil {
			return
		}
		sum.Episodes++
		if ep.Rationalized {
			sum.Rationalized++
		}
		if ep.Correct {
			sum.Correct++
		} else if !j.rationalize && !ep.Retryable() {
			failed[j.qi]++
		}
		k := tally.Add(&ep)
		if k {
			sum.Kept++
			kept.Add(1)
		}
		sum.Requests += ep.LLMCalls
		sum.Usage = sum.Usage.Add(ep.Usage)
		prog.episode(ep, k)
		if err != nil {
			log.Debug("episode ended with an error", "episode", ep.ID, "question", ep.QuestionID, "stop", ep.StopReason, "err", err)
		}
	}

	// drive runs the jobs next hands out, up to generate.concurrency at once, until next
	// has none and none is in flight or a stop condition arises; ended is told of each
	// job that ended, in the driving goroutine, before next is asked again.
	conc := max(o.Config.Concurrency, 1)
	if o.LLM.Mode == "batch" {
		// A wave carries the requests pending when it is cut, so every question's episode
		// is in flight at once (up to the lines a batch takes): 100 questions take about
		// one wave per step, not one per generate.concurrency episodes.
		conc = max(conc, min(len(o.Questions), max(o.LLM.Batch.MaxLines, 1)))
	}
	drive := func(next func() (job, bool), ended func(job)) string {
		finished := make(chan job, conc)
		var wg sync.WaitGroup
		inflight := 0
		end := func(j job) {
			inflight--
			ended(j)
		}
		why := ""
		for {
			for inflight >= conc { // a slot first, so that no episode starts after a stop arose
				end(<-finished)
			}
		drain:
			for {
				select {
				case j := <-finished:
					end(j)
				default:
					break drain
				}
			}
			if why = stop(); why != "" {
				break
			}
			j, ok := next()
			if !ok {
				if inflight == 0 {
					break
				}
				end(<-finished)
				continue
			}
			inflight++
			wg.Go(func() {
				exec(j)
				finished <- j
			})
		}
		for inflight > 0 {
			end(<-finished)
		}
		wg.Wait()
		return why
	}

	solved := func(qi int) bool {
		mu.Lock()
		defer mu.Unlock()
		return tally.Solved(o.Questions[qi].ID)
	}
	// nextAttempt is the first attempt from a on that no earlier run finished, or -1.
	nextAttempt := func(qi, a int) int {
		for ; a < attempts; a++ {
			if !done(qi, a) {
				return a
			}
		}
		return -1
	}
	skip := func(qi, from int) {
		for a := from; a < attempts; a++ {
			if !done(qi, a) {
				sum.Skipped++
			}
		}
	}
	var again []job // questions' next attempts, ahead of new questions
	fresh := 0
	why := drive(func() (job, bool) {
		if len(again) > 0 {
			j := again[0]
			again = again[1:]
			return j, true
		}
		for fresh < len(order) {
			qi := order[fresh]
			fresh++
			if solved(qi) {
				continue
			}
			if a := nextAttempt(qi, 0); a >= 0 {
				return job{q: &o.Questions[qi], qi: qi, attempt: a}, true
			}
		}
		return job{}, false
	}, func(j job) {
		if solved(j.qi) {
			mu.Lock()
			skip(j.qi, j.attempt+1)
			mu.Unlock()
			return
		}
		if a := nextAttempt(j.qi, j.attempt+1); a >= 0 {
			again = append(again, job{q: j.q, qi: j.qi, attempt: a})
		}
	})
	if why == "" && o.Config.Rationalize {
		i := 0
		why = drive(func() (job, bool) {
			for i < len(order) {
				qi := order[i]
				i++
				mu.Lock()
				all := int(failed[qi]) >= attempts
				mu.Unlock()
				if !all || solved(qi) {
					continue // some attempt was correct, or an attempt did not run in this run
				}
				prog.plan(1)
				return job{q: &o.Questions[qi], qi: qi, attempt: attempts, rationalize: true}, true
			}
			return job{}, false
		}, func(job) {})
	}
	if why == "" {
		why = StoppedDone
	}
	sum.Stopped, sum.Elapsed, sum.KeptTotal = why, time.Since(start), int(kept.Load())
	prog.finish(why)
	if o.Scoring {
		log.Info("generation stopped", "why", why, "episodes", sum.Episodes, "correct", sum.Correct, "requests", sum.Requests)
	} else {
		log.Info("generation stopped", "why", why, "episodes", sum.Episodes, "correct", sum.Correct, "kept", sum.Kept,
			"kept_total", sum.KeptTotal, "skipped_attempts", sum.Skipped, "requests", sum.Requests)
	}
	if fatal != nil {
		if !stopsRun(fatal) {
			sum.Stopped = StoppedInterrupted
		}
		return sum, fatal
	}
	return sum, nil
}
