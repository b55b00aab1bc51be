package generate

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/agentgym"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/dataset"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/redact"
	"github.com/reactgen/reactgen/pipeline"
)

// Policy is what plays a run's episodes: the model, through an LLM client, or actors
// made over the corpus (the expert).
type Policy struct {
	Model  bool                          // prompts the model through an LLM client
	Actors func(env.Corpus) ActorFactory // nil: the model acts
}

// Backend is an environment backend: the corpus the agent's Search and Lookup read.
type Backend struct {
	// Check fails on a corpus that cannot be read, before the run directory is touched.
	Check func(cfg *pipeline.Config) error
	// Identity pins the corpus for resume: its result key and the inputs it adds.
	Identity func(cfg *pipeline.Config) (string, []pipeline.Input, error)
	// Stage is the stage that makes the corpus ready before generate (the local index);
	// nil for none.
	Stage func(cfg *pipeline.Config, log *slog.Logger) pipeline.Stage
	// Open opens the corpus when the generate stage starts; id is what Identity pinned.
	Open func(cfg *pipeline.Config, id string) (env.Corpus, func(), error)
}

// PlanOptions are what Plan builds a generating run from: the config with every name in
// it resolved (its policy and backend), and the command's surroundings.
type PlanOptions struct {
	Config   *pipeline.Config // Task.Shard already resolved from flags and environment
	Policy   Policy
	Backend  Backend
	Command  string // run, generate or eval, as the manifest records it; eval's progress counts no kept episodes
	Version  string
	ForceNew bool
	// Exemplars holds the bundled exemplar files a config may name (data.FS).
	Exemplars fs.FS
	Getenv    func(string) string
	Progress  io.Writer // nil: none
	Logger    *slog.Logger
	// Tally makes what counts toward generate.target_correct: the run's own filter
	// (filter.Chain.Tally), so that the target counts what the filter will keep and a
	// solved question gets no further attempt. It is called once every input has been
	// checked; nil counts correct episodes.
	Tally func() (Tally, error)
}

// Plan reads and checks everything a generating run reads (task file, corpus, exemplars,
// evaluation files, the previous STaR round) before the run directory is touched, and
// builds the run's spec (result keys and inputs, for resume) and its source stages: the
// backend's (the local index), the STaR round's, and generate. The questions are the
// task file's, cut to the run's shard and, in a STaR round, to those the earlier rounds
// did not solve.
func Plan(o PlanOptions) (pipeline.Spec, []pipeline.Stage, error) {
	cfg, pol, be := o.Config, o.Policy, o.Backend
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// A model go-openai refuses on the format's endpoint would fail every request before
	// it leaves: refuse the config, before the run directory is touched.
	if pol.Model || pipeline.GameTask(cfg.Task.Name) {
		if err := llm.CheckEndpoint(cfg.Generate.Format, cfg.LLM); err != nil {
			return pipeline.Spec{}, nil, err
		}
	}
	if pipeline.GameTask(cfg.Task.Name) {
		return planGame(o, log)
	}
	if err := checkTask(o); err != nil {
		return pipeline.Spec{}, nil, err
	}
	prompts, cotPrompts, promptID, err := prompt.Configured(cfg.Generate, cfg.Task.Name, o.Exemplars)
	if err != nil {
		return pipeline.Spec{}, nil, err
	}
	if !pol.Model {
		promptID = cfg.Generate.Policy // the expert reads no prompt; the set only shapes layouts it never sends
	} else if cfg.Generate.Prompting == prompt.PromptingTrained {
		promptID = prompt.PromptingTrained // no exemplars are sent; the layout's keys pin what is
	}
	taskIn, err := pipeline.DescribeInput("task", cfg.Task.Path)
	if err != nil {
		return pipeline.Spec{}, nil, &pipeline.ConfigError{Key: "task.path", Message: err.Error()}
	}
	questions, prev, err := Questions(cfg, log)
	if err != nil {
		return pipeline.Spec{}, nil, err
	}
	corpusID, corpusIns, err := be.Identity(cfg)
	if err != nil {
		return pipeline.Spec{}, nil, err
	}
	inputs, err := runInputs(o, append([]pipeline.Input{taskIn}, corpusIns...))
	if err != nil {
		return pipeline.Spec{}, nil, err
	}
	spec := pipeline.Spec{Dir: cfg.Run.Out, Command: o.Command, Mode: pipeline.Resume, Version: o.Version, Config: cfg.Redacted(),
		Results: cfg.ResultKeys(taskIn.SHA256, corpusID, promptID), Inputs: inputs, RunID: cfg.Run.ID, ForceNew: o.ForceNew, Logger: log}

	gen := &Stage{Config: cfg.Generate, LLM: cfg.LLM, RunConfig: cfg.Run, Questions: questions, Prompts: prompts, CoTPrompts: cotPrompts,
		Env: env.OptionsFor(cfg.Task.Name, cfg.Env), MaxEnvFailures: cfg.Env.MaxConsecutiveFailures,
		Corpus: func() (env.Corpus, func(), error) { return be.Open(cfg, corpusID) }, Actors: pol.Actors, Progress: o.Progress, Logger: log,
		System: cfg.Export.System, Scoring: o.Command == "eval"}
	if pol.Model {
		gen.Client = modelClient(o, log)
	}
	stages, err := generation(o, &spec, gen, prev)
	if err != nil {
		return pipeline.Spec{}, nil, err
	}
	if be.Stage != nil {
		stages = append(stages, be.Stage(cfg, log))
	}
	return spec, stages, nil
}

// checkTask checks what a Wikipedia task reads before the run directory is touched: the
// task file, the backend's config and, for a model policy, its API keys.
func checkTask(o PlanOptions) error {
	cfg := o.Config
	if _, err := os.Stat(cfg.Task.Path); err != nil {
		return &pipeline.ConfigError{Key: "task.path", Message: fmt.Sprintf("cannot read task file: %v", err)}
	}
	if err := o.Backend.Check(cfg); err != nil {
		return err
	}
	if o.Policy.Model {
		return checkKeys(cfg, o.Getenv)
	}
	return nil
}

// runInputs is inputs (the task file's and the corpus's) with the exemplar files a
// few-shot prompted model reads and the eval inputs: the files the manifest pins.
func runInputs(o PlanOptions, inputs []pipeline.Input) ([]pipeline.Input, error) {
	cfg := o.Config
	if o.Policy.Model && cfg.Generate.Prompting != prompt.PromptingTrained {
		ins, err := exemplarInputs(cfg, o.Exemplars)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, ins...)
	}
	evalIns, err := cfg.EvalInputs()
	if err != nil {
		return nil, err
	}
	return append(inputs, evalIns...), nil
}

// planGame is Plan for a game task (alfworld, webshop): the games are AgentGym's numbers
// task.offset to task.offset+task.limit-1 on the server at env.url, prompted from the
// paper's prompt file (generate.exemplars), which is read and checked here.
func planGame(o PlanOptions, log *slog.Logger) (pipeline.Spec, []pipeline.Stage, error) {
	cfg := o.Config
	if err := checkKeys(cfg, o.Getenv); err != nil {
		return pipeline.Spec{}, nil, err
	}
	entries, err := prompt.LoadGameEntries(cfg.Generate.Exemplars)
	if err == nil {
		_, err = prompt.NewGameLayout(cfg.Task.Name, cfg.Generate.Method, cfg.Generate.Format, entries)
	}
	if err != nil {
		return pipeline.Spec{}, nil, &pipeline.ConfigError{Key: "generate.exemplars", Message: err.Error()}
	}
	promptIn, err := prompt.GameInput(cfg.Generate.Exemplars)
	if err != nil {
		return pipeline.Spec{}, nil, &pipeline.ConfigError{Key: "generate.exemplars", Message: err.Error()}
	}
	questions, prev, err := Questions(cfg, log)
	if err != nil {
		return pipeline.Spec{}, nil, err
	}
	server := "agentgym:" + cfg.Task.Name // not the URL: a server restarted elsewhere serves the same games
	games := fmt.Sprintf("%s games %d-%d", cfg.Task.Name, cfg.Task.Offset, cfg.Task.Offset+cfg.Task.Limit-1)
	spec := pipeline.Spec{Dir: cfg.Run.Out, Command: o.Command, Mode: pipeline.Resume, Version: o.Version, Config: cfg.Redacted(),
		Results: cfg.ResultKeys(games, server, promptIn.SHA256), Inputs: []pipeline.Input{promptIn}, RunID: cfg.Run.ID, ForceNew: o.ForceNew, Logger: log}
	gen := &Stage{Config: cfg.Generate, LLM: cfg.LLM, RunConfig: cfg.Run, Questions: questions,
		Env: env.Options{Task: cfg.Task.Name}, MaxEnvFailures: cfg.Env.MaxConsecutiveFailures,
		Corpus:   func() (env.Corpus, func(), error) { return nil, func() {}, nil },
		Progress: o.Progress, Scoring: o.Command == "eval", Logger: log, GamePrompts: entries,
		Game:   &agentgym.Options{URL: cfg.Env.URL, Dialect: agentgym.DialectFor(cfg.Task.Name), Timeout: cfg.Env.Timeout, MaxRetries: cfg.LLM.MaxRetries, Backoff: cfg.LLM.BackoffBase},
		Client: modelClient(o, log)}
	stages, err := generation(o, &spec, gen, prev)
	if err != nil {
		return pipeline.Spec{}, nil, err
	}
	return spec, stages, nil
}

// modelClient builds a generating stage's model client from the config's llm section.
func modelClient(o PlanOptions, log *slog.Logger) func(ctx context.Context, cacheDir string) (llm.Clients, error) {
	cfg := o.Config
	return func(ctx context.Context, cacheDir string) (llm.Clients, error) {
		return llm.NewClient(ctx, llm.Options{Config: cfg.LLM, Getenv: o.Getenv, CacheDir: cacheDir,
			BatchDir: filepath.Join(cfg.Run.Out, pipeline.BatchDir), Logger: log})
	}
}

// generation gives gen the tally of earlier runs and, in a STaR round (prev), its round
// number and the round pinned in spec, and returns the stages that generate: gen, then
// the round's merge with the earlier rounds.
func generation(o PlanOptions, spec *pipeline.Spec, gen *Stage, prev *pipeline.Previous) ([]pipeline.Stage, error) {
	if o.Tally != nil {
		var err error
		if gen.Tally, err = o.Tally(); err != nil {
			return nil, err
		}
	}
	stages := []pipeline.Stage{gen}
	if prev != nil {
		prev.Pin(spec)
		gen.Round = prev.Round + 1
		stages = append(stages, pipeline.RoundStage{Previous: prev, RunConfig: o.Config.Run})
	}
	return stages, nil
}

// gameQuestions are a game task's questions: AgentGym's games task.offset to
// task.offset+task.limit-1, in order, each known by its number until its reset shows
// its first observation.
func gameQuestions(cfg *pipeline.Config) []pipeline.Question {
	qs := make([]pipeline.Question, 0, cfg.Task.Limit)
	for n := cfg.Task.Offset; n < cfg.Task.Offset+cfg.Task.Limit; n++ {
		qs = append(qs, pipeline.Question{ID: agentgym.GameID(cfg.Task.Name, n), Task: cfg.Task.Name,
			Question: fmt.Sprintf("%s game %d", cfg.Task.Name, n)})
	}
	return qs
}

// Questions are the questions a generating run asks: the task file's (task.limit and
// task.offset applied), those of the run's shard (task.shard), and in a STaR round
// (star.previous) those the earlier rounds did not solve, with that round; prev is nil
// outside a STaR round.
func Questions(cfg *pipeline.Config, log *slog.Logger) (qs []pipeline.Question, prev *pipeline.Previous, err error) {
	if pipeline.GameTask(cfg.Task.Name) {
		qs = gameQuestions(cfg)
	} else {
		var report dataset.Report
		qs, report, err = dataset.Load(cfg.Task.Path, dataset.Options{Task: cfg.Task.Name, Format: cfg.Task.Format,
			SkipBad: cfg.Task.SkipBad, Limit: cfg.Task.Limit, Offset: cfg.Task.Offset})
		if err != nil {
			return nil, nil, &pipeline.InputError{Err: err}
		}
		if report.Skipped > 0 {
			log.Warn("skipped malformed task records", "file", cfg.Task.Path, "skipped", report.Skipped)
		}
	}
	if shard, _ := pipeline.ParseShard(cfg.Task.Shard); shard.Count > 0 {
		all := len(qs)
		qs = shard.Select(qs, cfg.Generate.Seed)
		log.Info("shard", "shard", shard.String(), "questions", len(qs), "of", all)
	}
	if cfg.Star.Previous == "" {
		return qs, nil, nil
	}
	if prev, err = pipeline.ReadPrevious(cfg.Star.Previous); err != nil {
		return nil, nil, err
	}
	open := prev.Unsolved(qs)
	log.Info("STaR round", "round", prev.Round+1, "previous", cfg.Star.Previous, "solved_before", len(prev.Solved), "to_ask", len(open))
	return open, prev, nil
}

// checkKeys fails when an endpoint on api.openai.com has no API key in the environment,
// before any request is sent.
func checkKeys(cfg *pipeline.Config, getenv func(string) string) error {
	servers := []pipeline.EndpointConfig{{BaseURL: cfg.LLM.BaseURL, APIKeyEnv: cfg.LLM.APIKeyEnv}}
	if eps := cfg.LLM.ResolvedEndpoints(); eps != nil {
		servers = eps
	}
	for i, e := range servers {
		if getenv(e.APIKeyEnv) == "" && strings.Contains(e.BaseURL, "api.openai.com") {
			key := "llm.api_key_env"
			if len(cfg.LLM.Endpoints) > 0 {
				key = fmt.Sprintf("llm.endpoints[%d].api_key_env", i)
			}
			return &pipeline.ConfigError{Key: key, Message: fmt.Sprintf(
				"the environment variable %s is empty, and %s needs a key (export %s=..., or point llm.base_url / OPENAI_BASE_URL at your own server)",
				e.APIKeyEnv, redact.URL(e.BaseURL), e.APIKeyEnv)}
		}
	}
	return nil
}

// exemplarInputs pins the exemplar files a few-shot run sends (generate.exemplars and
// generate.cot_exemplars).
func exemplarInputs(cfg *pipeline.Config, fsys fs.FS) ([]pipeline.Input, error) {
	in, err := prompt.Input(cfg.Generate.Exemplars, cfg.Task.Name, fsys)
	if err != nil {
		return nil, &pipeline.ConfigError{Key: "generate.exemplars", Message: err.Error()}
	}
	ins := []pipeline.Input{in}
	if ref := cfg.Generate.CoTExemplars; ref != "" {
		in, err := prompt.Input(ref, cfg.Task.Name, fsys)
		if err != nil {
			return nil, &pipeline.ConfigError{Key: "generate.cot_exemplars", Message: err.Error()}
		}
		in.Role = "cot-exemplars"
		ins = append(ins, in)
	}
	return ins, nil
}
