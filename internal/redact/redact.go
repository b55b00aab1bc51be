// Package redact hides secrets in what reactgen writes or prints: the user information of
// URLs, and the API keys, header values and passwords a caller knows, as they are and
// base64-encoded. It imports only the standard library; the model client, the
// environments, the fine-tuning client and pipeline's config use it.
package redact

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"strings"
)

// Value is what stands for a hidden secret.
const Value = "[redacted]"

// URL hides the user information of every URL in s: the password
// ("https://user:secret@host" becomes "https://user:[redacted]@host") or a user name
// given alone, which is often a token ("https://[redacted]@host"). The rest of s is
// kept as it was, so it also cleans an error message or a log line that quotes a URL.
func URL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userinfo.ReplaceAllStringFunc(s, func(m string) string {
		scheme, info, _ := strings.Cut(strings.TrimSuffix(m, "@"), "://")
		if name, _, pass := strings.Cut(info, ":"); pass {
			return scheme + "://" + name + ":" + Value + "@"
		}
		return scheme + "://" + Value + "@"
	})
}

// userinfo matches a URL's scheme and user information up to the "@".
var userinfo = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#@\s"'<>]+@`)

// URLSecrets lists the secrets in a URL's user information: the password and the
// "user:password" pair (sent base64-encoded as Basic credentials), or a user name given
// alone.
func URLSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return nil
	}
	if pass, ok := u.User.Password(); ok {
		return []string{u.User.Username() + ":" + pass, pass}
	}
	return []string{u.User.Username()}
}

// Scrub replaces every secret in s, as is and base64-encoded (a proxy that echoes
// request headers may quote them so, and Basic credentials are), with Value.
// Empty secrets are ignored.
func Scrub(s string, secrets []string) string {
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		for _, v := range []string{secret, "Bearer " + secret} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
				s = strings.ReplaceAll(s, enc.EncodeToString([]byte(v)), Value)
			}
		}
		s = strings.ReplaceAll(s, secret, Value)
	}
	return s
}
