package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/internal/levenshtein"
	"github.com/reactgen/reactgen/pipeline"
)

// Names are the names a config may use for each key that names an implementation: the
// command line's registry lists them, as only it knows what implements each.
type Names struct {
	Policies, Methods, Backends, Rules, Formats, Views []string
}

// Check resolves every name cfg uses against n, and the tokenizers it names (an
// encoding's name; a tokenizer.json is read when its stage starts). An unknown name or
// one named twice is a *pipeline.ConfigError naming the key and the nearest valid name.
func (n Names) Check(cfg *pipeline.Config) error {
	names := []struct {
		key   string
		names []string
		valid []string
	}{
		{"generate.policy", []string{cfg.Generate.Policy}, n.Policies},
		{"generate.method", []string{cfg.Generate.Method}, n.Methods},
		{"env.backend", []string{cfg.Env.Backend}, n.Backends},
		{"filter.rules", cfg.Filter.Rules, n.Rules},
		{"export.formats", cfg.Export.Formats, n.Formats},
		{"export.views", cfg.Export.Views, n.Views},
	}
	for _, n := range names {
		seen := map[string]bool{}
		for _, name := range n.names {
			if !slices.Contains(n.valid, name) {
				return &pipeline.ConfigError{Key: n.key, Message: fmt.Sprintf("%q is not one of %s; did you mean %q?",
					name, strings.Join(n.valid, ", "), nearest(name, n.valid))}
			}
			if seen[name] {
				return &pipeline.ConfigError{Key: n.key, Message: fmt.Sprintf("%q is named twice", name)}
			}
			seen[name] = true
		}
	}
	for _, t := range []struct{ key, name string }{{"export.tokenizer", cfg.Export.Tokenizer}, {"filter.token_counter", cfg.Filter.TokenCounter}} {
		if t.name == "" || bpe.LooksLikePath(t.name) {
			continue // a tokenizer.json is read when its stage starts
		}
		if _, err := bpe.Open(t.name); err != nil {
			return &pipeline.ConfigError{Key: t.key, Message: fmt.Sprintf("%v; did you mean %q?", err, nearest(t.name, bpe.Names))}
		}
	}
	return nil
}

// nearest is the valid name closest to a mistyped one.
func nearest(s string, valid []string) string {
	best, _ := levenshtein.Nearest(s, valid)
	return best
}
