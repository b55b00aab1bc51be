package main

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envserver"
	"github.com/reactgen/reactgen/index"
	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/pipeline"
)

type serveEnvOptions struct {
	config configFlags
	listen string
	// ready, when set, is told the address once the server listens (tests listen on
	// port 0).
	ready func(net.Addr)
}

func (a *app) newServeEnvCmd() *cobra.Command {
	var o serveEnvOptions
	cmd := &cobra.Command{
		Use:   "serve-env",
		Short: "Serve the config's environment over OpenEnv's protocol and Search-R1's /retrieve",
		Long: `Serves the environment of the config (task.path's questions, the corpus index, env.observations
and env.actions) to trainers that reach environments over the network:

  OpenEnv (TRL's GRPO with environments, ART, verifiers, NeMo Gym): POST /reset, POST /step,
  GET /state, GET /schema, GET /health, GET /metadata (each request on a fresh environment)
  and the WebSocket session protocol on /ws (one session per connection).
  Search-R1's retrieval API: POST /retrieve over the same index.

A reset picks the question: question_id in the reset data, else seed as the question's
position (0-based) among task.path's questions (after task.offset and task.limit), else the
next one in order. A step takes one action in the paper's syntax in the field "action"
and answers exactly what the paper's environment (and reactgen env) answers. On Finish the
reward is the task's score (HotpotQA: exact match; FEVER: the label) and done is true;
max_steps in the reset data ends an episode early. serve.* keys bound the sessions, their
idle time, request sizes and the drain after SIGTERM. docs/serve-env.md has the protocol.`,
		Example: `  reactgen serve-env --config configs/demo.yaml --listen 127.0.0.1:8000`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return a.runServeEnv(cmd.Context(), o) },
	}
	o.config.register(cmd, false)
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8000", "HOST:PORT to listen on (port 0 picks a free one)")
	return cmd
}

func (a *app) runServeEnv(ctx context.Context, o serveEnvOptions) error {
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return usagef("--listen %q: want HOST:PORT (%v)", o.listen, err)
	}
	ld, err := a.load(&o.config, false)
	if err != nil {
		return err
	}
	cfg := ld.Config
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
		a.log.Warn("skipped malformed task records", "file", cfg.Task.Path, "skipped", report.Skipped)
	}
	corpus, retriever, closeCorpus, err := a.serveCorpus(ctx, &cfg)
	if err != nil {
		return err
	}
	defer closeCorpus()
	srv, err := envserver.New(envserver.Options{
		Corpus: corpus, Retriever: retriever, Env: env.OptionsFor(cfg.Task.Name, cfg.Env),
		Questions: qs, TaskPath: cfg.Task.Path,
		MaxSessions: cfg.Serve.MaxSessions, IdleTimeout: cfg.Serve.IdleTimeout, MaxBodyBytes: cfg.Serve.MaxBodyBytes,
		Logger: a.log,
	})
	if err != nil {
		return &pipeline.InputError{Err: err}
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("serve-env: %w", err)
	}
	routes := "OpenEnv: POST /reset /step, GET /state /schema /health /metadata, WebSocket /ws"
	if retriever != nil {
		routes += "; Search-R1: POST /retrieve"
	}
	a.log.Info("serving "+cfg.Task.Name+" at http://"+ln.Addr().String(), "questions", len(qs), "routes", routes,
		"max_sessions", cfg.Serve.MaxSessions, "idle_timeout", cfg.Serve.IdleTimeout)
	if o.ready != nil {
		o.ready(ln.Addr())
	}
	if err := srv.Serve(ctx, ln, cfg.Serve.DrainTimeout); err != nil {
		return fmt.Errorf("serve-env: %w", err)
	}
	a.log.Info("drained", "steps", srv.Steps())
	return nil
}

// serveCorpus opens the config's environment backend: the local index (built from
// corpus.path first when it is missing), which also serves /retrieve, or MediaWiki.
func (a *app) serveCorpus(ctx context.Context, cfg *pipeline.Config) (env.Corpus, envserver.Retriever, func(), error) {
	backend, ok := a.reg.backends[cfg.Env.Backend]
	if !ok {
		return nil, nil, nil, &pipeline.ConfigError{Key: "env.backend", Message: fmt.Sprintf("unknown backend %q", cfg.Env.Backend)}
	}
	if err := backend.Check(cfg); err != nil {
		return nil, nil, nil, err
	}
	if cfg.Env.Backend != "local" {
		c, closer, err := backend.Open(cfg, "")
		return c, nil, closer, err
	}
	dir := cfg.IndexDir()
	if !index.Exists(dir) {
		sources, err := index.Sources(cfg.Corpus.Path)
		if err != nil {
			return nil, nil, nil, &pipeline.ConfigError{Key: "corpus.path", Message: err.Error()}
		}
		a.log.Info("indexing corpus", "corpus", cfg.Corpus.Path, "index", dir)
		if _, err := index.Build(ctx, dir, sources, index.BuildOptions{SkipBad: cfg.Task.SkipBad, Logger: a.log,
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
