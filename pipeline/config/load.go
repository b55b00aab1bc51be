package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"

	"github.com/reactgen/reactgen/internal/bpe"
	"github.com/reactgen/reactgen/internal/levenshtein"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

// Loaded is an effective configuration and where each key's value came from.
type Loaded struct {
	Config pipeline.Config
	File   string
	Source map[string]string // key -> default, file, env or flag
	Line   map[string]int    // key -> line in File
	// Warnings are what the user should see but that does not stop the command: a
	// REACTGEN_* variable that sets no key.
	Warnings []string
}

// usagef is a problem with the command line or the config: exit code 2.
func usagef(format string, args ...any) error {
	return &pipeline.InputError{Err: fmt.Errorf(format, args...)}
}

// maxConfigBytes bounds a config file: the largest shipped one is 4 KiB.
const maxConfigBytes = 1 << 20

// Source is where a command's config comes from, lowest precedence first: a run's
// recorded config or a YAML file, then REACTGEN_* variables, then --set flags.
type Source struct {
	File     string
	Recorded map[string]any // a run's manifest config (filter and export without --config)
	Sets     []string
	// Existing is set for the stages that work on an existing run (filter, export): the
	// sources generation reads (task file, corpus, model) need not be named.
	Existing bool
	Out      string // --out, which replaces run.out before the config is checked
	// Environ is the process environment (os.Environ), searched for misspelt REACTGEN_*
	// variables; getenv reads the values.
	Environ []string
	// Check resolves every name the config uses (policies, methods, backends, rules,
	// formats, views) against what implements them; the command line's registry. Nil
	// checks none.
	Check func(*pipeline.Config) error
}

// Load merges defaults, the recorded config or YAML file, REACTGEN_* environment
// variables and --set flags, in that order, decodes them strictly into a pipeline.Config,
// validates it and resolves every name in it with src.Check.
func Load(src Source, getenv func(string) string) (*Loaded, error) {
	file, sets := src.File, src.Sets
	keys := configKeys()
	known := map[string]keyInfo{}
	for _, k := range keys {
		known[k.Key] = k
	}
	v := viper.New()
	for _, k := range keys {
		v.SetDefault(k.Key, k.Default)
	}
	ld := &Loaded{File: file, Source: map[string]string{}, Line: map[string]int{}}
	if file != "" {
		if err := setFile(v, file, keys, known, ld); err != nil {
			return nil, err
		}
	}
	if src.Recorded != nil {
		if err := setRecorded(v, src.Recorded, known, ld); err != nil {
			return nil, err
		}
	}
	if err := setEnv(v, keys, getenv, ld); err != nil {
		return nil, err
	}
	if err := setSets(v, sets, keys, known, ld); err != nil {
		return nil, err
	}
	cfg := pipeline.Default()
	err := v.Unmarshal(&cfg, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.WeaklyTypedInput = false
		dc.ZeroFields = true
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
		)
	})
	if err != nil {
		return nil, usagef("%s", decodeMessage(err, ld.where, known))
	}
	if src.Out != "" {
		cfg.Run.Out = src.Out
	}
	if cfg.LLM.BaseURL == "" {
		cfg.LLM.BaseURL = getenv("OPENAI_BASE_URL")
	}
	if cfg.LLM.BaseURL == "" {
		cfg.LLM.BaseURL = "https://api.openai.com/v1"
	}
	checks := []func(*pipeline.Config) error{(*pipeline.Config).Validate, (*pipeline.Config).ValidateSources}
	if src.Existing {
		checks = checks[:1]
	}
	if src.Check != nil {
		checks = append(checks, src.Check)
	}
	for _, check := range checks {
		if err := check(&cfg); err != nil {
			var ce *pipeline.ConfigError
			if errors.As(err, &ce) {
				return nil, usagef("%s%s", err, ld.where(ce.Key))
			}
			return nil, usagef("%w", err)
		}
	}
	ld.Config = cfg
	ld.Warnings = unknownEnv(src.Environ, keys)
	return ld, nil
}

// where says where key was set, for an error message: the file and line, the
// environment variable, --set or the run's manifest; "" for a default.
func (ld *Loaded) where(key string) string {
	// A key inside an open map or a list (llm.headers.api-key,
	// llm.endpoints[0].headers.x) was set with the map or the list.
	for ld.Source[key] == "" && strings.LastIndexAny(key, ".[") > 0 {
		key = key[:strings.LastIndexAny(key, ".[")]
	}
	switch ld.Source[key] {
	case "file":
		return fmt.Sprintf(" (%s line %d)", ld.File, ld.Line[key])
	case "env":
		return fmt.Sprintf(" (environment variable %s)", envName(key))
	case "flag":
		return " (--set)"
	case "run":
		return " (the run's " + pipeline.ManifestFile + ")"
	}
	return ""
}

// setFile sets the keys of the YAML file, each checked against known; relative paths
// are resolved against the file's folder.
func setFile(v *viper.Viper, file string, keys []keyInfo, known map[string]keyInfo, ld *Loaded) error {
	b, err := safefile.ReadFile(file, maxConfigBytes)
	if err != nil {
		return usagef("read config: %w", err)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return usagef("config %s is not valid YAML: %w%s", file, err, yamlHint(err))
	}
	// A second document ("---" and more keys) would be silently ignored.
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return usagef("config %s is not valid YAML: %w%s", file, err, yamlHint(err))
		}
		if len(next.Content) == 0 || next.Content[0].Kind == yaml.ScalarNode && next.Content[0].Tag == "!!null" {
			continue // a "---" with nothing after it
		}
		line := next.Content[0].Line
		return usagef("config %s line %d: a second YAML document (after a \"---\" line) holds keys reactgen would "+
			"ignore; it reads one document: remove the \"---\" and merge the keys into the first", file, line)
	}
	values := map[string]any{}
	if err := flattenYAML(&doc, "", known, values, ld.Line); err != nil {
		return usagef("config %s: %w", file, err)
	}
	for key, val := range values {
		if _, ok := known[key]; !ok {
			return usagef("config %s line %d: unknown key %q%s", file, ld.Line[key], key, suggest(key, keys))
		}
		if err := checkValue(known[key], val, ""); err != nil {
			return usagef("config %s line %d: key %s: %w", file, ld.Line[key], key, err)
		}
		if s, ok := val.(string); pathKeys[key] || tokenizerKeys[key] && ok && bpe.LooksLikePath(s) {
			val = resolvePaths(val, filepath.Dir(file))
		}
		v.Set(key, val)
		ld.Source[key] = "file"
	}
	return nil
}

// setRecorded sets the keys of a run's recorded config.
func setRecorded(v *viper.Viper, recorded map[string]any, known map[string]keyInfo, ld *Loaded) error {
	values := map[string]any{}
	flattenRecorded(recorded, "", known, values)
	for key, val := range values {
		if _, ok := known[key]; !ok {
			return usagef("the run's %s records key %q, which this reactgen does not know; pass --config", pipeline.ManifestFile, key)
		}
		v.Set(key, val)
		ld.Source[key] = "run"
	}
	return nil
}

// setEnv sets the keys a REACTGEN_* variable names.
func setEnv(v *viper.Viper, keys []keyInfo, getenv func(string) string, ld *Loaded) error {
	for _, k := range keys {
		if val := getenv(envName(k.Key)); val != "" && !k.Open {
			parsed, err := parseScalar(val)
			if err == nil {
				err = checkValue(k, parsed, fmt.Sprintf("%s='\"%s\"'", envName(k.Key), val))
			}
			if err != nil {
				return usagef("environment variable %s (%s): %w", envName(k.Key), k.Key, err)
			}
			v.Set(k.Key, parsed)
			ld.Source[k.Key] = "env"
		}
	}
	return nil
}

// setSets sets the keys of the --set flags; a key inside an open map is allowed.
func setSets(v *viper.Viper, sets []string, keys []keyInfo, known map[string]keyInfo, ld *Loaded) error {
	for _, s := range sets {
		key, val, ok := strings.Cut(s, "=")
		if !ok {
			return usagef("--set %q: want section.key=value", s)
		}
		key = strings.ToLower(strings.TrimSpace(key))
		info, known := known[key]
		if !known {
			if open := openParent(key, keys); open != "" {
				info = keyInfo{Key: key}
			} else {
				return usagef("--set %s: unknown key%s", key, suggest(key, keys))
			}
		}
		parsed, err := parseScalar(val)
		if err == nil && info.Type != "" {
			err = checkValue(info, parsed, fmt.Sprintf("--set '%s=\"%s\"'", key, val))
		}
		if err != nil {
			return usagef("--set %s: %w", key, err)
		}
		v.Set(key, parsed)
		ld.Source[key] = "flag"
	}
	return nil
}

// envName is the environment variable that overrides a key.
func envName(key string) string {
	return "REACTGEN_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// parseScalar reads a value from an environment variable or --set as YAML, so that
// numbers, booleans, durations and lists ([a, b]) take their types.
func parseScalar(s string) (any, error) {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return s, nil
	}
	if v == nil {
		return "", nil
	}
	return v, nil
}

func openParent(key string, keys []keyInfo) string {
	for _, k := range keys {
		if k.Open && strings.HasPrefix(key, k.Key+".") {
			return k.Key
		}
	}
	return ""
}

var quotedKey = regexp.MustCompile(`'([a-z_]+(?:\.[a-z_0-9\-]+)*)'`)

// decodeMessage turns mapstructure's error into one line per key naming where it was set.
func decodeMessage(err error, where func(string) string, known map[string]keyInfo) string {
	msg := err.Error()
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "* "))
		if l == "" || strings.HasPrefix(l, "decoding failed") {
			continue
		}
		key := ""
		if m := quotedKey.FindStringSubmatch(l); m != nil {
			key = m[1]
		}
		if info, ok := known[key]; ok {
			lines = append(lines, fmt.Sprintf("config key %s%s: wrong type, want %s: %s", key, where(key), info.Type, l))
		} else {
			lines = append(lines, "config: "+l)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// suggest names the nearest valid key, if one is near enough. A key is compared with
// the keys of its own section by the whole name, and with every key by its last part
// alone, so that a key put in the wrong section (generate.temprature, llm.temperature)
// finds its home; on a tie, its own section wins (export.format, export.formats).
func suggest(key string, keys []keyInfo) string {
	section, leaf, _ := strings.Cut(key, ".")
	best, bestD := "", 1<<30
	for _, k := range keys {
		ksec, kleaf, _ := strings.Cut(k.Key, ".")
		d := levenshtein.Distance(key, k.Key)
		if ksec != section {
			// Another section: the leaf alone, one edit more than the same section.
			d = min(d, levenshtein.Distance(leaf, kleaf)+2)
		}
		if d < bestD {
			best, bestD = k.Key, d
		}
	}
	if best != "" && bestD <= max(3, len(key)/3) {
		return fmt.Sprintf("; did you mean %s?", best)
	}
	return "; run `reactgen config keys` for the list"
}

// checkValue checks a value read from a file, an environment variable or --set against
// the type of its key, for what the decoder would get wrong: an integer too large for
// one (it would wrap to a negative number), a fraction given to an integer key (it
// would be cut), a number that is not finite, and a mapping given to a string because
// an unquoted value held ": ". quoted, when set, is the value written with quotes, for
// the hint.
func checkValue(info keyInfo, val any, quoted string) error {
	switch info.Type {
	case "integer":
		switch x := val.(type) {
		case uint64:
			if x > math.MaxInt64 {
				return fmt.Errorf("%d is too large for an integer (at most %d)", x, int64(math.MaxInt64))
			}
		case float64:
			switch {
			case math.IsNaN(x) || math.IsInf(x, 0):
				return fmt.Errorf("%v is not an integer", x)
			case x >= math.MaxInt64 || x < math.MinInt64:
				return fmt.Errorf("%v is too large for an integer (at most %d)", x, int64(math.MaxInt64))
			case x != math.Trunc(x):
				return fmt.Errorf("%v is not an integer", x)
			}
		}
	case "number":
		if x, ok := val.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return fmt.Errorf("%v is not a finite number", x)
		}
		if x, ok := val.(uint64); ok && x > math.MaxInt64 {
			return fmt.Errorf("%d is too large", x)
		}
	case "duration":
		// A bare number decodes as nanoseconds: llm.timeout: 60 would be 60 ns.
		switch x := val.(type) {
		case int, int64, uint64, float64:
			return fmt.Errorf("%[1]v has no unit: a duration needs one, e.g. %[1]vs, %[1]vm or %[1]vms (alone, %[1]v would be read as nanoseconds)", x)
		}
	}
	isMap := func(v any) bool { _, ok := v.(map[string]any); return ok }
	mapped := isMap(val)
	if l, ok := val.([]any); ok && !info.Open {
		for _, e := range l {
			mapped = mapped || isMap(e)
		}
	}
	if mapped && !info.Open && !strings.HasPrefix(info.Type, "list of struct") {
		msg := fmt.Sprintf("want a %s, but the value reads as a YAML mapping: a \": \" in an unquoted value starts one", info.Type)
		if quoted != "" {
			msg += "; quote the value: " + quoted
		}
		return errors.New(msg)
	}
	return nil
}

// yamlHint explains the YAML error a person most often meets: a value holding ": ".
func yamlHint(err error) string {
	if strings.Contains(err.Error(), "mapping values are not allowed") {
		return ` (a value that holds ": " must be quoted, e.g. instruction: "Answer: briefly")`
	}
	return ""
}

// testKnob reports the REACTGEN_* variables that reactgen's tests and benchmarks read
// (docs/bench-*.md), which set no config key.
func testKnob(name string) bool {
	return strings.HasPrefix(name, "REACTGEN_BENCH_") || name == "REACTGEN_KILL_SEED"
}

// unknownEnv names the REACTGEN_* variables of environ that set no config key, each with
// the nearest key, so that a misspelt one does not go unnoticed.
func unknownEnv(environ []string, keys []keyInfo) []string {
	valid := map[string]bool{}
	for _, k := range keys {
		valid[envName(k.Key)] = true
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "REACTGEN_") || valid[name] || testKnob(name) {
			continue
		}
		// REACTGEN_LLM_MODLE is llm.modle: the section is the first word.
		guess := strings.ToLower(strings.TrimPrefix(name, "REACTGEN_"))
		guess = strings.Replace(guess, "_", ".", 1)
		hint := suggest(guess, keys)
		if k, ok := strings.CutPrefix(hint, "; did you mean "); ok {
			k = strings.TrimSuffix(k, "?")
			hint = fmt.Sprintf("; did you mean %s (%s)?", envName(k), k)
		}
		out = append(out, fmt.Sprintf("environment variable %s sets no config key and is ignored%s", name, hint))
	}
	sort.Strings(out)
	return out
}
