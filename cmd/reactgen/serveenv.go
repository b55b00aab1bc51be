package main

import (
	"context"
	"net"

	"github.com/spf13/cobra"

	"github.com/reactgen/reactgen/env/envserver"
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
	backend := a.reg.backends[ld.Config.Env.Backend]
	return envserver.Run(ctx, &ld.Config, envserver.RunOptions{Listen: o.listen, Ready: o.ready, Check: backend.Check, Open: backend.Open, Logger: a.log})
}
