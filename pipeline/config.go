package pipeline

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/reactgen/reactgen/internal/origin"
)

// Config is the whole typed configuration of a run. cmd/reactgen fills it from defaults,
// a YAML file, REACTGEN_* environment variables and --set flags; every package receives
// only its own section. The mapstructure tags are the config keys.
type Config struct {
	Run      RunConfig      `mapstructure:"run"`
	Task     TaskConfig     `mapstructure:"task"`
	Corpus   CorpusConfig   `mapstructure:"corpus"`
	Env      EnvConfig      `mapstructure:"env"`
	LLM      LLMConfig      `mapstructure:"llm"`
	Generate GenerateConfig `mapstructure:"generate"`
	Filter   FilterConfig   `mapstructure:"filter"`
	Export   ExportConfig   `mapstructure:"export"`
	Star     StarConfig     `mapstructure:"star"`
	Serve    ServeConfig    `mapstructure:"serve"`
}

// ServeConfig tunes `reactgen serve-env`, which serves the config's environment over
// OpenEnv's protocol and Search-R1's /retrieve.
type ServeConfig struct {
	MaxSessions  int           `mapstructure:"max_sessions"`   // WebSocket sessions open at once
	IdleTimeout  time.Duration `mapstructure:"idle_timeout"`   // a session that sends nothing for this long is closed (0 = never)
	MaxBodyBytes int64         `mapstructure:"max_body_bytes"` // bound of an HTTP request body and of a WebSocket message
	DrainTimeout time.Duration `mapstructure:"drain_timeout"`  // after SIGTERM, how long requests and sessions in flight may finish
}

// StarConfig makes a run the next STaR round of an earlier one.
type StarConfig struct {
	// Previous is round k's run directory: this run is round k+1, generates only on the
	// questions round k did not solve, and merges round k's kept episodes into its log.
	Previous string `mapstructure:"previous"`
}

// RunConfig controls the run directory.
type RunConfig struct {
	Out           string        `mapstructure:"out"`            // run directory
	ID            string        `mapstructure:"id"`             // run id; empty derives one from the config
	FsyncEvery    int           `mapstructure:"fsync_every"`    // fsync episodes.jsonl every N episodes (1 = each)
	FsyncInterval time.Duration `mapstructure:"fsync_interval"` // and at least this often
	GracePeriod   time.Duration `mapstructure:"grace_period"`   // how long in-flight episodes may finish after a signal
}

// TaskConfig selects the questions.
type TaskConfig struct {
	Name    string `mapstructure:"name"`     // hotpotqa or fever
	Path    string `mapstructure:"path"`     // task file
	Format  string `mapstructure:"format"`   // auto, hotpotqa, hotpotqa-simple, fever, jsonl
	Limit   int    `mapstructure:"limit"`    // at most this many questions (0 = all)
	Offset  int    `mapstructure:"offset"`   // skip this many questions first
	SkipBad bool   `mapstructure:"skip_bad"` // skip malformed records instead of failing
	// Shard, "i/n", keeps the questions of shard i of n (see Shard); empty keeps all.
	Shard string `mapstructure:"shard"`
}

// CorpusConfig names the source text and its index.
type CorpusConfig struct {
	Path  string `mapstructure:"path"`  // source text (JSONL, HotpotQA bz2 tree, or question file)
	Index string `mapstructure:"index"` // index directory; empty means <run>/index
}

// EnvConfig selects and tunes the environment backend.
type EnvConfig struct {
	Backend string `mapstructure:"backend"` // local or mediawiki (a game task is played on env.url)
	// URL is the AgentGym environment server a game task (alfworld, webshop) is played
	// on, e.g. http://127.0.0.1:36001.
	URL                 string        `mapstructure:"url"`
	MediaWikiURL        string        `mapstructure:"mediawiki_url"`         // api.php endpoint
	UserAgent           string        `mapstructure:"user_agent"`            // sent to MediaWiki
	RequestsPerSecond   float64       `mapstructure:"requests_per_second"`   // MediaWiki rate limit
	CacheDir            string        `mapstructure:"cache_dir"`             // MediaWiki response cache; empty means <run>/wiki-cache
	Timeout             time.Duration `mapstructure:"timeout"`               // per MediaWiki request
	Observations        string        `mapstructure:"observations"`          // paper (the official code's observations) or rules (reactgen's own)
	Actions             string        `mapstructure:"actions"`               // paper (the official action test) or lenient
	Sentences           int           `mapstructure:"sentences"`             // sentences a Search returns (the paper: 5)
	MaxObservationChars int           `mapstructure:"max_observation_chars"` // rules observations are cut to this size
	// MaxConsecutiveFailures stops a run once this many environment steps in a row
	// failed (a MediaWiki that cannot be reached), before more model requests are paid
	// for; 0 never stops.
	MaxConsecutiveFailures int `mapstructure:"max_consecutive_failures"`
}

// Price is the cost of one million tokens.
type Price struct {
	Prompt     float64 `mapstructure:"prompt"`
	Completion float64 `mapstructure:"completion"`
	// CachedPrompt prices the prompt tokens the server read from its prompt cache
	// (usage.prompt_tokens_details.cached_tokens); 0 prices them as Prompt.
	CachedPrompt float64 `mapstructure:"cached_prompt"`
}

// LLMConfig configures the model client and its decorators.
type LLMConfig struct {
	BaseURL          string            `mapstructure:"base_url"`
	Model            string            `mapstructure:"model"`
	APIKeyEnv        string            `mapstructure:"api_key_env"`
	Temperature      float64           `mapstructure:"temperature"`
	TopP             float64           `mapstructure:"top_p"`
	RequestMaxTokens int               `mapstructure:"request_max_tokens"` // max_tokens of each request
	Stop             []string          `mapstructure:"stop"`               // extra stop sequences
	Seed             int               `mapstructure:"seed"`
	Headers          map[string]string `mapstructure:"headers"`
	Timeout          time.Duration     `mapstructure:"timeout"` // per request
	// StallTimeout moves a request that has had no answer for this long to another
	// endpoint of llm.endpoints while one is up; 0 waits for Timeout.
	StallTimeout time.Duration    `mapstructure:"stall_timeout"`
	MaxRetries   int              `mapstructure:"max_retries"`
	BackoffBase  time.Duration    `mapstructure:"backoff_base"`
	BackoffMax   time.Duration    `mapstructure:"backoff_max"`
	Concurrency  int              `mapstructure:"concurrency"` // requests in flight at once
	RPM          float64          `mapstructure:"rpm"`         // requests per minute (0 = unlimited)
	TPM          float64          `mapstructure:"tpm"`         // tokens per minute (0 = unlimited)
	MaxRequests  int              `mapstructure:"max_requests"`
	MaxTokens    int              `mapstructure:"max_tokens"` // budget: total tokens over the run
	MaxCostUSD   float64          `mapstructure:"max_cost_usd"`
	Prices       map[string]Price `mapstructure:"prices"` // per model, USD per 1M tokens
	Cache        bool             `mapstructure:"cache"`
	CacheDir     string           `mapstructure:"cache_dir"` // empty means <run>/llm-cache
	// Endpoints, when set, make a pool of servers in place of base_url alone (see
	// EndpointConfig); Resolve fills their unset keys from the keys above.
	Endpoints []EndpointConfig `mapstructure:"endpoints"`
	// Mode is online (a request per call) or batch (waves of requests through a batch
	// API or wave files; see BatchConfig).
	Mode  string      `mapstructure:"mode"`
	Batch BatchConfig `mapstructure:"batch"`
	// ThinkTags splits a leading <think>…</think> block of each reply's text off as the
	// step's reasoning, for servers that inline a reasoning model's thinking.
	ThinkTags bool `mapstructure:"think_tags"`
	// Logprobs asks for the log-probability of every completion token and keeps them in
	// the episode record (pipeline.Call.Logprobs).
	Logprobs bool `mapstructure:"logprobs"`
	// TokenIDs asks a vLLM server for the prompt's and completion's token ids
	// (return_token_ids) and keeps them (pipeline.Call.PromptTokenIDs, CompletionTokenIDs).
	TokenIDs bool `mapstructure:"token_ids"`
}

// BatchConfig configures llm.mode batch: each wave of pending requests (every episode's
// next step) goes out as one batch.
type BatchConfig struct {
	// Backend is openai (the Files and Batches API at llm.base_url) or files (wave files
	// for `vllm run-batch`: reactgen writes each wave's input and waits for its output).
	Backend string `mapstructure:"backend"`
	// Window closes a wave once no request has joined it for this long.
	Window time.Duration `mapstructure:"window"`
	// MaxLines closes a wave at this many requests (OpenAI takes up to 50,000).
	MaxLines int `mapstructure:"max_lines"`
	// MaxBytes closes a wave before its input file passes this size (OpenAI: 200 MB).
	MaxBytes int64 `mapstructure:"max_bytes"`
	// Poll is how often a batch's status is read.
	Poll time.Duration `mapstructure:"poll"`
	// CompletionWindow is the batch's completion_window (OpenAI: 24h).
	CompletionWindow string `mapstructure:"completion_window"`
	// PriceFactor prices batch tokens as this fraction of llm.prices (OpenAI: 0.5).
	PriceFactor float64 `mapstructure:"price_factor"`
	// Dir holds the wave files and the batch state; empty means <run>/batches.
	Dir string `mapstructure:"dir"`
}

// EndpointConfig is one server of an endpoint pool (llm.endpoints): the llm.* keys that
// apply to one server, plus its weight. A zero or empty key falls back to llm.*.
type EndpointConfig struct {
	BaseURL     string            `mapstructure:"base_url"`
	Model       string            `mapstructure:"model"` // the name this server serves the model under
	APIKeyEnv   string            `mapstructure:"api_key_env"`
	Concurrency int               `mapstructure:"concurrency"`
	RPM         float64           `mapstructure:"rpm"`
	TPM         float64           `mapstructure:"tpm"`
	Headers     map[string]string `mapstructure:"headers"`
	Prices      map[string]Price  `mapstructure:"prices"`
	// Weight is the endpoint's share of the requests while several have room (default 1);
	// 0 keeps it in reserve, used only when no other has room.
	Weight *float64 `mapstructure:"weight"`
}

// ResolvedEndpoints returns llm.endpoints with every unset key taken from llm.*, and
// weight 1 where unset; nil when no pool is configured.
func (l LLMConfig) ResolvedEndpoints() []EndpointConfig {
	out := make([]EndpointConfig, len(l.Endpoints))
	for i, e := range l.Endpoints {
		if e.BaseURL == "" {
			e.BaseURL = l.BaseURL
		}
		if e.Model == "" {
			e.Model = l.Model
		}
		if e.APIKeyEnv == "" {
			e.APIKeyEnv = l.APIKeyEnv
		}
		if e.Concurrency == 0 {
			e.Concurrency = l.Concurrency
		}
		if e.RPM == 0 {
			e.RPM = l.RPM
		}
		if e.TPM == 0 {
			e.TPM = l.TPM
		}
		if e.Headers == nil {
			e.Headers = l.Headers
		}
		if e.Prices == nil {
			e.Prices = l.Prices
		}
		if e.Weight == nil {
			one := 1.0
			e.Weight = &one
		}
		out[i] = e
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// GenerateConfig configures the agent loop.
type GenerateConfig struct {
	Policy            string  `mapstructure:"policy"`        // llm or expert
	Method            string  `mapstructure:"method"`        // standard, cot, cot-sc, act, react, react-cot-sc, cot-sc-react
	Format            string  `mapstructure:"format"`        // completion, chat or tools
	Exemplars         string  `mapstructure:"exemplars"`     // empty = the embedded set for the task; or FILE, or FILE#key
	CoTExemplars      string  `mapstructure:"cot_exemplars"` // the CoT prompts' own exemplars; empty = derived from Exemplars
	NumExemplars      int     `mapstructure:"num_exemplars"`
	Instruction       string  `mapstructure:"instruction"` // overrides the task's instruction
	MaxSteps          int     `mapstructure:"max_steps"`   // 0 = the paper's (7 HotpotQA, 5 FEVER)
	Attempts          int     `mapstructure:"attempts"`
	Concurrency       int     `mapstructure:"concurrency"` // episodes in flight
	TargetCorrect     int     `mapstructure:"target_correct"`
	Seed              int64   `mapstructure:"seed"`
	Shuffle           bool    `mapstructure:"shuffle"`
	Samples           int     `mapstructure:"samples"`            // CoT-SC samples (the paper: 21)
	SampleTemperature float64 `mapstructure:"sample_temperature"` // CoT-SC and attempts > 1 (the paper: 0.7)
	Rationalize       bool    `mapstructure:"rationalize"`
	KeepPrompts       bool    `mapstructure:"keep_prompts"`
	Progress          string  `mapstructure:"progress"`       // auto, bar, lines, off
	Prompting         string  `mapstructure:"prompting"`      // few-shot, or trained: a fine-tuned model's layout
	TrainedFormat     string  `mapstructure:"trained_format"` // with trained: the export format the model learned
}

// FilterConfig configures the filter chain.
type FilterConfig struct {
	Rules []string `mapstructure:"rules"`
	MinF1 float64  `mapstructure:"min_f1"`
	// MinReward keeps, under the correct rule, game episodes (alfworld, webshop) whose
	// reward is at least this though under 1: WebShop's near-misses. 0 keeps reward 1 only.
	MinReward        float64  `mapstructure:"min_reward"`
	MaxSteps         int      `mapstructure:"max_steps"`
	MaxTokens        int      `mapstructure:"max_tokens"`    // the serialised example must fit this
	TokenCounter     string   `mapstructure:"token_counter"` // empty = export.tokenizer
	MaxPerQuestion   int      `mapstructure:"max_per_question"`
	DedupePolicy     string   `mapstructure:"dedupe_policy"` // first, shortest, diverse
	EvalFiles        []string `mapstructure:"eval_files"`    // for decontaminate
	BalanceBy        string   `mapstructure:"balance_by"`    // label or type
	BalanceTolerance float64  `mapstructure:"balance_tolerance"`
	AnsweredBy       []string `mapstructure:"answered_by"` // answered_by: the methods whose answers are kept
	MaskSteps        []string `mapstructure:"mask_steps"`  // steps of kept episodes to mask: invalid_action, repeated_search, error_observation
}

// ExportConfig configures the training files.
type ExportConfig struct {
	Formats            []string `mapstructure:"formats"`
	Compression        string   `mapstructure:"compression"` // none, zstd, gzip (JSONL formats)
	System             string   `mapstructure:"system"`      // system message; empty = none
	Weights            bool     `mapstructure:"weights"`     // OpenAI weight on assistant turns
	TrainObservations  bool     `mapstructure:"train_observations"`
	ObservationRole    bool     `mapstructure:"observation_role"` // ShareGPT observation turns
	ValidationFraction float64  `mapstructure:"validation_fraction"`
	SplitSeed          int64    `mapstructure:"split_seed"`
	ShardRows          int      `mapstructure:"shard_rows"`
	ShardBytes         int64    `mapstructure:"shard_bytes"`
	Views              []string `mapstructure:"views"` // react, act, standard
	Pairs              bool     `mapstructure:"pairs"` // DPO preference pairs
	CorrectOnly        bool     `mapstructure:"correct_only"`
	MaxTokens          int      `mapstructure:"max_tokens"`  // leave out episodes longer than this (0 = no limit)
	Tokenizer          string   `mapstructure:"tokenizer"`   // o200k_base, cl100k_base, or a tokenizer.json path
	CardCharts         string   `mapstructure:"card_charts"` // a compare report directory whose charts the card shows
	// Reasoning is where a step's reasoning text goes: keep (the formats' reasoning
	// fields), drop, or inline (<think>…</think> before the thought in the trained text).
	Reasoning string `mapstructure:"reasoning"`
	// ChatTemplate is a model's chat template (a Jinja file, or its tokenizer_config.json):
	// the export renders every example with it into chat-text rows (text and loss spans)
	// and counts tokens on that text; empty = none.
	ChatTemplate string `mapstructure:"chat_template"`
}

// Default returns the configuration before any file, environment or flag.
func Default() Config {
	return Config{
		Run:  RunConfig{Out: "runs/default", FsyncEvery: 1, FsyncInterval: time.Second, GracePeriod: 30 * time.Second},
		Task: TaskConfig{Name: TaskHotpotQA, Format: "auto"},
		Env: EnvConfig{
			Backend: "local", UserAgent: "reactgen/0 (https://github.com/reactgen/reactgen)",
			RequestsPerSecond: 5, Timeout: 20 * time.Second, Observations: "paper", Actions: "paper",
			Sentences: 5, MaxObservationChars: 2000, MaxConsecutiveFailures: 5,
		},
		LLM: LLMConfig{
			BaseURL: "", Model: "gpt-4o-mini", APIKeyEnv: "OPENAI_API_KEY",
			Temperature: 0, TopP: 1, RequestMaxTokens: 256, Timeout: 60 * time.Second, StallTimeout: 20 * time.Second,
			MaxRetries: 6, BackoffBase: 500 * time.Millisecond, BackoffMax: 30 * time.Second,
			Concurrency: 64, Cache: true, Mode: "online",
			Batch: BatchConfig{Backend: "openai", Window: 2 * time.Second, MaxLines: 50000, MaxBytes: 190_000_000, Poll: 30 * time.Second,
				CompletionWindow: "24h", PriceFactor: 0.5},
		},
		Generate: GenerateConfig{
			Policy: "llm", Method: "react", Format: "chat", Attempts: 1, Concurrency: 16,
			TargetCorrect: 3000, Seed: 1, Shuffle: true, Samples: 21, SampleTemperature: 0.7,
			Progress: "auto", Prompting: "few-shot",
		},
		Filter: FilterConfig{
			Rules:          []string{"finished", "correct", "answered_by", "no_invalid_actions", "no_loops", "dedupe"},
			MaxPerQuestion: 1, DedupePolicy: "first", BalanceBy: "label",
			BalanceTolerance: 0.1, AnsweredBy: []string{MethodReAct, MethodAct},
		},
		Export: ExportConfig{
			Formats: []string{"openai-chat", "arrow-file"}, Compression: "none",
			ValidationFraction: 0.05, SplitSeed: 1, Views: []string{"react"}, CorrectOnly: true,
			Tokenizer: "o200k_base", Reasoning: "keep",
		},
		Serve: ServeConfig{MaxSessions: 4096, IdleTimeout: 10 * time.Minute, MaxBodyBytes: 4 << 20, DrainTimeout: 30 * time.Second},
	}
}

// MaxStepsFor returns the step limit, the paper's default for the task when unset.
func (g GenerateConfig) MaxStepsFor(task string) int {
	if g.MaxSteps > 0 {
		return g.MaxSteps
	}
	switch task {
	case TaskFEVER:
		return 5
	case TaskALFWorld:
		return 49 // alfworld.ipynb: for i in range(1, 50)
	case TaskWebShop:
		return 14 // WebShop.ipynb: range(15), the first turn being the reset
	}
	return 7
}

// ConfigError is a config value that is not allowed. Key is the dotted config key.
type ConfigError struct {
	Key     string
	Message string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config key %s: %s", e.Key, e.Message) }

func oneOf(key, val string, allowed ...string) error {
	if slices.Contains(allowed, val) {
		return nil
	}
	return &ConfigError{Key: key, Message: fmt.Sprintf("%q is not one of %s", val, strings.Join(allowed, ", "))}
}

// Validate checks every value that can be checked without touching the disk. The names
// of implementations (policies, methods, environment backends, filter rules, export
// formats and views) are checked against the registry cmd/reactgen builds.
func (c *Config) Validate() error {
	if err := numbersAndDurations(reflect.ValueOf(*c), ""); err != nil {
		return err
	}
	// In this order: the first failing check names its key.
	for _, check := range []func() error{c.names, c.counts, c.batchMode, c.ranges, c.headers, c.shard, c.endpoints, c.rewardFilter, c.methodSettings, c.outputs} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// names checks the keys that take one of a fixed set of words.
func (c *Config) names() error {
	checks := []error{
		oneOf("task.name", c.Task.Name, TaskHotpotQA, TaskFEVER, TaskALFWorld, TaskWebShop),
		oneOf("task.format", c.Task.Format, "auto", "hotpotqa", "hotpotqa-simple", "fever", "jsonl"),
		oneOf("env.observations", c.Env.Observations, "paper", "rules"),
		oneOf("env.actions", c.Env.Actions, "paper", "lenient"),
		oneOf("generate.format", c.Generate.Format, "completion", "chat", "tools"),
		oneOf("generate.progress", c.Generate.Progress, "auto", "bar", "lines", "off"),
		oneOf("generate.prompting", c.Generate.Prompting, "few-shot", "trained"),
		oneOf("filter.dedupe_policy", c.Filter.DedupePolicy, "first", "shortest", "diverse"),
		oneOf("filter.balance_by", c.Filter.BalanceBy, "label", "type"),
		oneOf("export.compression", c.Export.Compression, "none", "zstd", "gzip"),
		oneOf("export.reasoning", c.Export.Reasoning, "keep", "drop", "inline"),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// counts checks the numbers that must not be negative or must be at least one.
func (c *Config) counts() error {
	nonNeg := []struct {
		key string
		v   float64
	}{
		{"task.limit", float64(c.Task.Limit)}, {"task.offset", float64(c.Task.Offset)},
		{"generate.max_steps", float64(c.Generate.MaxSteps)}, {"generate.num_exemplars", float64(c.Generate.NumExemplars)},
		{"generate.target_correct", float64(c.Generate.TargetCorrect)},
		{"llm.rpm", c.LLM.RPM}, {"llm.tpm", c.LLM.TPM}, {"llm.max_requests", float64(c.LLM.MaxRequests)},
		{"llm.max_tokens", float64(c.LLM.MaxTokens)}, {"llm.max_cost_usd", c.LLM.MaxCostUSD},
		{"llm.max_retries", float64(c.LLM.MaxRetries)}, {"llm.temperature", c.LLM.Temperature},
		{"llm.request_max_tokens", float64(c.LLM.RequestMaxTokens)},
		{"llm.stall_timeout", float64(c.LLM.StallTimeout)},
		{"filter.min_f1", c.Filter.MinF1}, {"filter.min_reward", c.Filter.MinReward}, {"filter.max_steps", float64(c.Filter.MaxSteps)},
		{"filter.max_tokens", float64(c.Filter.MaxTokens)}, {"filter.max_per_question", float64(c.Filter.MaxPerQuestion)},
		{"filter.balance_tolerance", c.Filter.BalanceTolerance},
		{"export.shard_rows", float64(c.Export.ShardRows)}, {"export.max_tokens", float64(c.Export.MaxTokens)}, {"export.shard_bytes", float64(c.Export.ShardBytes)},
		{"env.max_observation_chars", float64(c.Env.MaxObservationChars)},
		{"env.max_consecutive_failures", float64(c.Env.MaxConsecutiveFailures)},
		{"run.fsync_every", float64(c.Run.FsyncEvery)},
	}
	for _, n := range nonNeg {
		if n.v < 0 {
			return &ConfigError{Key: n.key, Message: fmt.Sprintf("must not be negative, got %v", n.v)}
		}
	}
	positive := []struct {
		key string
		v   int
	}{
		{"generate.attempts", c.Generate.Attempts}, {"generate.concurrency", c.Generate.Concurrency},
		{"generate.samples", c.Generate.Samples}, {"llm.concurrency", c.LLM.Concurrency},
		{"env.sentences", c.Env.Sentences}, {"serve.max_sessions", c.Serve.MaxSessions},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return &ConfigError{Key: p.key, Message: fmt.Sprintf("must be at least 1, got %d", p.v)}
		}
	}
	if c.Serve.MaxBodyBytes < 1<<10 {
		return &ConfigError{Key: "serve.max_body_bytes", Message: fmt.Sprintf("must be at least 1024, got %d", c.Serve.MaxBodyBytes)}
	}
	return nil
}

// batchMode checks llm.mode and, in batch mode, the llm.batch settings.
func (c *Config) batchMode() error {
	if err := oneOf("llm.mode", c.LLM.Mode, "online", "batch"); err != nil {
		return err
	}
	if err := oneOf("llm.batch.backend", c.LLM.Batch.Backend, "openai", "files"); err != nil {
		return err
	}
	if c.LLM.Mode == "batch" {
		switch {
		case c.LLM.Batch.MaxLines < 1:
			return &ConfigError{Key: "llm.batch.max_lines", Message: fmt.Sprintf("must be at least 1, got %d", c.LLM.Batch.MaxLines)}
		case c.LLM.Batch.MaxBytes < 1<<20:
			return &ConfigError{Key: "llm.batch.max_bytes", Message: fmt.Sprintf("must be at least 1 MiB, got %d", c.LLM.Batch.MaxBytes)}
		case c.LLM.Batch.Window <= 0:
			return &ConfigError{Key: "llm.batch.window", Message: fmt.Sprintf("must be positive, got %s", c.LLM.Batch.Window)}
		case c.LLM.Batch.Poll <= 0:
			return &ConfigError{Key: "llm.batch.poll", Message: fmt.Sprintf("must be positive, got %s", c.LLM.Batch.Poll)}
		case c.LLM.Batch.PriceFactor < 0:
			return &ConfigError{Key: "llm.batch.price_factor", Message: fmt.Sprintf("must not be negative, got %v", c.LLM.Batch.PriceFactor)}
		case len(c.LLM.Endpoints) > 0:
			return &ConfigError{Key: "llm.mode", Message: "batch mode sends to llm.base_url alone; it does not take llm.endpoints"}
		}
	}
	return nil
}

// shard checks task.shard.
func (c *Config) shard() error {
	if _, err := ParseShard(c.Task.Shard); err != nil {
		return &ConfigError{Key: "task.shard", Message: err.Error()}
	}
	return nil
}

// endpoints checks each of llm.endpoints.
func (c *Config) endpoints() error {
	for i, e := range c.LLM.Endpoints {
		key := fmt.Sprintf("llm.endpoints[%d]", i)
		switch {
		case e.Concurrency < 0:
			return &ConfigError{Key: key + ".concurrency", Message: fmt.Sprintf("must not be negative, got %d", e.Concurrency)}
		case e.RPM < 0:
			return &ConfigError{Key: key + ".rpm", Message: fmt.Sprintf("must not be negative, got %v", e.RPM)}
		case e.TPM < 0:
			return &ConfigError{Key: key + ".tpm", Message: fmt.Sprintf("must not be negative, got %v", e.TPM)}
		case e.Weight != nil && !(*e.Weight >= 0):
			return &ConfigError{Key: key + ".weight", Message: fmt.Sprintf("must not be negative, got %v", *e.Weight)}
		}
	}
	return nil
}

// rewardFilter checks that filter.min_reward keeps episodes the export will write.
func (c *Config) rewardFilter() error {
	if c.Filter.MinReward > 0 && c.Export.CorrectOnly {
		return &ConfigError{Key: "filter.min_reward", Message: "keeps episodes whose reward is under 1, which export.correct_only (true by default) refuses to export; set export.correct_only: false with it"}
	}
	return nil
}

// methodSettings checks the generate settings that only some methods take.
func (c *Config) methodSettings() error {
	if c.Generate.CoTExemplars != "" && !slices.Contains([]string{"cot", "cot-sc", "react-cot-sc", "cot-sc-react"}, c.Generate.Method) {
		return &ConfigError{Key: "generate.cot_exemplars", Message: fmt.Sprintf(
			"method %s sends no CoT prompt; the key serves cot, cot-sc, react-cot-sc and cot-sc-react", c.Generate.Method)}
	}
	if c.Generate.Format == "tools" {
		switch c.Generate.Method {
		case "cot", "cot-sc", "standard":
			return &ConfigError{Key: "generate.format", Message: fmt.Sprintf("tools needs a method that acts (react, act, react-cot-sc, cot-sc-react), not %q; use chat or completion", c.Generate.Method)}
		}
	}
	if c.Generate.Prompting == "trained" {
		switch c.Generate.Method {
		case "react", "act", "standard":
		default:
			return &ConfigError{Key: "generate.method", Message: fmt.Sprintf("%q cannot be prompted in the trained layout: the export renders the views react, act and standard", c.Generate.Method)}
		}
		if err := trainedFormat(c.Generate.Format, c.Generate.TrainedFormat); err != nil {
			return err
		}
	} else if c.Generate.TrainedFormat != "" {
		return &ConfigError{Key: "generate.trained_format", Message: "is only read with generate.prompting trained"}
	}
	return nil
}

// outputs checks where the run writes and what the export writes.
func (c *Config) outputs() error {
	if abs, err := filepath.Abs(c.Run.Out); c.Run.Out == "" || err == nil && abs == string(filepath.Separator) {
		return &ConfigError{Key: "run.out", Message: fmt.Sprintf("%q cannot be a run directory: choose a directory of its own", c.Run.Out)}
	}
	if c.Export.ValidationFraction < 0 || c.Export.ValidationFraction >= 1 {
		return &ConfigError{Key: "export.validation_fraction", Message: fmt.Sprintf("must be in [0, 1), got %v", c.Export.ValidationFraction)}
	}
	if len(c.Export.Formats) == 0 {
		return &ConfigError{Key: "export.formats", Message: "must name at least one format"}
	}
	return nil
}

// ranges checks the sampling settings and fractions a server or a filter would take
// without complaint and act on wrongly: top_p outside (0, 1] (0 is left out of the
// request, so the server's default would apply), a temperature over 2 (OpenAI's bound;
// a higher one samples noise), a minimum F1 over 1 (nothing would pass).
func (c *Config) ranges() error {
	in := func(key string, v, lo, hi float64, loOpen bool, want string) error {
		if v > hi || v < lo || loOpen && v == lo {
			return &ConfigError{Key: key, Message: fmt.Sprintf("must be in %s, got %v", want, v)}
		}
		return nil
	}
	for _, err := range []error{
		in("llm.top_p", c.LLM.TopP, 0, 1, true, "(0, 1]"),
		in("llm.temperature", c.LLM.Temperature, 0, 2, false, "[0, 2]"),
		in("generate.sample_temperature", c.Generate.SampleTemperature, 0, 2, false, "[0, 2]"),
		in("filter.min_f1", c.Filter.MinF1, 0, 1, false, "[0, 1]"),
		in("filter.min_reward", c.Filter.MinReward, 0, 1, false, "[0, 1]"),
		in("llm.batch.price_factor", c.LLM.Batch.PriceFactor, 0, 1, false, "[0, 1]"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// headers checks every configured header's name and value (origin.CheckHeader): a CR or
// LF in a value would fail every request (or split it), and is refused here, naming the
// key, before anything is sent.
func (c *Config) headers() error {
	check := func(prefix string, h map[string]string) error {
		for _, name := range slices.Sorted(maps.Keys(h)) {
			if err := origin.CheckHeader(name, h[name]); err != nil {
				return &ConfigError{Key: prefix + "." + name, Message: err.Error()}
			}
		}
		return nil
	}
	if err := check("llm.headers", c.LLM.Headers); err != nil {
		return err
	}
	for i, e := range c.LLM.Endpoints {
		if err := check(fmt.Sprintf("llm.endpoints[%d].headers", i), e.Headers); err != nil {
			return err
		}
	}
	return nil
}

// ValidateSources checks that what generation reads is named: the task file, the corpus
// and the model. Filter and export on an existing run need none of them.
func (c *Config) ValidateSources() error {
	if GameTask(c.Task.Name) {
		return c.validateGame()
	}
	if c.Task.Path == "" {
		return &ConfigError{Key: "task.path", Message: "is required: the file of questions or claims"}
	}
	if c.Env.Backend == "local" && c.Corpus.Path == "" && c.Corpus.Index == "" {
		return &ConfigError{Key: "corpus.path", Message: "is required with env.backend local (or set corpus.index to a built index)"}
	}
	if c.Env.Backend == "mediawiki" && c.Env.MediaWikiURL == "" {
		return &ConfigError{Key: "env.mediawiki_url", Message: "is required with env.backend mediawiki"}
	}
	if c.Generate.Policy == "llm" && c.LLM.Model == "" {
		return &ConfigError{Key: "llm.model", Message: "is required with generate.policy llm"}
	}
	if c.Generate.Policy == "llm" {
		return c.LLM.pricedForBudget()
	}
	return nil
}

// validateGame checks what a game task reads: the AgentGym server, the games' range and
// the model.
func (c *Config) validateGame() error {
	switch {
	case c.Env.URL == "":
		return &ConfigError{Key: "env.url", Message: fmt.Sprintf("is required with task.name %s: the AgentGym %s server, e.g. http://127.0.0.1:36001 (docs/agentgym.md)", c.Task.Name, c.Task.Name)}
	case c.Task.Limit < 1:
		return &ConfigError{Key: "task.limit", Message: fmt.Sprintf("is required with task.name %s: the games are AgentGym's numbers task.offset to task.offset+task.limit-1", c.Task.Name)}
	case c.Task.Path != "":
		return &ConfigError{Key: "task.path", Message: fmt.Sprintf("does not apply to task.name %s, whose games come from env.url (task.offset, task.limit)", c.Task.Name)}
	case c.Env.Backend == "mediawiki":
		return &ConfigError{Key: "env.backend", Message: fmt.Sprintf("mediawiki does not apply to task.name %s, which is played on the AgentGym server at env.url", c.Task.Name)}
	case c.Generate.Policy != "llm":
		return &ConfigError{Key: "generate.policy", Message: fmt.Sprintf("%q cannot play %s: only the model (llm) does", c.Generate.Policy, c.Task.Name)}
	case c.Generate.Method != MethodReAct && c.Generate.Method != MethodAct:
		return &ConfigError{Key: "generate.method", Message: fmt.Sprintf("%q does not apply to %s: its games are played by react or act, as in the paper", c.Generate.Method, c.Task.Name)}
	case c.Generate.Prompting == "trained":
		return &ConfigError{Key: "generate.prompting", Message: fmt.Sprintf("trained is not available for %s yet: few-shot only", c.Task.Name)}
	case c.Generate.Rationalize:
		return &ConfigError{Key: "generate.rationalize", Message: fmt.Sprintf("does not apply to %s: a game has no gold answer to hint", c.Task.Name)}
	case c.Generate.Exemplars == "":
		return &ConfigError{Key: "generate.exemplars", Message: fmt.Sprintf("is required with task.name %s: the paper's prompt file (%s)", c.Task.Name, map[string]string{TaskALFWorld: "ReAct's prompts/alfworld_3prompts.json", TaskWebShop: "webshop.json, the WebShop notebook's prompts; docs/agentgym.md"}[c.Task.Name])}
	case c.LLM.Model == "":
		return &ConfigError{Key: "llm.model", Message: "is required with generate.policy llm"}
	}
	return c.LLM.pricedForBudget()
}

// pricedForBudget refuses llm.max_cost_usd when a model it would have to price has no
// price: the budget would count every response as free and never stop the run.
func (l LLMConfig) pricedForBudget() error {
	if l.MaxCostUSD <= 0 {
		return nil
	}
	unpriced := func(key string, prices map[string]Price, models ...string) error {
		for _, m := range models {
			if _, ok := LookupPrice(prices, m); ok {
				return nil
			}
		}
		return &ConfigError{Key: key, Message: fmt.Sprintf(
			"has no price for model %q, so llm.max_cost_usd %v could not count what the run spends; add %s.%s: {prompt: ..., completion: ...} (USD per 1M tokens; a key that is a prefix of the model name also prices it) or set llm.max_cost_usd to 0",
			models[0], l.MaxCostUSD, key, models[0])}
	}
	eps := l.ResolvedEndpoints()
	if eps == nil {
		return unpriced("llm.prices", l.Prices, l.Model)
	}
	for i, e := range eps {
		key := "llm.prices"
		if l.Endpoints[i].Prices != nil {
			key = fmt.Sprintf("llm.endpoints[%d].prices", i)
		}
		if err := unpriced(key, e.Prices, e.Model, l.Model); err != nil {
			return err
		}
	}
	return nil
}

// LookupPrice is the price of model in prices: its own entry, else the longest key that
// is a prefix of its name (so "gpt-4o-mini" prices "gpt-4o-mini-2024-07-18"); a model
// prices does not name is looked up in DefaultPrices the same way.
func LookupPrice(prices map[string]Price, model string) (Price, bool) {
	if p, ok := lookupIn(prices, model); ok {
		return p, true
	}
	return lookupIn(DefaultPrices, model)
}

func lookupIn(prices map[string]Price, model string) (Price, bool) {
	if p, ok := prices[model]; ok {
		return p, true
	}
	best, found := "", false
	for k := range prices {
		if strings.HasPrefix(model, k) && len(k) > len(best) {
			best, found = k, true
		}
	}
	return prices[best], found
}

// numbersAndDurations walks a config section by its mapstructure tags and refuses a
// number that is not finite (NaN and infinities cannot be sent as JSON, and every
// comparison with them is false, so no range check catches them) and a negative
// duration (a grace period, timeout or interval below zero).
func numbersAndDurations(v reflect.Value, prefix string) error {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			tag := t.Field(i).Tag.Get("mapstructure")
			if tag == "" {
				continue
			}
			if err := numbersAndDurations(v.Field(i), join(tag)); err != nil {
				return err
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return numbersAndDurations(v.Elem(), prefix)
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := numbersAndDurations(v.Index(i), fmt.Sprintf("%s[%d]", prefix, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if err := numbersAndDurations(v.MapIndex(k), join(fmt.Sprint(k.Interface()))); err != nil {
				return err
			}
		}
	case reflect.Float64, reflect.Float32:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return &ConfigError{Key: prefix, Message: fmt.Sprintf("must be a finite number, got %v", f)}
		}
	case reflect.Int64:
		if d, ok := v.Interface().(time.Duration); ok && d < 0 {
			return &ConfigError{Key: prefix, Message: fmt.Sprintf("must not be negative, got %s", d)}
		}
	}
	return nil
}

// trainedFormat checks generate.trained_format against the request format that serves it.
func trainedFormat(format, exportFormat string) error {
	allowed := map[string][]string{"chat": {"openai-chat", "axolotl-chat", "sharegpt", "agentgym"}, "completion": {"completion"},
		"tools": {"openai-tools", "hf-tools", "sharegpt-tools"}}[format]
	if exportFormat == "" || slices.Contains(allowed, exportFormat) {
		return nil
	}
	return &ConfigError{Key: "generate.trained_format", Message: fmt.Sprintf("%q cannot be served with generate.format %s (want one of %s)",
		exportFormat, format, strings.Join(allowed, ", "))}
}
