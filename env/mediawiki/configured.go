package mediawiki

import (
	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/redact"
	"github.com/reactgen/reactgen/pipeline"
)

// IdentityFor is the identity a run pins for the config's MediaWiki (env.backend:
// mediawiki): its endpoint, credentials redacted. It adds no inputs.
func IdentityFor(cfg *pipeline.Config) (string, []pipeline.Input, error) {
	return "mediawiki:" + redact.URL(cfg.Env.MediaWikiURL), nil, nil
}

// OpenFor opens the config's MediaWiki with its rate, timeout, retries and cache
// (env.cache_dir, else the run's wiki-cache); the id is not needed, the func does
// nothing. A bad endpoint is a *pipeline.ConfigError on env.mediawiki_url.
func OpenFor(cfg *pipeline.Config, _ string) (env.Corpus, func(), error) {
	e := cfg.Env
	cache := e.CacheDir
	if cache == "" {
		cache = (pipeline.RunDir{Path: cfg.Run.Out}).File(pipeline.WikiCacheDir)
	}
	c, err := New(Options{Endpoint: e.MediaWikiURL, UserAgent: e.UserAgent,
		RequestsPerSecond: e.RequestsPerSecond, Timeout: e.Timeout, MaxRetries: cfg.LLM.MaxRetries, CacheDir: cache})
	if err != nil {
		return nil, nil, &pipeline.ConfigError{Key: "env.mediawiki_url", Message: err.Error()}
	}
	return c, func() {}, nil
}
