package config

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// flattenYAML turns a YAML document into dotted keys with their line numbers. Mappings
// below an open key (llm.headers, llm.prices) stay whole.
func flattenYAML(n *yaml.Node, prefix string, known map[string]keyInfo, out map[string]any, lines map[string]int) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return flattenYAML(n.Content[0], prefix, known, out, lines)
	}
	if n.Kind != yaml.MappingNode {
		if prefix == "" {
			return fmt.Errorf("line %d: want a mapping of sections (task:, llm:, ...)", n.Line)
		}
		return nil
	}
	first := map[string]int{} // key -> the line it was first set on, in this mapping
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := strings.ToLower(k.Value)
		if prefix != "" {
			key = prefix + "." + key
		}
		// YAML keeps the last of two equal keys; a config that names a section or key
		// twice would lose the first silently.
		if line, dup := first[key]; dup {
			what := "key " + key
			if val.Kind == yaml.MappingNode {
				what = "section " + key + ":"
			}
			return fmt.Errorf("line %d: %s is given twice (first on line %d); merge them into one", k.Line, what, line)
		}
		first[key] = k.Line
		info, isKnown := known[key]
		if val.Kind == yaml.MappingNode && !(isKnown && info.Open) {
			if isKnown {
				return fmt.Errorf("line %d: key %s takes a %s, not a mapping", val.Line, key, info.Type)
			}
			if err := flattenYAML(val, key, known, out, lines); err != nil {
				return err
			}
			continue
		}
		var decoded any
		if err := val.Decode(&decoded); err != nil {
			return fmt.Errorf("line %d: key %s: %w", val.Line, key, err)
		}
		out[key] = decoded
		lines[key] = k.Line
	}
	return nil
}

// flattenRecorded turns a recorded config (pipeline.Config.Redacted, read back from
// JSON) into dotted keys. Open keys (llm.prices) stay whole; llm.headers is left out, as
// its credentials were redacted (the stages that reuse a recorded config send no
// request). JSON numbers come back as float64: integer keys get their integers back.
func flattenRecorded(m map[string]any, prefix string, known map[string]keyInfo, out map[string]any) {
	for k, val := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		info, isKnown := known[key]
		if sub, ok := val.(map[string]any); ok && !isKnown {
			flattenRecorded(sub, key, known, out)
			continue
		}
		if key == "llm.headers" {
			continue
		}
		if f, ok := val.(float64); ok && info.Type == "integer" && f == math.Trunc(f) {
			val = int64(f)
		}
		out[key] = val
	}
}

func resolvePaths(val any, base string) any {
	resolve := func(s string) string {
		if s == "" || filepath.IsAbs(s) {
			return s
		}
		return filepath.Join(base, s)
	}
	switch x := val.(type) {
	case string:
		return resolve(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			if s, ok := e.(string); ok {
				out[i] = resolve(s)
			} else {
				out[i] = e
			}
		}
		return out
	}
	return val
}
