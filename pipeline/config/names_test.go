package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

// TestNamesCheck: a name nothing implements, a name given twice and an unknown tokenizer
// are config errors on their key, the first two naming the nearest valid name.
func TestNamesCheck(t *testing.T) {
	names := Names{Policies: []string{"expert", "llm"}, Methods: []string{"act", "react"}, Backends: []string{"local"},
		Rules: []string{"correct", "dedupe"}, Formats: []string{"openai-chat", "parquet"}, Views: []string{"react"}}
	cases := []struct {
		name    string
		set     func(*pipeline.Config)
		key     string
		message string
	}{
		{"valid", func(*pipeline.Config) {}, "", ""},
		{"policy", func(c *pipeline.Config) { c.Generate.Policy = "expret" }, "generate.policy", `"expret" is not one of expert, llm; did you mean "expert"?`},
		{"rule twice", func(c *pipeline.Config) { c.Filter.Rules = []string{"correct", "dedupe", "correct"} }, "filter.rules", `"correct" is named twice`},
		{"format", func(c *pipeline.Config) { c.Export.Formats = []string{"parket"} }, "export.formats", `did you mean "parquet"?`},
		{"tokenizer", func(c *pipeline.Config) { c.Export.Tokenizer = "o200k_bse" }, "export.tokenizer", `did you mean "o200k_base"?`},
		{"tokenizer file", func(c *pipeline.Config) { c.Filter.TokenCounter = "models/tokenizer.json" }, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pipeline.Default()
			cfg.Generate.Policy, cfg.Generate.Method, cfg.Env.Backend = "llm", "react", "local"
			cfg.Filter.Rules, cfg.Export.Formats, cfg.Export.Views = []string{"correct"}, []string{"openai-chat"}, []string{"react"}
			cfg.Export.Tokenizer, cfg.Filter.TokenCounter = "o200k_base", ""
			tc.set(&cfg)
			err := names.Check(&cfg)
			if tc.key == "" {
				if err != nil {
					t.Fatalf("got %v, want none", err)
				}
				return
			}
			var ce *pipeline.ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(ce.Message, tc.message) {
				t.Errorf("got %v, want a config error on %s with %q", err, tc.key, tc.message)
			}
		})
	}
}
