package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/reactgen/reactgen/pipeline"
)

// BreakerRequests is how many failing first requests make New's client unusable.
const BreakerRequests = 3

// New builds the run's client from cfg: the OpenAI-compatible adapter at cfg.BaseURL
// wrapped, from the outside in, as
//
//	meter → cache → budget → breaker → choices → rate limit → concurrency → retry → OpenAI
//
// The cache sits outside everything that costs: a hit skips the budget, the breaker,
// the rate limits and the concurrency slots, and is free. The meter sits outside the
// cache so that its counts include hits (Snapshot().Cached); its Usage counts only what
// was not cached. The budget counts a request once however many retries it took. Retries
// happen inside a concurrency slot and are not rate limited again. Before any request
// has succeeded, refused connections and unknown hosts are not retried, so a wrong URL
// stops the run after BreakerRequests requests; a wrong key (401) or model (404) does too.
// The choices decorator (WithChoices) learns once whether the server honours n and sits
// inside the breaker, so that its verdict never counts as a failing request.
//
// apiKey is the key itself (read by the caller from cfg.APIKeyEnv); it may be empty for
// local servers. cacheDir is the resolved cache directory, used when cfg.Cache is on;
// empty falls back to cfg.CacheDir. The returned Meter and Budgeted are the same values
// that sit inside the Client, for progress lines and the run's manifest.
func New(ctx context.Context, cfg pipeline.LLMConfig, apiKey, cacheDir string) (Client, *Meter, *Budgeted, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	// Keep a warm connection per request slot: the default transport keeps 2 per host,
	// so at high concurrency every request would open a new connection.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = max(cfg.Concurrency, 100)
	tr.MaxIdleConnsPerHost = max(cfg.Concurrency, 2)
	oa, err := NewOpenAI(OpenAIOptions{BaseURL: cfg.BaseURL, APIKey: apiKey, Headers: cfg.Headers, Timeout: cfg.Timeout,
		HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		return nil, nil, nil, err
	}
	var c Client = oa
	c = WithRetry(c, RetryPolicy{
		MaxRetries: cfg.MaxRetries, Base: cfg.BackoffBase, Max: cfg.BackoffMax, Jitter: true,
		FailFastUntilSuccess: true,
	})
	c = WithConcurrency(c, cfg.Concurrency)
	c = WithRateLimit(c, cfg.RPM, cfg.TPM)
	c = WithChoices(c)
	c = WithBreaker(c, BreakerRequests)
	budget := WithBudget(c, Budget{MaxRequests: cfg.MaxRequests, MaxTokens: cfg.MaxTokens, MaxCostUSD: cfg.MaxCostUSD}, cfg.Prices)
	c = budget
	if cfg.Cache {
		if cacheDir == "" {
			cacheDir = cfg.CacheDir
		}
		if cacheDir == "" {
			return nil, nil, nil, errors.New("config key llm.cache_dir: is required when llm.cache is on")
		}
		if err := os.MkdirAll(cacheDir, 0o755); err != nil {
			return nil, nil, nil, fmt.Errorf("llm cache dir %s: %w", cacheDir, err)
		}
		c = WithCache(c, cacheDir)
	}
	meter := WithMeter(c)
	return meter, meter, budget, nil
}
