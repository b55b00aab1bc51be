// Package openaiclient builds the one go-openai client through which reactgen speaks
// OpenAI's API: the model adapter (internal/llm) and the fine-tuning client (finetune)
// both construct theirs here. It consumes a base URL, a key, extra headers and an HTTP
// client, and produces a go-openai client whose requests stay on the base URL's origin
// (a redirect to another host is refused, package origin), whose headers were checked
// before any request is built from them, and whose transport is the caller's, wrapped
// around the pinned one, so that the caller adds the headers and what else it needs.
//
// Imports: go-openai, internal/origin and pipeline (to redact a URL in a message); never
// a stage.
package openaiclient

import (
	"fmt"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/reactgen/reactgen/internal/origin"
	"github.com/reactgen/reactgen/internal/redact"
)

// DefaultBaseURL is OpenAI's API root, the base URL when none is given.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options say where the client sends and what it adds.
type Options struct {
	// Name is what the client is for ("llm", "fine-tuning"): the start of its errors.
	Name string
	// BaseURL is the API root, ending in /v1; empty means DefaultBaseURL. A trailing
	// slash is dropped.
	BaseURL string
	// BaseURLKey is the config key or flag that set BaseURL, named when a server
	// redirects to another host.
	BaseURLKey string
	APIKey     string            // sent as "Authorization: Bearer ..."; may be empty for local servers
	Headers    map[string]string // extra headers for every request; checked here
	// HTTPClient is copied and its copy pinned to BaseURL's origin (the value is not
	// changed); nil means a client of its own.
	HTTPClient *http.Client
	// Check, when set, refuses what else the caller does not accept (an endpoint given
	// for the root, a negative timeout) once the scheme is known to be http or https,
	// before anything is built.
	Check func(base string) error
	// Transport is the client's transport: it wraps the pinned one and must add the
	// checked headers to every request.
	Transport func(pinned http.RoundTripper, headers http.Header) http.RoundTripper
}

// New builds the client. It sends nothing. It returns the go-openai client, its HTTP
// client (for the calls go-openai lacks, through the same transport) and the base URL
// as used (trimmed, defaulted).
func New(o Options) (*openai.Client, *http.Client, string, error) {
	base := strings.TrimRight(o.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, nil, "", fmt.Errorf("%s base url %q: must start with http:// or https://", o.Name, redact.URL(base))
	}
	if o.Check != nil {
		if err := o.Check(base); err != nil {
			return nil, nil, "", err
		}
	}
	// The key and the headers go to base's host only: a redirect elsewhere is refused.
	hc, err := origin.Pin(o.HTTPClient, base, o.BaseURLKey)
	if err != nil {
		return nil, nil, "", err
	}
	headers := make(http.Header, len(o.Headers))
	for k, v := range o.Headers {
		if err := origin.CheckHeader(k, v); err != nil {
			return nil, nil, "", fmt.Errorf("%s headers: %w", o.Name, err)
		}
		headers.Set(k, v)
	}
	hc.Transport = o.Transport(hc.Transport, headers)
	cfg := openai.DefaultConfig(o.APIKey)
	cfg.BaseURL = base
	cfg.HTTPClient = hc
	return openai.NewClientWithConfig(cfg), hc, base, nil
}
