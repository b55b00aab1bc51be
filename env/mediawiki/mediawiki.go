// Package mediawiki is an env.Corpus over any MediaWiki Action API endpoint (Wikipedia's
// https://en.wikipedia.org/w/api.php, or a mirror). It consumes page titles and search
// queries and produces env.Pages: a page's plain-text intro (prop=extracts) split into
// sentences with package sentence, flagged as a disambiguation page from its pageprops,
// and search results (list=search) for Similar. Requests carry a descriptive User-Agent,
// are rate limited, retried with exponential backoff on 429, 5xx and transport errors
// (honouring Retry-After), and answered from an on-disk cache keyed by URL when one is
// configured, so that a re-run is reproducible offline. IdentityFor and OpenFor are a
// config's MediaWiki backend (env.backend: mediawiki) as the command line's registry
// hands it to generate and serve-env.
package mediawiki

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/atomicfile"
	"github.com/reactgen/reactgen/internal/redact"
	"github.com/reactgen/reactgen/internal/retry"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/internal/sentence"
)

// DefaultUserAgent is sent when Options.UserAgent is empty. Wikimedia asks every client
// to identify itself with a contact.
const DefaultUserAgent = "reactgen/0 (https://github.com/reactgen/reactgen)"

// maxBody bounds a response body (decompressed), so a broken server cannot exhaust
// memory: the longest Wikipedia article is about 1.5 MB of wikitext.
const maxBody = 16 << 20

// Options configure a Client.
type Options struct {
	Endpoint          string        // the api.php URL
	UserAgent         string        // empty means DefaultUserAgent
	RequestsPerSecond float64       // request rate limit; 0 or less means unlimited
	Timeout           time.Duration // per request attempt; 0 means 20s
	MaxRetries        int           // further attempts after a retryable failure; negative means 0
	CacheDir          string        // response cache; empty means no cache
	HTTPClient        *http.Client  // nil means a fresh http.Client
	Backoff           time.Duration // first retry delay, doubling each time (capped at 30s) plus up to 25% jitter; a longer Retry-After wins; 0 means 500ms
}

// Client is an env.Corpus over a MediaWiki API. It is safe for concurrent use.
type Client struct {
	endpoint string
	opts     Options
	http     *http.Client
	limiter  *rate.Limiter
	retry    retry.Policy
}

var _ env.Corpus = (*Client)(nil)

// APIError is a failed request: an HTTP status other than 200 (Status set) or an error
// object in the API's answer (Code and Info set).
type APIError struct {
	Status int
	Code   string
	Info   string
	URL    string
}

func (e *APIError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("mediawiki %s: %s: %s", e.URL, e.Code, e.Info)
	}
	return fmt.Sprintf("mediawiki %s: HTTP %d", e.URL, e.Status)
}

// New returns a Client for opts.Endpoint.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(opts.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mediawiki endpoint %q: want an http(s) URL of api.php", opts.Endpoint)
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 20 * time.Second
	}
	if opts.MaxRetries < 0 {
		opts.MaxRetries = 0
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 500 * time.Millisecond
	}
	if opts.CacheDir != "" {
		if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("mediawiki cache dir: %w", err)
		}
	}
	limit := rate.Inf
	if opts.RequestsPerSecond > 0 {
		limit = rate.Limit(opts.RequestsPerSecond)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{endpoint: opts.Endpoint, opts: opts, http: hc, limiter: rate.NewLimiter(limit, 1),
		retry: retry.Policy{MaxRetries: opts.MaxRetries, Base: opts.Backoff, Max: 30 * time.Second, Jitter: retry.QuarterAdded}}, nil
}

// queryResponse is the part of an action=query answer (formatversion=2) the client reads.
type queryResponse struct {
	Error *struct {
		Code string `json:"code"`
		Info string `json:"info"`
	} `json:"error"`
	Query struct {
		Pages []struct {
			Title     string         `json:"title"`
			Missing   bool           `json:"missing"`
			Invalid   bool           `json:"invalid"`
			Extract   string         `json:"extract"`
			PageProps map[string]any `json:"pageprops"`
		} `json:"pages"`
		Search []struct {
			Title string `json:"title"`
		} `json:"search"`
	} `json:"query"`
}

// Page fetches the intro of the page a Search for title finds under m, following
// redirects. MediaWiki matches titles exactly but for the first letter, so when that
// page is missing the client asks for the titles a search for it finds and, among those
// that normalise alike (env.NormalizeTitle), fetches the one m.Pick chooses: a case
// variant, or (paper) the title inside a pair of double quotes, or (rules) any.
func (c *Client) Page(ctx context.Context, title string, m env.Match) (env.Page, bool, error) {
	if err := ctx.Err(); err != nil {
		return env.Page{}, false, err
	}
	t := env.TitleKey(title)
	if m == env.MatchRules {
		t = cleanTitle(title)
	}
	if t == "" || strings.ContainsAny(t, "|[]{}<>#") {
		return env.Page{}, false, nil
	}
	p, ok, err := c.fetchPage(ctx, t)
	if ok || err != nil {
		return p, ok, err
	}
	titles, err := c.Similar(ctx, t, env.SimilarCount)
	if err != nil {
		return env.Page{}, false, err
	}
	key := env.NormalizeTitle(t)
	var alike []string
	for _, s := range titles {
		if env.NormalizeTitle(s) == key && s != t {
			alike = append(alike, s)
		}
	}
	if i, ok := m.Pick(title, alike); ok {
		return c.fetchPage(ctx, alike[i])
	}
	return env.Page{}, false, nil
}

func (c *Client) fetchPage(ctx context.Context, title string) (env.Page, bool, error) {
	q := url.Values{
		"action":        {"query"},
		"prop":          {"extracts|pageprops"},
		"ppprop":        {"disambiguation"},
		"explaintext":   {"1"},
		"exintro":       {"1"},
		"redirects":     {"1"},
		"titles":        {title},
		"format":        {"json"},
		"formatversion": {"2"},
	}
	var r queryResponse
	if err := c.get(ctx, q, &r); err != nil {
		return env.Page{}, false, fmt.Errorf("page %q: %w", title, err)
	}
	for _, p := range r.Query.Pages {
		if p.Missing || p.Invalid || p.Title == "" {
			continue
		}
		_, disambig := p.PageProps["disambiguation"]
		return env.Page{Title: p.Title, Sentences: sentence.Split(p.Extract), Text: p.Extract, Disambiguation: disambig}, true, nil
	}
	return env.Page{}, false, nil
}

// Similar returns the titles of up to k full-text search results for query, best first.
func (c *Client) Similar(ctx context.Context, query string, k int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	query = strings.TrimSpace(query)
	if k <= 0 || query == "" {
		return nil, nil
	}
	q := url.Values{
		"action":        {"query"},
		"list":          {"search"},
		"srsearch":      {query},
		"srlimit":       {strconv.Itoa(k)},
		"srnamespace":   {"0"},
		"srprop":        {""},
		"format":        {"json"},
		"formatversion": {"2"},
	}
	var r queryResponse
	if err := c.get(ctx, q, &r); err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	var out []string
	for _, s := range r.Query.Search {
		if len(out) < k {
			out = append(out, s.Title)
		}
	}
	return out, nil
}

// get fetches the API answer to q into v, from the cache when it is there. Only answers
// that decode and carry no API error are cached.
func (c *Client) get(ctx context.Context, q url.Values, v *queryResponse) error {
	u := c.endpoint
	if strings.Contains(u, "?") {
		u += "&" + q.Encode()
	} else {
		u += "?" + q.Encode()
	}
	path := c.cachePath(u)
	if path != "" {
		if body, err := safefile.ReadIn(filepath.Dir(path), filepath.Base(path), maxBody); err == nil {
			if err := json.Unmarshal(body, v); err == nil {
				return nil
			}
		}
	}
	body, err := c.fetch(ctx, u)
	if err != nil {
		return err
	}
	shown := redact.URL(u)
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode %s: %w", shown, err)
	}
	if v.Error != nil {
		return &APIError{Status: http.StatusOK, Code: v.Error.Code, Info: v.Error.Info, URL: shown}
	}
	if path != "" {
		if err := atomicfile.WriteFile(path, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
			return fmt.Errorf("cache %s: %w", shown, err)
		}
	}
	return nil
}

// cachePath is where the answer to u is cached: CacheDir/ab/abcdef....json, named by the
// SHA-256 of the URL.
func (c *Client) cachePath(u string) string {
	if c.opts.CacheDir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(redact.URL(u))) // a changed password keeps the cache
	h := hex.EncodeToString(sum[:])
	return filepath.Join(c.opts.CacheDir, h[:2], h+".json")
}

// fetch GETs u, retrying 429, 5xx and transport errors with package retry's loop.
func (c *Client) fetch(ctx context.Context, u string) ([]byte, error) {
	var body []byte
	_, err := retry.Do(ctx, c.retry, func(ctx context.Context) error {
		if err := c.limiter.Wait(ctx); err != nil {
			return err
		}
		var err error
		body, err = c.once(ctx, u)
		return err
	}, classify)
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	return body, err
}

// retryable is a failed attempt worth another: a 429, a 5xx or a transport error, with
// the server's Retry-After.
type retryable struct {
	err   error
	after time.Duration
}

func (e *retryable) Error() string { return e.err.Error() }
func (e *retryable) Unwrap() error { return e.err }

func classify(err error) (retry.Verdict, time.Duration) {
	var r *retryable
	if errors.As(err, &r) {
		return retry.Again, r.after
	}
	return retry.Permanent, 0
}

// once makes one attempt. A failure worth retrying comes back as *retryable.
func (c *Client) once(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &retryable{err: redacted(err)}
	}
	defer resp.Body.Close()
	body, err := safefile.ReadBounded(resp.Body, "MediaWiki response from "+redact.URL(u), maxBody)
	// The endpoint's credentials, which a server may echo, never reach the cache.
	if secrets := redact.URLSecrets(c.endpoint); len(secrets) > 0 && err == nil {
		body = []byte(redact.Scrub(string(body), secrets))
	}
	if resp.StatusCode == http.StatusOK {
		var tl *safefile.TooLargeError
		if errors.As(err, &tl) {
			return nil, err // a page that large is not one; asking again would not help
		}
		if err != nil {
			return nil, &retryable{err: err}
		}
		return body, nil
	}
	apiErr := &APIError{Status: resp.StatusCode, URL: redact.URL(u)}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return nil, &retryable{err: apiErr, after: retry.ParseAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	return nil, apiErr
}

// redacted is err with the user information of the endpoint's URL hidden in its text
// (net/http hides a password, not a user name that is a token), keeping the chain.
func redacted(err error) error {
	if msg := redact.URL(err.Error()); msg != err.Error() {
		return &redactedError{msg: msg, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// cleanTitle turns an entity into the title MediaWiki is asked for: the folding of
// env.NormalizeTitle without the lower-casing, which is left to the server.
func cleanTitle(s string) string { return env.CleanTitle(s) }
