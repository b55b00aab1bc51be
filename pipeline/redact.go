package pipeline

import (
	"encoding/base64"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"time"
)

// Redacted is the config as a map keyed like the config file, for `reactgen config show`
// and the manifest. It holds no secret: API keys never enter the Config, only the name of
// their variable; every header value is hidden, and so is the user information of every
// URL (llm.base_url, llm.endpoints, env.mediawiki_url).
func (c Config) Redacted() map[string]any {
	return plain("", reflect.ValueOf(c)).(map[string]any)
}

// plain turns a config value into what its YAML holds: structs become maps keyed by
// their mapstructure tags, at any depth (so llm.prices.<model>.cached_prompt reads back
// as it was written), durations their text, URLs lose their user information, and
// header values are hidden wherever a headers map sits (llm.headers, each endpoint's).
func plain(key string, v reflect.Value) any {
	if v.Type() == reflect.TypeOf(time.Duration(0)) {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Struct:
		out := map[string]any{}
		t := v.Type()
		for i := range t.NumField() {
			tag := t.Field(i).Tag.Get("mapstructure")
			out[tag] = plain(tag, v.Field(i))
		}
		return out
	case reflect.Map:
		if h, ok := v.Interface().(map[string]string); ok && key == "headers" {
			return redactHeaders(h)
		}
		if v.Type().Elem().Kind() != reflect.Struct {
			return plainScalars(v)
		}
		out := make(map[string]any, v.Len())
		for _, k := range v.MapKeys() {
			out[k.String()] = plain("", v.MapIndex(k))
		}
		return out
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return plainScalars(v)
		}
		out := make([]map[string]any, v.Len())
		for i := range v.Len() {
			out[i] = plain("", v.Index(i)).(map[string]any)
		}
		return out
	case reflect.String:
		return RedactURL(v.String()) // llm.base_url, env.mediawiki_url: no user:password@
	}
	return v.Interface()
}

// plainScalars is a map or slice of plain values as it is, its strings' URLs redacted.
func plainScalars(v reflect.Value) any {
	switch x := v.Interface().(type) {
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = RedactURL(s)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, s := range x {
			out[k] = RedactURL(s)
		}
		return out
	}
	return v.Interface()
}

// RedactedValue is the value that stands for a hidden header value.
const RedactedValue = "[redacted]"

// redactHeaders hides the value of every configured header: Authorization and API keys,
// and just as well Cookie, a proxy's credentials or a tenant id, which no name tells
// apart from a harmless one.
func redactHeaders(h map[string]string) map[string]string {
	out := map[string]string{}
	for k := range h {
		out[k] = RedactedValue
	}
	return out
}

// RedactURL hides the user information of every URL in s: the password
// ("https://user:secret@host" becomes "https://user:[redacted]@host") or a user name
// given alone, which is often a token ("https://[redacted]@host"). The rest of s is
// kept as it was, so it also cleans an error message or a log line that quotes a URL.
func RedactURL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userinfo.ReplaceAllStringFunc(s, func(m string) string {
		scheme, info, _ := strings.Cut(strings.TrimSuffix(m, "@"), "://")
		if name, _, pass := strings.Cut(info, ":"); pass {
			return scheme + "://" + name + ":" + RedactedValue + "@"
		}
		return scheme + "://" + RedactedValue + "@"
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
// request headers may quote them so, and Basic credentials are), with RedactedValue.
// Empty secrets are ignored.
func Scrub(s string, secrets []string) string {
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		for _, v := range []string{secret, "Bearer " + secret} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
				s = strings.ReplaceAll(s, enc.EncodeToString([]byte(v)), RedactedValue)
			}
		}
		s = strings.ReplaceAll(s, secret, RedactedValue)
	}
	return s
}
