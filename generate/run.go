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
	StoppedTarget      = "target"      // generate.target_correct correct episodes exist
	StoppedBudget      = "budget"      // the LLM budget ran out (resumable)
	StoppedInterrupted = "interrupted" // ctx was cancelled (resumable)
	StoppedUnusable    = "unusable"    // every request failed: llm.ErrUnusable
)

// RunOptions configure a bootstrap run.
type RunOptions struct {
	Config    pipeline.GenerateConfig
	LLM       pipeline.LLMConfig
	Task      string
	RunID     string
	Questions []pipeline.Question
	// Done holds the keys (pipeline.Episode.Key, "qid#attempt") already finished by an
	// earlier run; they are skipped. CorrectSoFar is how many of them were correct.
	Done         map[string]bool
	CorrectSoFar int
	Prompts      prompt.Set                            // as loaded by prompt.Load
	CoTPrompts   *prompt.Set                           // generate.cot_exemplars; nil = derived from Prompts (see RunnerOptions)
	NewEnv       func(q pipeline.Question) Environment // one episode's environment, for q (its answer is the paper reward's gold)
	Client       llm.Client
	NewActor     ActorFactory // nil = LLMActor
	System       string       // export.system, for generate.prompting trained (see RunnerOptions)
	Round        int          // the STaR round (see RunnerOptions)
	Sink         pipeline.Sink
	Progress     io.Writer // nil or generate.progress off = none
	Logger       *slog.Logger
	// Hard, when set, is the context in-flight episodes run under: cancelling Run's ctx
	// stops new episodes, cancelling Hard (at the end of the grace period) cuts the
	// in-flight ones short (StopInterrupted). When nil, Run's ctx serves as both.
	Hard context.Context
}

// Summary is what a run did.
type Summary struct {
	Planned      int // episodes this run would run (after Done)
	Episodes     int // episodes written
	Correct      int // correct episodes written
	Rationalized int // rationalized episodes written
	Requests     int
	Usage        pipeline.Usage
	Stopped      string // StoppedDone, StoppedTarget, StoppedBudget, StoppedInterrupted or StoppedUnusable
	Elapsed      time.Duration
}

type job struct {
	q           *pipeline.Question
	qi          int
	attempt     int
	rationalize bool
}

// Run bootstraps episodes (STaR-like): questions in a seeded shuffled order,
// generate.attempts each, generate.concurrency episodes in flight, each taking its next
// step as soon as its own reply arrives. It stops starting episodes once target_correct
// correct ones exist (counting CorrectSoFar), when the questions run out, when ctx ends,
// or when the budget runs out; the episodes in flight then finish (or are cut short by
// Hard). With generate.rationalize, questions whose attempts all failed get one more
// attempt, index generate.attempts, with the answer as a hint. Every episode is written
// to Sink and dropped. The error is non-nil only for llm.ErrUnusable, ErrToolsRefused or a
// Sink failure.
func Run(ctx context.Context, o RunOptions) (Summary, error) {
	start := time.Now()
	runner, err := NewRunner(RunnerOptions{
		Config: o.Config, LLM: o.LLM, Task: o.Task, RunID: o.RunID, Prompts: o.Prompts, CoTPrompts: o.CoTPrompts,
		Client: o.Client, NewEnv: o.NewEnv, NewActor: o.NewActor, System: o.System, Round: o.Round,
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
	attempts := max(o.Config.Attempts, 1)
	order := make([]int, len(o.Questions))
	for i := range order {
		order[i] = i
	}
	if o.Config.Shuffle {
		rng := rand.New(rand.NewPCG(uint64(o.Config.Seed), 0x5eed))
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	var sum Summary
	for _, qi := range order {
		for a := range attempts {
			if !o.Done[fmt.Sprintf("%s#%d", o.Questions[qi].ID, a)] {
				sum.Planned++
			}
		}
	}

	var (
		correct    atomic.Int64
		stopBudget atomic.Bool
		mu         sync.Mutex // guards sum's counters, fatal
		fatal      error
		// failed[qi] counts this run's failed attempts of question qi, for rationalization.
		failed = make([]uint16, len(o.Questions))
	)
	correct.Store(int64(o.CorrectSoFar))
	prog := newProgress(o.Progress, o.Config.Progress, sum.Planned)
	defer prog.finish()

	// stop reports why no new episode may start, or "".
	stop := func() string {
		mu.Lock()
		f := fatal
		mu.Unlock()
		switch {
		case f != nil:
			if errors.Is(f, llm.ErrUnusable) {
				return StoppedUnusable
			}
			return StoppedInterrupted
		case stopBudget.Load():
			return StoppedBudget
		case ctx.Err() != nil:
			return StoppedInterrupted
		case o.Config.TargetCorrect > 0 && correct.Load() >= int64(o.Config.TargetCorrect):
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
		if (errors.Is(err, llm.ErrUnusable) || errors.Is(err, ErrToolsRefused)) && fatal == nil {
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
			correct.Add(1)
		} else if !j.rationalize && !ep.Retryable() {
			failed[j.qi]++
		}
		sum.Requests += ep.LLMCalls
		sum.Usage = sum.Usage.Add(ep.Usage)
		prog.episode(ep, int(correct.Load()))
		if err != nil {
			log.Debug("episode ended with an error", "episode", ep.ID, "question", ep.QuestionID, "stop", ep.StopReason, "err", err)
		}
	}

	// A slot is taken before the stop check, so that no episode starts after a stop
	// condition arose while the loop waited for a free slot.
	slots := make(chan struct{}, max(o.Config.Concurrency, 1))
	var wg sync.WaitGroup
	start1 := func(j job) string {
		slots <- struct{}{}
		if why := stop(); why != "" {
			<-slots
			return why
		}
		wg.Go(func() {
			defer func() { <-slots }()
			exec(j)
		})
		return ""
	}
	jobs := func(yield func(job) bool) {
		for _, qi := range order {
			q := &o.Questions[qi]
			for a := range attempts {
				if o.Done[fmt.Sprintf("%s#%d", q.ID, a)] {
					continue
				}
				if !yield(job{q: q, qi: qi, attempt: a}) {
					return
				}
			}
		}
	}
	why := ""
	for j := range jobs {
		if why = start1(j); why != "" {
			break
		}
	}
	wg.Wait()
	if why == "" {
		why = stop()
	}
	if why == "" && o.Config.Rationalize {
		for _, qi := range order {
			if int(failed[qi]) < attempts {
				continue // some attempt was correct, or an attempt did not run in this run
			}
			prog.plan(1)
			if why = start1(job{q: &o.Questions[qi], qi: qi, attempt: attempts, rationalize: true}); why != "" {
				break
			}
		}
		wg.Wait()
		if why == "" {
			why = stop()
		}
	}
	if why == "" {
		why = StoppedDone
	}
	sum.Stopped, sum.Elapsed = why, time.Since(start)
	log.Info("generation stopped", "why", why, "episodes", sum.Episodes, "correct", sum.Correct, "requests", sum.Requests)
	if fatal != nil {
		if !errors.Is(fatal, llm.ErrUnusable) {
			sum.Stopped = StoppedInterrupted
		}
		return sum, fatal
	}
	return sum, nil
}
