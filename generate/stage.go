package generate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/agentgym"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/redact"
	"github.com/reactgen/reactgen/pipeline"
)

// Methods are the prompting methods generate.method may name: the paper's.
var Methods = []string{prompt.MethodStandard, prompt.MethodCoT, prompt.MethodCoTSC, prompt.MethodAct,
	prompt.MethodReAct, prompt.MethodReActCoTSC, prompt.MethodCoTSCReAct}

// Stage is the generate stage of a run: it runs the agent over the questions whose
// episodes are not in the run's episode log yet and appends them to it. Everything it
// reads from outside the run directory (questions, exemplars) is loaded and checked
// before the run directory is opened; the corpus and the model client are opened when
// the stage starts, after the index stage built what they need.
type Stage struct {
	Config    pipeline.GenerateConfig
	LLM       pipeline.LLMConfig
	RunConfig pipeline.RunConfig // fsync policy and grace period
	Env       env.Options        // Gold is set per episode
	// MaxEnvFailures is env.max_consecutive_failures: the run stops with
	// ErrEnvironmentDown once that many environment steps in a row failed; 0 never.
	MaxEnvFailures int
	Questions      []pipeline.Question
	Prompts        prompt.Set
	CoTPrompts     *prompt.Set // generate.cot_exemplars; nil = derived from Prompts
	// Corpus opens what the environment searches; close releases it.
	Corpus func() (c env.Corpus, close func(), err error)
	// Actors, when set, makes the actors over the corpus (the expert); nil: the model
	// acts, through Client.
	Actors func(c env.Corpus) ActorFactory
	// Client opens the model client with its response cache in cacheDir; nil for a
	// policy that sends no request.
	Client   func(ctx context.Context, cacheDir string) (llm.Clients, error)
	Progress io.Writer // nil: none
	// Scoring is set for eval, which scores every episode and filters none: the progress
	// line and log count correct episodes, not kept ones.
	Scoring bool
	Logger  *slog.Logger
	// System is export.system, the trained layout's system message (generate.prompting
	// trained); unused by few-shot prompting.
	System string
	// Round is the STaR round this run is (star.previous), stamped on its episodes.
	Round int
	// Game is the AgentGym server a game task (alfworld, webshop) is played on, and
	// GamePrompts the paper's prompt file's entries; both unset for the Wikipedia tasks.
	Game        *agentgym.Options
	GamePrompts map[string]string
	// Tally counts the episodes the filter will keep (the run's filter, filter.Chain.Tally),
	// toward generate.target_correct; nil counts correct episodes. The stage first counts
	// the episodes the log holds from earlier runs.
	Tally Tally
}

var _ pipeline.Stage = (*Stage)(nil)

// Name implements pipeline.Stage.
func (*Stage) Name() string { return pipeline.StageGenerate }

// Run implements pipeline.Stage.
func (s *Stage) Run(ctx context.Context, r *pipeline.Run) (pipeline.Counts, error) {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	corpus, closeCorpus, err := s.Corpus()
	if err != nil {
		return nil, err
	}
	defer closeCorpus()
	episodes, state, err := s.openLog(r, log)
	if err != nil {
		return nil, err
	}
	defer episodes.Close()
	tally, err := s.countEarlier(r, episodes)
	if err != nil {
		return nil, err
	}
	keptBefore := tally.Kept()
	var actors ActorFactory
	if s.Actors != nil {
		actors = s.Actors(corpus)
	}
	var clients llm.Clients
	if s.Client != nil {
		if clients, err = s.Client(ctx, cmp.Or(s.LLM.CacheDir, r.Dir.File(pipeline.LLMCacheDir))); err != nil {
			// A config mistake names its own key (exit 2); a batch directory that cannot
			// be read or re-attached is a runtime failure (exit 1), not llm.base_url's.
			return nil, fmt.Errorf("llm client: %w", err)
		}
		defer clients.Close()
	}
	hard, stopGrace := s.grace(ctx)
	defer stopGrace()

	// The guard stops new episodes through runCtx the moment the environment is found
	// down; the episodes in flight run on under hard and fail at their next step.
	runCtx, halt := context.WithCancelCause(ctx)
	defer halt(nil)
	guard := newEnvGuard(s.MaxEnvFailures, halt)
	outcome := &errorTally{next: episodes}
	newGame, err := s.games(guard)
	if err != nil {
		return nil, err
	}
	sum, err := RunGraceful(runCtx, hard, RunOptions{
		Config: s.Config, LLM: s.LLM, Task: s.Env.Task, RunID: r.Manifest.RunID,
		Questions: s.Questions, Done: state.Done, Tally: tally, Prompts: s.Prompts, CoTPrompts: s.CoTPrompts,
		NewEnv: func(q pipeline.Question) Environment {
			o := s.Env
			o.Gold = q.Answer
			return guard.wrap(env.New(corpus, o))
		},
		Client: clients.Client, NewActor: actors, NewGame: newGame, GamePrompts: s.GamePrompts,
		Sink: outcome, Progress: s.Progress, Scoring: s.Scoring, Logger: log, System: s.System, Round: s.Round,
	})
	counts := pipeline.Counts{"questions": len(s.Questions), "planned": sum.Planned, "episodes": sum.Episodes,
		"correct": sum.Correct, "requests": sum.Requests, "tokens": sum.Usage.TotalTokens,
		"resumed_done": len(state.Done), "log_records": episodes.Count(),
		"will_keep": sum.Kept, "will_keep_total": max(sum.KeptTotal, keptBefore), "skipped_attempts": sum.Skipped,
		"errored": outcome.errored}
	clientCounts(r, clients, counts)
	return counts, s.verdict(r, log, sum, err, outcome)
}

// openLog opens the run's episode log, noting a torn last line it dropped in the
// manifest, and returns it with what earlier runs finished.
func (s *Stage) openLog(r *pipeline.Run, log *slog.Logger) (*pipeline.EpisodeLog, pipeline.LogState, error) {
	episodes, state, rec, err := pipeline.OpenEpisodeLog(r.Dir.File(pipeline.EpisodesFile), s.RunConfig.FsyncEvery, s.RunConfig.FsyncInterval)
	if err != nil {
		return nil, state, err
	}
	if rec.TornBytes > 0 {
		msg := fmt.Sprintf("dropped a torn last line of %d bytes from %s (a write cut by a crash): %q", rec.TornBytes, pipeline.EpisodesFile, rec.TornPrefix)
		log.Warn(msg)
		r.Manifest.Recovered = append(r.Manifest.Recovered, msg)
	}
	if len(state.Done) > 0 {
		log.Info("resuming", "finished", len(state.Done), "correct", state.Correct, "to_retry", state.Retry)
	}
	return episodes, state, nil
}

// countEarlier returns the stage's Tally (a correctTally when none is set) with the
// episodes earlier runs wrote counted: they count toward the target and solve their
// questions.
func (s *Stage) countEarlier(r *pipeline.Run, episodes *pipeline.EpisodeLog) (Tally, error) {
	tally := s.Tally
	if tally == nil {
		tally = &correctTally{}
	}
	if episodes.Count() == 0 {
		return tally, nil
	}
	for ep, err := range pipeline.ReadEpisodes(r.Dir.File(pipeline.EpisodesFile)) {
		if err != nil {
			return nil, err
		}
		if !ep.Retryable() {
			tally.Add(&ep)
		}
	}
	return tally, nil
}

// grace returns the context in-flight episodes run under, and the function that ends
// its watch. A signal cancels ctx, which stops new episodes; in-flight ones run on under
// hard until they finish or the grace period ends. In batch mode there is none: an
// episode's next step would wait for another wave, which a stopping run must not submit;
// the batches out stay out, and the next run attaches to them.
func (s *Stage) grace(ctx context.Context) (hard context.Context, stop func()) {
	grace := s.RunConfig.GracePeriod
	if s.LLM.Mode == "batch" {
		grace = 0
	}
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-time.After(grace):
				cancelHard()
			case <-finished:
			}
		case <-finished:
		}
	}()
	return hard, func() {
		close(finished)
		cancelHard()
	}
}

// games returns the games of a game task's questions, played on s.Game through guard;
// nil for the Wikipedia tasks.
func (s *Stage) games(guard *envGuard) (func(q pipeline.Question) GameEnv, error) {
	if s.Game == nil {
		return nil, nil
	}
	gc, err := agentgym.New(*s.Game)
	if err != nil {
		return nil, &pipeline.ConfigError{Key: "env.url", Message: err.Error()}
	}
	return func(q pipeline.Question) GameEnv {
		g, err := NewAgentGymGame(gc, s.Env.Task, q)
		if err != nil {
			return brokenGame{err}
		}
		return gameGuarded(g, guard)
	}, nil
}

// clientCounts adds what the model clients counted to counts, and the endpoints' shares
// to the manifest.
func clientCounts(r *pipeline.Run, clients llm.Clients, counts pipeline.Counts) {
	if clients.Pool != nil {
		var shares []pipeline.EndpointShare
		for _, st := range clients.Pool.Stats() {
			shares = append(shares, pipeline.EndpointShare{URL: st.Name, Served: st.Served, Failed: st.Failed, Moved: st.Moved, Ejections: st.Ejections,
				Stalled: st.Stalled, Disabled: st.Disabled})
		}
		r.Manifest.AddEndpoints(shares)
	}
	if clients.Batch != nil {
		b := clients.Batch.Stats()
		counts["batch_waves"], counts["batch_attached"], counts["batch_lines"] = b.Waves, b.Attached, b.Lines
		counts["batch_retried_lines"] = b.Retried
		counts["batch_duplicate_lines"], counts["batch_unreadable_lines"] = b.Duplicates, b.Malformed
	}
	if clients.Meter != nil {
		m := clients.Meter.Snapshot()
		counts["cached"] = int(m.Cached)
		counts["failed_requests"] = int(m.Failed)
		counts["retries"] = int(m.Retries)
	}
}

// verdict is the stage's error for how the run ended (err is Run's), and logs the end.
func (s *Stage) verdict(r *pipeline.Run, log *slog.Logger, sum Summary, err error, outcome *errorTally) error {
	switch {
	case errors.Is(err, ErrToolsRefused):
		return err
	case errors.Is(err, llm.ErrUnusable):
		return fmt.Errorf("every request to %s failed, so the run stopped: %w", servers(s.LLM), err)
	case errors.Is(err, ErrEnvironmentDown):
		return fmt.Errorf("the environment failed %d steps in a row (env.max_consecutive_failures), so the run stopped before paying for more requests; %d episodes ended with an error and `reactgen run` retries them once it answers: %w",
			s.MaxEnvFailures, outcome.errored, err)
	case err != nil:
		return err
	case sum.Stopped == StoppedInterrupted:
		return context.Canceled
	case outcome.written > 0 && outcome.errored == outcome.written:
		// Nothing this run did can be kept: the run failed, whatever the cause.
		return fmt.Errorf("all %d episodes of this run ended with an error, so there is nothing to keep; the first: %s", outcome.errored, outcome.first)
	case outcome.errored > 0:
		log.Warn("episodes ended with an error; `reactgen run` again retries them", "errored", outcome.errored, "of", outcome.written, "first", outcome.first)
	}
	log.Info("generated", "episodes", sum.Episodes, "correct", sum.Correct, "stopped", sum.Stopped, "elapsed", sum.Elapsed.Round(time.Millisecond))
	if sum.Stopped == StoppedBudget {
		r.SetStatus(pipeline.StatusBudget)
		log.Warn("the LLM budget ran out: the run stopped cleanly; raise llm.max_requests / llm.max_tokens / llm.max_cost_usd and run again to resume")
	}
	return nil
}

// brokenGame is the game of a question whose id names no game: every episode of it
// ends with the error.
type brokenGame struct{ err error }

func (b brokenGame) Start(context.Context) (agentgym.Start, error) { return agentgym.Start{}, b.err }
func (b brokenGame) Step(context.Context, string) (agentgym.Result, error) {
	return agentgym.Result{}, b.err
}
func (brokenGame) Close(context.Context) {}

// errorTally is the episode sink that counts the episodes it wrote and those that ended
// with an error (pipeline.StopError), keeping the first error's text. It is safe for
// concurrent use when next is.
type errorTally struct {
	next pipeline.Sink

	mu               sync.Mutex
	written, errored int
	first            string
}

func (t *errorTally) Write(ctx context.Context, ep pipeline.Episode) error {
	if err := t.next.Write(ctx, ep); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.written++
	if ep.StopReason == pipeline.StopError {
		t.errored++
		if t.first == "" {
			t.first = ep.Error
		}
	}
	return nil
}

// servers names the model servers a run sends to: llm.endpoints when set (llm.base_url
// is then not contacted), else llm.base_url.
func servers(c pipeline.LLMConfig) string {
	eps := c.ResolvedEndpoints()
	if len(eps) == 0 || c.Mode == "batch" {
		return redact.URL(c.BaseURL)
	}
	names := make([]string, len(eps))
	for i, e := range eps {
		names[i] = redact.URL(e.BaseURL)
	}
	return "the endpoints " + strings.Join(names, ", ")
}
