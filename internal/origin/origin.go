// Package origin keeps an HTTP client's requests, and the credentials and headers they
// carry, on one origin (scheme, host and port): the API root a user configured. It
// consumes a base URL and an *http.Client and produces a copy of the client that refuses
// a redirect to any other origin, and checks header names and values before a request
// is built from them.
//
// A redirect to another host is refused rather than followed without credentials: an
// OpenAI-compatible API never redirects a POST elsewhere, a 307/308 would resend the
// prompt (and, followed without credentials, fail anyway with a 401 that hides where it
// came from), and a user who trusts the new host can name it in the config.
package origin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrRedirect marks a redirect to another origin that was refused. Retrying does not help.
var ErrRedirect = errors.New("redirect to another host refused")

// Of is u's origin: the lower-case scheme and host with the scheme's default port made
// explicit ("https://api.openai.com:443").
func Of(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	scheme := strings.ToLower(u.Scheme)
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}

// Pin returns a copy of hc (nil: a client of its own) whose requests go to base's origin
// only: a redirect elsewhere fails with an error that is ErrRedirect and names both
// hosts and the key to change; a redirect on the same origin is followed (at most 10),
// keeping its headers. key names the config key that sets base, for the message. The
// transport also refuses a request to another origin, whatever built it.
func Pin(hc *http.Client, base, key string) (*http.Client, error) {
	bu, err := url.Parse(base)
	if err != nil || bu.Host == "" {
		return nil, fmt.Errorf("config key %s: %q is not a URL", key, redactURL(base))
	}
	want := Of(bu)
	c := &http.Client{}
	if hc != nil {
		cp := *hc
		c = &cp
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &pinned{base: rt, origin: want, key: key}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		status := 0
		if req.Response != nil {
			status = req.Response.StatusCode
		}
		if got := Of(req.URL); got != want {
			return fmt.Errorf("%w: the server at %s answered %d redirecting to %s; reactgen sends its API key and "+
				"headers only to the host of %s (set %s to the new address if you trust it)",
				ErrRedirect, want, status, redactURL(got+req.URL.Path), key, key)
		}
		if len(via) >= 10 {
			return fmt.Errorf("stopped after %d redirects on %s", len(via), want)
		}
		return nil
	}
	return c, nil
}

// pinned refuses requests to any origin but one.
type pinned struct {
	base   http.RoundTripper
	origin string
	key    string
}

func (p *pinned) RoundTrip(req *http.Request) (*http.Response, error) {
	if got := Of(req.URL); got != p.origin {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("%w: a request to %s, not the host of %s (%s)", ErrRedirect, got, p.key, p.origin)
	}
	return p.base.RoundTrip(req)
}

// CheckHeader reports a header that cannot be sent as configured: an empty or invalid
// name (RFC 9110 token characters only) or a value holding CR, LF, NUL or another
// control character but tab. Such a header would fail every request, or split it.
func CheckHeader(name, value string) error {
	if name == "" {
		return errors.New("empty header name")
	}
	for i := 0; i < len(name); i++ {
		if !tokenChar(name[i]) {
			return fmt.Errorf("header name %q: character %q is not allowed in a header name", name, name[i])
		}
	}
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c == '\r' || c == '\n' {
			return fmt.Errorf("header %s: the value holds a line break (CR or LF), which would split the request", name)
		}
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return fmt.Errorf("header %s: the value holds control character %#02x", name, c)
		}
	}
	return nil
}

// tokenChar reports the characters of an RFC 9110 token.
func tokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// redactURL drops the user information of a URL-looking string.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}
