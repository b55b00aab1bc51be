package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/generate"
	"github.com/reactgen/reactgen/generate/expert"
	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/env"
	"github.com/reactgen/reactgen/internal/env/mediawiki"
	"github.com/reactgen/reactgen/internal/index"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/pipeline"
)

func (a *app) newGenerateCmd() *cobra.Command {
	var o stageOptions
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Run the generate stage: episodes into episodes.jsonl (resumes)",
		Example: `  reactgen generate --config configs/demo.yaml --out runs/demo
  reactgen generate -c configs/hotpotqa-react.yaml -o runs/h1 --set generate.concurrency=64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStages(cmd.Context(), o, "generate", stageSet{index: true, generate: true})
		},
	}
	o.register(cmd)
	return cmd
}

func (o *stageOptions) register(cmd *cobra.Command) {
	o.flags.register(cmd, false)
	cmd.Flags().BoolVar(&o.forceNew, "force-new", false, "start the run directory afresh when its settings differ (old files are moved aside)")
	cmd.Flags().BoolVar(&o.skipBad, "skip-bad", false, "skip malformed task and corpus records and count them (task.skip_bad)")
}

// openCorpus opens the configured environment backend.
func (a *app) openCorpus(rs *runState) (env.Corpus, func(), error) {
	cfg := rs.cfg.Env
	if cfg.Backend == "mediawiki" {
		cache := cfg.CacheDir
		if cache == "" {
			cache = rs.dir.File(pipeline.WikiCacheDir)
		}
		c, err := mediawiki.New(mediawiki.Options{Endpoint: cfg.MediaWikiURL, UserAgent: cfg.UserAgent,
			RequestsPerSecond: cfg.RequestsPerSecond, Timeout: cfg.Timeout, MaxRetries: rs.cfg.LLM.MaxRetries, CacheDir: cache})
		if err != nil {
			return nil, nil, &pipeline.ConfigError{Key: "env.mediawiki_url", Message: err.Error()}
		}
		return c, func() {}, nil
	}
	ix, err := index.Open(rs.indexDir())
	if err != nil {
		return nil, nil, &pipeline.ConfigError{Key: "corpus.index", Message: err.Error()}
	}
	return ix, func() { ix.Close() }, nil
}

// stageGenerate runs the agent over the questions not yet done.
func (a *app) stageGenerate(ctx context.Context, rs *runState) error {
	cfg := rs.cfg
	questions, report := rs.questions, rs.taskReport
	if questions == nil {
		var err error
		questions, report, err = dataset.Load(cfg.Task.Path, dataset.Options{Task: cfg.Task.Name, Format: cfg.Task.Format,
			SkipBad: cfg.Task.SkipBad, Limit: cfg.Task.Limit, Offset: cfg.Task.Offset})
		if err != nil {
			return &usageError{err}
		}
	}
	if report.Skipped > 0 {
		a.log.Warn("skipped malformed task records", "file", cfg.Task.Path, "skipped", report.Skipped)
	}
	corpus, closeCorpus, err := a.openCorpus(rs)
	if err != nil {
		return err
	}
	defer closeCorpus()

	log, state, rec, err := pipeline.OpenEpisodeLog(rs.dir.File(pipeline.EpisodesFile), cfg.Run.FsyncEvery, cfg.Run.FsyncInterval)
	if err != nil {
		return err
	}
	defer log.Close()
	if rec.TornBytes > 0 {
		msg := fmt.Sprintf("dropped a torn last line of %d bytes from %s (a write cut by a crash): %q", rec.TornBytes, pipeline.EpisodesFile, rec.TornPrefix)
		a.log.Warn(msg)
		rs.manifest.Recovered = append(rs.manifest.Recovered, msg)
	}
	if len(state.Done) > 0 {
		a.log.Info("resuming", "finished", len(state.Done), "correct", state.Correct, "to_retry", state.Retry)
	}

	var client llm.Client
	var meter *llm.Meter
	var actors generate.ActorFactory
	if cfg.Generate.Policy == "expert" {
		ex := expert.New(corpus)
		actors = func(pipeline.Question, int, int64) generate.Actor { return ex }
	} else {
		key := a.getenv(cfg.LLM.APIKeyEnv)
		cacheDir := cfg.LLM.CacheDir
		if cacheDir == "" {
			cacheDir = rs.dir.File(pipeline.LLMCacheDir)
		}
		c, m, _, err := llm.New(ctx, cfg.LLM, key, cacheDir)
		if err != nil {
			return &pipeline.ConfigError{Key: "llm.base_url", Message: err.Error()}
		}
		client, meter = c, m
	}
	envOpts := env.Options{Task: cfg.Task.Name, Sentences: cfg.Env.Sentences, MaxObservationChars: cfg.Env.MaxObservationChars}

	// The grace period: a signal cancels ctx, which stops new episodes; in-flight ones
	// run on under hard until they finish or the grace period ends.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-time.After(cfg.Run.GracePeriod):
				cancelHard()
			case <-finished:
			}
		case <-finished:
		}
	}()

	var sum generate.Summary
	err = rs.stage(ctx, "generate", func(ctx context.Context) (map[string]int, error) {
		var err error
		sum, err = generate.Run(ctx, generate.RunOptions{
			Config: cfg.Generate, LLM: cfg.LLM, Task: cfg.Task.Name, RunID: rs.manifest.RunID,
			Questions: questions, Done: state.Done, CorrectSoFar: state.Correct, Prompts: rs.prompts,
			NewEnv: func() generate.Environment { return env.New(corpus, envOpts) }, Client: client, NewActor: actors,
			Sink: log, Progress: a.stderr, Logger: a.log, Hard: hard,
		})
		counts := map[string]int{"questions": len(questions), "planned": sum.Planned, "episodes": sum.Episodes,
			"correct": sum.Correct, "requests": sum.Requests, "tokens": sum.Usage.TotalTokens,
			"resumed_done": len(state.Done), "log_records": log.Count()}
		if meter != nil {
			s := meter.Snapshot()
			counts["cached"] = int(s.Cached)
			counts["failed_requests"] = int(s.Failed)
			counts["retries"] = int(s.Retries)
		}
		if err == nil && sum.Stopped == generate.StoppedInterrupted {
			err = context.Canceled
		}
		return counts, err
	})
	if err != nil {
		if errors.Is(err, llm.ErrUnusable) {
			return fmt.Errorf("every request to %s failed, so the run stopped: %w", cfg.LLM.BaseURL, err)
		}
		return err
	}
	a.log.Info("generated", "episodes", sum.Episodes, "correct", sum.Correct, "stopped", sum.Stopped, "elapsed", sum.Elapsed.Round(time.Millisecond))
	if sum.Stopped == generate.StoppedBudget {
		rs.manifest.Stages["generate"].Status = "budget"
		a.log.Warn("the LLM budget ran out: the run stopped cleanly; raise llm.max_requests / llm.max_tokens / llm.max_cost_usd and run again to resume")
	}
	return nil
}
