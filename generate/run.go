package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
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
// when the budget runs out; the episodes in flight then finish. With
// generate.rationalize, questions whose attempts all failed get one more attempt, index
// generate.attempts, with the answer as a hint. Every episode is written to Sink and
// dropped. The error is non-nil only for llm.ErrUnusable, ErrToolsRefused,
// ErrEnvironmentDown (from an environment NewEnv guarded) or a Sink failure. While it
// runs, the collector lets the heap grow by 64 MiB above the live heap unless GOGC or
// GOMEMLIMIT is set (see paceGC).
func Run(ctx context.Context, o RunOptions) (Summary, error) {
	return RunGraceful(ctx, ctx, o)
}

// RunGraceful is Run with a grace period: cancelling ctx stops new episodes, and the
// episodes in flight run under hard, so that cancelling hard (at the end of the grace
// period) cuts them short (StopInterrupted).
func RunGraceful(ctx, hard context.Context, o RunOptions) (Summary, error) {
	start := time.Now()
	defer paceGC()()
	b, err := newBootstrap(o)
	if err != nil {
		return Summary{}, err
	}
	why := b.attempts(ctx, hard)
	if why == "" && o.Config.Rationalize {
		why = b.rationalize(ctx, hard)
	}
	if why == "" {
		why = StoppedDone
	}
	return b.finish(why, time.Since(start))
}

// bootstrap is the state of one Run: the plan, the counters the episodes add to and the
// error that stops the run.
type bootstrap struct {
	o        RunOptions
	runner   *Runner
	log      *slog.Logger
	tally    Tally
	tries    int   // generate.attempts, at least 1
	order    []int // question indexes in the order they start
	conc     int   // episodes in flight at most
	prog     *progress
	kept     atomic.Int64 // toward the target, with earlier runs'
	noBudget atomic.Bool

	mu    sync.Mutex // guards sum's counters, tally, failed, fatal
	sum   Summary
	fatal error
	// failed[qi] counts this run's failed attempts of question qi, for rationalization.
	failed []uint16
}

// newBootstrap checks o, orders the questions and counts the planned episodes.
func newBootstrap(o RunOptions) (*bootstrap, error) {
	runner, err := NewRunner(RunnerOptions{
		Config: o.Config, LLM: o.LLM, Task: o.Task, RunID: o.RunID, Prompts: o.Prompts, CoTPrompts: o.CoTPrompts,
		Client: o.Client, NewEnv: o.NewEnv, NewActor: o.NewActor, System: o.System, Round: o.Round,
		NewGame: o.NewGame, GamePrompts: o.GamePrompts,
	})
	if err != nil {
		return nil, err
	}
	if o.Sink == nil {
		return nil, errors.New("generate: a sink is required")
	}
	b := &bootstrap{o: o, runner: runner, log: o.Logger, tally: o.Tally, tries: max(o.Config.Attempts, 1),
		failed: make([]uint16, len(o.Questions))}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.tally == nil {
		b.tally = &correctTally{}
	}
	b.order = make([]int, len(o.Questions))
	for i := range b.order {
		b.order[i] = i
	}
	if o.Config.Shuffle {
		rng := rand.New(rand.NewPCG(uint64(o.Config.Seed), 0x5eed))
		rng.Shuffle(len(b.order), func(i, j int) { b.order[i], b.order[j] = b.order[j], b.order[i] })
	}
	for _, qi := range b.order {
		if b.tally.Solved(o.Questions[qi].ID) {
			continue
		}
		for a := range b.tries {
			if !b.done(qi, a) {
				b.sum.Planned++
			}
		}
	}
	b.kept.Store(int64(b.tally.Kept()))
	b.prog = newProgress(o.Progress, o.Config.Progress, b.sum.Planned, o.Config.TargetCorrect, b.tally.Kept())
	b.prog.scoring = o.Scoring
	b.conc = max(o.Config.Concurrency, 1)
	if o.LLM.Mode == "batch" {
		// A wave carries the requests pending when it is cut, so every question's episode
		// is in flight at once (up to the lines a batch takes): 100 questions take about
		// one wave per step, not one per generate.concurrency episodes.
		b.conc = max(b.conc, min(len(o.Questions), max(o.LLM.Batch.MaxLines, 1)))
	}
	return b, nil
}

// done reports whether an earlier run finished attempt a of question qi. The key is
// pipeline.Episode.Key's, built without fmt: done is asked of every attempt as it is
// planned, started and ended.
func (b *bootstrap) done(qi, a int) bool {
	if len(b.o.Done) == 0 {
		return false
	}
	return b.o.Done[b.o.Questions[qi].ID+"#"+strconv.Itoa(a)]
}

// stop reports why no new episode may start, or "".
func (b *bootstrap) stop(ctx context.Context) string {
	b.mu.Lock()
	f := b.fatal
	b.mu.Unlock()
	switch {
	case f != nil:
		switch {
		case errors.Is(f, llm.ErrUnusable):
			return StoppedUnusable
		case errors.Is(f, ErrEnvironmentDown):
			return StoppedEnvironment
		}
		return StoppedInterrupted
	case b.noBudget.Load():
		return StoppedBudget
	case ctx.Err() != nil:
		if errors.Is(context.Cause(ctx), ErrEnvironmentDown) {
			return StoppedEnvironment // a guard stopped new episodes (see envGuard)
		}
		return StoppedInterrupted
	case b.o.Config.TargetCorrect > 0 && b.kept.Load() >= int64(b.o.Config.TargetCorrect):
		return StoppedTarget
	}
	return ""
}

// exec runs one episode under hard, writes it to the sink and counts it.
func (b *bootstrap) exec(hard context.Context, j job) {
	ep, err := b.runner.run(hard, *j.q, j.attempt, j.rationalize)
	if errors.Is(err, llm.ErrBudget) {
		b.noBudget.Store(true)
	}
	werr := b.o.Sink.Write(context.WithoutCancel(hard), ep)
	b.mu.Lock()
	defer b.mu.Unlock()
	if (stopsRun(err) || errors.Is(err, ErrToolsRefused)) && b.fatal == nil {
		b.fatal = err
	}
	if werr != nil && b.fatal == nil {
		b.fatal = fmt.Errorf("write episode %s: %w", ep.ID, werr)
	}
	if werr != nil {
		return
	}
	sum := &b.sum
	sum.Episodes++
	if ep.Rationalized {
		sum.Rationalized++
	}
	if ep.Correct {
		sum.Correct++
	} else if !j.rationalize && !ep.Retryable() {
		b.failed[j.qi]++
	}
	k := b.tally.Add(&ep)
	if k {
		sum.Kept++
		b.kept.Add(1)
	}
	sum.Requests += ep.LLMCalls
	sum.Usage = sum.Usage.Add(ep.Usage)
	b.prog.episode(ep, k)
	if err != nil {
		b.log.Debug("episode ended with an error", "episode", ep.ID, "question", ep.QuestionID, "stop", ep.StopReason, "err", err)
	}
}

// drive runs the jobs next hands out, up to b.conc at once, until next has none and
// none is in flight or a stop condition arises (the reason it returns); ended is told of
// each job that ended, in the driving goroutine, before next is asked again.
//
// The jobs run on up to b.conc worker goroutines, each started when every other one is
// busy and kept until drive returns: an episode's goroutine grows its stack from 2 KiB
// to tens of KiB (the client's decorators, go-openai and net/http are deep), and a
// fresh goroutine per episode copied its stack at each doubling: runtime.copystack was
// 4.4% of the client's CPU in BenchmarkCallCPU.
func (b *bootstrap) drive(ctx, hard context.Context, next func() (job, bool), ended func(job)) string {
	finished := make(chan job, b.conc)
	jobs := make(chan job)
	var wg sync.WaitGroup
	inflight, workers := 0, 0
	end := func(j job) {
		inflight--
		ended(j)
	}
	why := ""
	for {
		for inflight >= b.conc { // a slot first, so that no episode starts after a stop arose
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
		if why = b.stop(ctx); why != "" {
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
		if workers < inflight { // a worker not counted in flight is free, or soon will be
			workers++
			wg.Go(func() {
				for j := range jobs {
					b.exec(hard, j)
					finished <- j
				}
			})
		}
		jobs <- j
	}
	for inflight > 0 {
		end(<-finished)
	}
	close(jobs)
	wg.Wait()
	return why
}

func (b *bootstrap) solved(qi int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tally.Solved(b.o.Questions[qi].ID)
}

// nextAttempt is the first attempt from a on that no earlier run finished, or -1.
func (b *bootstrap) nextAttempt(qi, a int) int {
	for ; a < b.tries; a++ {
		if !b.done(qi, a) {
			return a
		}
	}
	return -1
}

// attempts drives the questions' attempts: a question's next attempt, once its last
// ended and while it is not solved, goes ahead of new questions.
func (b *bootstrap) attempts(ctx, hard context.Context) string {
	var again []job // questions' next attempts, ahead of new questions
	fresh := 0
	return b.drive(ctx, hard, func() (job, bool) {
		if len(again) > 0 {
			j := again[0]
			again = again[1:]
			return j, true
		}
		for fresh < len(b.order) {
			qi := b.order[fresh]
			fresh++
			if b.solved(qi) {
				continue
			}
			if a := b.nextAttempt(qi, 0); a >= 0 {
				return job{q: &b.o.Questions[qi], qi: qi, attempt: a}, true
			}
		}
		return job{}, false
	}, func(j job) {
		if b.solved(j.qi) {
			b.mu.Lock()
			for a := j.attempt + 1; a < b.tries; a++ {
				if !b.done(j.qi, a) {
					b.sum.Skipped++
				}
			}
			b.mu.Unlock()
			return
		}
		if a := b.nextAttempt(j.qi, j.attempt+1); a >= 0 {
			again = append(again, job{q: j.q, qi: j.qi, attempt: a})
		}
	})
}

// rationalize drives one more attempt, with the answer as a hint, at each question whose
// attempts in this run all failed.
func (b *bootstrap) rationalize(ctx, hard context.Context) string {
	i := 0
	return b.drive(ctx, hard, func() (job, bool) {
		for i < len(b.order) {
			qi := b.order[i]
			i++
			b.mu.Lock()
			all := int(b.failed[qi]) >= b.tries
			b.mu.Unlock()
			if !all || b.solved(qi) {
				continue // some attempt was correct, or an attempt did not run in this run
			}
			b.prog.plan(1)
			return job{q: &b.o.Questions[qi], qi: qi, attempt: b.tries, rationalize: true}, true
		}
		return job{}, false
	}, func(job) {})
}

// finish logs why the run stopped and returns its summary and the error that stopped it.
func (b *bootstrap) finish(why string, elapsed time.Duration) (Summary, error) {
	sum := b.sum
	sum.Stopped, sum.Elapsed, sum.KeptTotal = why, elapsed, int(b.kept.Load())
	b.prog.finish(why)
	if b.o.Scoring {
		b.log.Info("generation stopped", "why", why, "episodes", sum.Episodes, "correct", sum.Correct, "requests", sum.Requests)
	} else {
		b.log.Info("generation stopped", "why", why, "episodes", sum.Episodes, "correct", sum.Correct, "kept", sum.Kept,
			"kept_total", sum.KeptTotal, "skipped_attempts", sum.Skipped, "requests", sum.Requests)
	}
	if b.fatal != nil {
		if !stopsRun(b.fatal) {
			sum.Stopped = StoppedInterrupted
		}
		return sum, b.fatal
	}
	return sum, nil
}
