// Command reactgen makes fine-tuning data for language agents: it bootstraps ReAct
// trajectories by few-shot prompting a model against tool environments, keeps the
// episodes that reach the correct answer, and exports training sets.
//
// This package is the command line only, wiring flags to calls: one file per command
// parses its flags, the config is loaded by pipeline/config (root.go, load) and every
// name in it resolved against the registry (registry.go), and stages.go builds the
// stages from their config sections and hands them to pipeline.Execute, which owns the
// run. It may import every part; it is the only place the parts meet by name.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/reactgen/reactgen/pipeline"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130 // SIGINT
	exitTerminated  = 143 // SIGTERM
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Value
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		got.Store(s)
		fmt.Fprintf(os.Stderr, "reactgen: %v: stopping; in-flight episodes may finish (signal again to exit now)\n", s)
		cancel()
		s = <-sigs
		fmt.Fprintf(os.Stderr, "reactgen: %v again: exiting now\n", s)
		os.Exit(signalCode(s))
	}()

	a := newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	a.environ = os.Environ
	err := a.execute(ctx, os.Args[1:])
	code := exitCode(err)
	if s, ok := got.Load().(os.Signal); ok && code != exitUsage {
		code = signalCode(s)
	}
	if err != nil && !errors.Is(err, errSilent) {
		fmt.Fprintf(os.Stderr, "reactgen: %v\n", err)
	}
	os.Exit(code)
}

func signalCode(s os.Signal) int {
	if s == syscall.SIGTERM {
		return exitTerminated
	}
	return exitInterrupted
}

// errSilent marks an error already reported to the user.
var errSilent = errors.New("already reported")

// exitCode maps an error to the process exit code, in one place.
func exitCode(err error) int {
	var re *pipeline.ResumeError
	var le *pipeline.LockedError
	switch {
	case err == nil:
		return exitOK
	case pipeline.IsDiskFailure(err): // a full or read-only disk is no usage error, whoever wrapped it
		return exitFailure
	case pipeline.IsBadInput(err), errors.As(err, &re), errors.As(err, &le):
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitFailure
}

// app is what every command is handed: its streams, the environment, a logger and the
// registry of names a config may use.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// environ lists the environment's variables (os.Environ), for the warning on a
	// misspelt REACTGEN_* one; nil lists none.
	environ func() []string
	log     *slog.Logger
	reg     *registry
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv,
		log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})), reg: newRegistry()}
}
