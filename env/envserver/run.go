package envserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/pipeline"
)

// RunOptions are what `reactgen serve-env` hands Run besides the config.
type RunOptions struct {
	Listen string // HOST:PORT; port 0 picks a free one
	// Ready, when set, is told the address once the server listens (tests listen on
	// port 0).
	Ready func(net.Addr)
	// Check and Open are the config's environment backend (env.backend), as the
	// command line's registry has it: Check before anything is opened, Open for a
	// backend other than the local index (MediaWiki). Nil: the backend is unknown.
	Check  func(*pipeline.Config) error
	Open   func(cfg *pipeline.Config, identity string) (env.Corpus, func(), error)
	Logger *slog.Logger
}

// Run serves the environment of cfg (task.path's questions, the corpus index or
// MediaWiki, env.observations and env.actions, the serve.* bounds) on o.Listen until ctx
// ends, then drains for serve.drain_timeout. The local index is built from corpus.path
// first when it is missing, and also serves /retrieve. A config that names no
// Wikipedia task or no questions is a *pipeline.ConfigError.
func Run(ctx context.Context, cfg *pipeline.Config, o RunOptions) error {
	if cfg.Task.Name != pipeline.TaskHotpotQA && cfg.Task.Name != pipeline.TaskFEVER {
		return &pipeline.ConfigError{Key: "task.name", Message: fmt.Sprintf("serve-env serves the Wikipedia environment: want hotpotqa or fever, got %q", cfg.Task.Name)}
	}
	if cfg.Task.Path == "" {
		return &pipeline.ConfigError{Key: "task.path", Message: "serve-env needs the questions its resets ask"}
	}
	qs, report, err := dataset.Load(cfg.Task.Path, dataset.Options{Task: cfg.Task.Name, Format: cfg.Task.Format,
		SkipBad: cfg.Task.SkipBad, Limit: cfg.Task.Limit, Offset: cfg.Task.Offset})
	if err != nil {
		return &pipeline.InputError{Err: err}
	}
	if report.Skipped > 0 {
		o.Logger.Warn("skipped malformed task records", "file", cfg.Task.Path, "skipped", report.Skipped)
	}
	corpus, retriever, closeCorpus, err := openCorpus(ctx, cfg, o)
	if err != nil {
		return err
	}
	defer closeCorpus()
	srv, err := New(Options{
		Corpus: corpus, Retriever: retriever, Env: env.OptionsFor(cfg.Task.Name, cfg.Env),
		Questions: qs, TaskPath: cfg.Task.Path,
		MaxSessions: cfg.Serve.MaxSessions, IdleTimeout: cfg.Serve.IdleTimeout, MaxBodyBytes: cfg.Serve.MaxBodyBytes,
		Logger: o.Logger,
	})
	if err != nil {
		return &pipeline.InputError{Err: err}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("serve-env: %w", err)
	}
	routes := "OpenEnv: POST /reset /step, GET /state /schema /health /metadata, WebSocket /ws"
	if retriever != nil {
		routes += "; Search-R1: POST /retrieve"
	}
	o.Logger.Info("serving "+cfg.Task.Name+" at http://"+ln.Addr().String(), "questions", len(qs), "routes", routes,
		"max_sessions", cfg.Serve.MaxSessions, "idle_timeout", cfg.Serve.IdleTimeout)
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	if err := srv.Serve(ctx, ln, cfg.Serve.DrainTimeout); err != nil {
		return fmt.Errorf("serve-env: %w", err)
	}
	o.Logger.Info("drained", "steps", srv.Steps())
	return nil
}

// openCorpus opens the config's environment backend: the local index (built from
// corpus.path first when it is missing), which also serves /retrieve, or MediaWiki.
func openCorpus(ctx context.Context, cfg *pipeline.Config, o RunOptions) (env.Corpus, Retriever, func(), error) {
	if o.Check == nil || o.Open == nil {
		return nil, nil, nil, &pipeline.ConfigError{Key: "env.backend", Message: fmt.Sprintf("unknown backend %q", cfg.Env.Backend)}
	}
	if err := o.Check(cfg); err != nil {
		return nil, nil, nil, err
	}
	if cfg.Env.Backend != "local" {
		c, closer, err := o.Open(cfg, "")
		return c, nil, closer, err
	}
	dir := cfg.IndexDir()
	if !index.Exists(dir) {
		sources, err := index.Sources(cfg.Corpus.Path)
		if err != nil {
			return nil, nil, nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
		}
		o.Logger.Info("indexing corpus", "corpus", cfg.Corpus.Path, "index", dir)
		if _, err := index.Build(ctx, dir, sources, index.BuildOptions{SkipBad: cfg.Task.SkipBad, Logger: o.Logger,
			Command: "reactgen serve-env"}); err != nil {
			return nil, nil, nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
		}
	}
	ix, err := index.Open(dir)
	if err != nil {
		return nil, nil, nil, &pipeline.ConfigError{Key: "corpus.index", Message: err.Error()}
	}
	return ix, ix, func() { ix.Close() }, nil
}
