package pipeline

import (
	"reflect"
	"regexp"
	"strings"
	"time"
)

// Redacted is the config as a map keyed like the config file, for `reactgen config show`
// and the manifest. It holds no secret: API keys never enter the Config, only the name of
// their variable, and the values of headers that carry credentials are hidden.
func (c Config) Redacted() map[string]any {
	out := map[string]any{}
	var walk func(prefix string, v reflect.Value, dst map[string]any)
	walk = func(prefix string, v reflect.Value, dst map[string]any) {
		t := v.Type()
		for i := range t.NumField() {
			tag := t.Field(i).Tag.Get("mapstructure")
			fv := v.Field(i)
			if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(time.Duration(0)) {
				sub := map[string]any{}
				walk(tag, fv, sub)
				dst[tag] = sub
				continue
			}
			val := fv.Interface()
			if d, ok := val.(time.Duration); ok {
				val = d.String()
			}
			if prefix == "llm" && tag == "headers" {
				val = redactHeaders(c.LLM.Headers)
			}
			if prefix == "llm" && tag == "endpoints" {
				eps := make([]map[string]any, len(c.LLM.Endpoints))
				for j := range c.LLM.Endpoints {
					e := c.LLM.Endpoints[j]
					e.Headers = redactHeaders(e.Headers)
					eps[j] = map[string]any{}
					walk("", reflect.ValueOf(e), eps[j])
				}
				val = eps
			}
			dst[tag] = val
		}
	}
	walk("", reflect.ValueOf(c), out)
	return out
}

// RedactedValue is the value that stands for a hidden header value.
const RedactedValue = "[redacted]"

// redactHeaders hides the values of headers that carry credentials.
func redactHeaders(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		lk := strings.ToLower(k)
		if strings.Contains(lk, "auth") || strings.Contains(lk, "key") || strings.Contains(lk, "token") || strings.Contains(lk, "secret") {
			v = RedactedValue
		}
		out[k] = v
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
