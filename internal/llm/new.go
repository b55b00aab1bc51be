package llm

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/reactgen/reactgen/internal/retry"
	"github.com/reactgen/reactgen/pipeline"
)

// BreakerRequests is how many failing first requests make New's client unusable.
const BreakerRequests = 3

// New builds the run's client from cfg: the OpenAI-compatible adapter at cfg.BaseURL
// wrapped, from the outside in, as
//
//	meter → think tags → cache → budget → breaker → choices → rate limit → concurrency → retry → OpenAI
//
// The cache sits outside everything that costs: a hit skips the budget, the breaker,
// the rate limits and the concurrency slots, and is free. The meter sits outside the
// cache so that its counts include hits (Snapshot().Cached); its Usage counts only what
// was not cached. The think-tags decorator (llm.think_tags; WithThinkTags) splits what
// the cache replays as well as what the server sends. The budget counts a request once however many retries it took. Retries
// happen inside a concurrency slot and are not rate limited again. Before any request
// has succeeded, refused connections and unknown hosts are not retried, so a wrong URL
// stops the run after BreakerRequests requests; a wrong key (401) or model (404) does too.
// The choices decorator (WithChoices) learns once whether the server honours n and sits
// inside the breaker, so that its verdict never counts as a failing request.
//
// With llm.endpoints set, the part below the choices decorator is a Pool (see NewClient).
//
// apiKey is the key itself (read by the caller from cfg.APIKeyEnv); it may be empty for
// local servers. cacheDir is the resolved cache directory, used when cfg.Cache is on;
// empty falls back to cfg.CacheDir. The returned Meter and Budgeted are the same values
// that sit inside the Client, for progress lines and the run's manifest.
func New(ctx context.Context, cfg pipeline.LLMConfig, apiKey, cacheDir string) (Client, *Meter, *Budgeted, error) {
	cs, err := NewClient(ctx, Options{Config: cfg, CacheDir: cacheDir, Getenv: func(name string) string {
		if name == cfg.APIKeyEnv {
			return apiKey
		}
		return ""
	}})
	if err != nil {
		return nil, nil, nil, err
	}
	return cs.Client, cs.Meter, cs.Budget, nil
}

// Options are what NewClient builds from.
type Options struct {
	Config pipeline.LLMConfig
	// Getenv reads the API keys: llm.api_key_env's and each endpoint's; nil reads none.
	Getenv   func(string) string
	CacheDir string // see New
	// BatchDir holds llm.mode batch's wave files and state when llm.batch.dir is empty.
	BatchDir string
	Logger   *slog.Logger // batch progress; nil: none
}

// Clients is the run's client and the decorators inside it that report.
type Clients struct {
	Client Client
	Meter  *Meter
	Budget *Budgeted
	Pool   *Pool    // nil without llm.endpoints
	Batch  *Batcher // nil unless llm.mode is batch
}

// Close stops what runs in the background (the batcher); batches in flight stay out.
func (c Clients) Close() {
	if c.Batch != nil {
		c.Batch.Close()
	}
}

// NewClient is New with every endpoint's key read through o.Getenv, and the pool
// returned. A mistake in the config is a *pipeline.ConfigError naming its key; any other
// error (a batch directory that cannot be read or re-attached, a cache directory that
// cannot be made) is a runtime failure. With llm.endpoints the chain is
//
//	meter → cache → budget → breaker → choices → pool → per endpoint: rate limit → OpenAI
//
// where the pool holds each endpoint's concurrency slots and does the retries (on another
// endpoint when one is up; see Pool). Each endpoint prices its own responses with its
// prices (llm.prices when unset).
func NewClient(ctx context.Context, o Options) (Clients, error) {
	if err := ctx.Err(); err != nil {
		return Clients{}, err
	}
	cfg := o.Config
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var c Client
	var pool *Pool
	var batcher *Batcher
	if cfg.Mode == "batch" {
		var err error
		if batcher, err = newBatcher(ctx, cfg, getenv(cfg.APIKeyEnv), o); err != nil {
			return Clients{}, err
		}
		c = batcher
	} else if eps := cfg.ResolvedEndpoints(); len(eps) > 0 {
		var err error
		if pool, err = newPool(cfg, eps, getenv, o.Logger); err != nil {
			return Clients{}, err
		}
		c = pool
	} else {
		oa, err := NewOpenAI(OpenAIOptions{BaseURL: cfg.BaseURL, APIKey: getenv(cfg.APIKeyEnv), KeyEnv: cfg.APIKeyEnv, Headers: cfg.Headers,
			Timeout: cfg.Timeout, HTTPClient: &http.Client{Transport: transport(cfg.Concurrency)}})
		if err != nil {
			return Clients{}, &pipeline.ConfigError{Key: "llm.base_url", Message: err.Error()}
		}
		c = WithRetry(oa, RetryPolicy{
			MaxRetries: cfg.MaxRetries, Base: cfg.BackoffBase, Max: cfg.BackoffMax, Jitter: true,
			FailFastUntilSuccess: true,
		})
		c = WithConcurrency(c, cfg.Concurrency)
		c = WithRateLimit(c, cfg.RPM, cfg.TPM)
	}
	if batcher == nil {
		// In batch mode a probe would hold back the whole first wave; a batch answers n as
		// the server does, and CoT-SC falls back per episode if it gets fewer choices.
		c = WithChoices(c)
	}
	c = WithBreaker(c, BreakerRequests)
	budget := WithBudget(c, Budget{MaxRequests: cfg.MaxRequests, MaxTokens: cfg.MaxTokens, MaxCostUSD: cfg.MaxCostUSD}, cfg.Prices)
	c = budget
	if cfg.Cache {
		cacheDir := o.CacheDir
		if cacheDir == "" {
			cacheDir = cfg.CacheDir
		}
		if cacheDir == "" {
			return Clients{}, &pipeline.ConfigError{Key: "llm.cache_dir", Message: "is required when llm.cache is on"}
		}
		if err := os.MkdirAll(cacheDir, 0o755); err != nil {
			return Clients{}, fmt.Errorf("llm cache dir %s: %w", cacheDir, err)
		}
		c = WithCache(c, cacheDir)
	}
	if cfg.ThinkTags {
		c = WithThinkTags(c)
	}
	meter := WithMeter(c)
	return Clients{Client: meter, Meter: meter, Budget: budget, Pool: pool, Batch: batcher}, nil
}

// newBatcher builds llm.mode batch's client over llm.base_url's Batch API, or over wave
// files for vllm run-batch.
func newBatcher(ctx context.Context, cfg pipeline.LLMConfig, apiKey string, o Options) (*Batcher, error) {
	bc := cfg.Batch
	dir := bc.Dir
	if dir == "" {
		dir = o.BatchDir
	}
	if dir == "" {
		return nil, &pipeline.ConfigError{Key: "llm.batch.dir", Message: "is required with llm.mode batch"}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var be batchBackend
	switch bc.Backend {
	case "files":
		be = &waveFiles{log: log.Info}
	default:
		// An upload of a wave's file can take far longer than one completion.
		oa, err := NewOpenAI(OpenAIOptions{BaseURL: cfg.BaseURL, APIKey: apiKey, Headers: cfg.Headers,
			Timeout: max(cfg.Timeout, 10*time.Minute), HTTPClient: &http.Client{Transport: transport(4)}})
		if err != nil {
			return nil, &pipeline.ConfigError{Key: "llm.base_url", Message: err.Error()}
		}
		be = &openAIBatches{oa: oa, completionWindow: bc.CompletionWindow}
	}
	return NewBatcher(ctx, be, BatchOptions{Dir: dir, Window: bc.Window, MaxLines: bc.MaxLines, MaxBytes: bc.MaxBytes, Poll: bc.Poll,
		MaxRetries: cfg.MaxRetries, Prices: cfg.Prices, PriceFactor: bc.PriceFactor, Logger: log,
		Secrets: secretsOf(apiKey, cfg.BaseURL, cfg.Headers)})
}

// transport keeps a warm connection per request slot: the default transport keeps 2 per
// host, so at high concurrency every request would open a new connection. Its write
// buffer holds a whole request of a few-shot prompt (the bundled hotpotqa request is
// about 10 KB, and grows with each step): with the default 4 KiB a request took a write
// for its head, another for the rest and a 32 KiB copy buffer each time.
func transport(concurrency int) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = max(concurrency, 100)
	tr.MaxIdleConnsPerHost = max(concurrency, 2)
	tr.WriteBufferSize = 32 << 10
	return tr
}

// newPool builds the pool of llm.endpoints (resolved).
func newPool(cfg pipeline.LLMConfig, eps []pipeline.EndpointConfig, getenv func(string) string, log *slog.Logger) (*Pool, error) {
	out := make([]Endpoint, len(eps))
	for i, e := range eps {
		oa, err := NewOpenAI(OpenAIOptions{BaseURL: e.BaseURL, BaseURLKey: fmt.Sprintf("llm.endpoints[%d].base_url", i),
			APIKey: getenv(e.APIKeyEnv), KeyEnv: e.APIKeyEnv, Headers: e.Headers,
			Timeout: cfg.Timeout, HTTPClient: &http.Client{Transport: transport(e.Concurrency)}})
		if err != nil {
			return nil, &pipeline.ConfigError{Key: fmt.Sprintf("llm.endpoints[%d].base_url", i), Message: err.Error()}
		}
		out[i] = Endpoint{Name: oa.baseURL, Client: WithRateLimit(oa, e.RPM, e.TPM), Model: e.Model,
			Concurrency: e.Concurrency, Weight: *e.Weight, Prices: e.Prices}
	}
	return NewPool(out, PoolPolicy{
		Retry:                retry.Policy{MaxRetries: cfg.MaxRetries, Base: cfg.BackoffBase, Max: cfg.BackoffMax, Jitter: retry.FullJitter},
		FailFastUntilSuccess: true,
		StallAfter:           cfg.StallTimeout,
		Logger:               log,
	})
}
