package pipeline

import (
	"time"
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
