package pipeline

import (
	"reflect"
	"time"

	"github.com/reactgen/reactgen/internal/redact"
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
		return redact.URL(v.String()) // llm.base_url, env.mediawiki_url: no user:password@
	}
	return v.Interface()
}

// plainScalars is a map or slice of plain values as it is, its strings' URLs redacted.
func plainScalars(v reflect.Value) any {
	switch x := v.Interface().(type) {
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = redact.URL(s)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, s := range x {
			out[k] = redact.URL(s)
		}
		return out
	}
	return v.Interface()
}

// redactHeaders hides the value of every configured header: Authorization and API keys,
// and just as well Cookie, a proxy's credentials or a tenant id, which no name tells
// apart from a harmless one.
func redactHeaders(h map[string]string) map[string]string {
	out := map[string]string{}
	for k := range h {
		out[k] = redact.Value
	}
	return out
}
