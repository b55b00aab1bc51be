package pipeline

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/reactgen/reactgen/internal/origin"
)

// ConfigError is a config value that is not allowed. Key is the dotted config key.
type ConfigError struct {
	Key     string
	Message string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config key %s: %s", e.Key, e.Message) }

func oneOf(key, val string, allowed ...string) error {
	if slices.Contains(allowed, val) {
		return nil
	}
	return &ConfigError{Key: key, Message: fmt.Sprintf("%q is not one of %s", val, strings.Join(allowed, ", "))}
}

// Validate checks every value that can be checked without touching the disk. The names
// of implementations (policies, methods, environment backends, filter rules, export
// formats and views) are checked against the registry cmd/reactgen builds.
func (c *Config) Validate() error {
	if err := numbersAndDurations(reflect.ValueOf(*c), ""); err != nil {
		return err
	}
	// In this order: the first failing check names its key.
	for _, check := range []func() error{c.names, c.counts, c.batchMode, c.ranges, c.headers, c.shard, c.endpoints, c.rewardFilter, c.methodSettings, c.outputs} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// names checks the keys that take one of a fixed set of words.
func (c *Config) names() error {
	checks := []error{
		oneOf("task.name", c.Task.Name, TaskHotpotQA, TaskFEVER, TaskALFWorld, TaskWebShop),
		oneOf("task.format", c.Task.Format, "auto", "hotpotqa", "hotpotqa-simple", "fever", "jsonl"),
		oneOf("env.observations", c.Env.Observations, "paper", "rules"),
		oneOf("env.actions", c.Env.Actions, "paper", "lenient"),
		oneOf("generate.format", c.Generate.Format, "completion", "chat", "tools"),
		oneOf("generate.progress", c.Generate.Progress, "auto", "bar", "lines", "off"),
		oneOf("generate.prompting", c.Generate.Prompting, "few-shot", "trained"),
		oneOf("filter.dedupe_policy", c.Filter.DedupePolicy, "first", "shortest", "diverse"),
		oneOf("filter.balance_by", c.Filter.BalanceBy, "label", "type"),
		oneOf("export.compression", c.Export.Compression, "none", "zstd", "gzip"),
		oneOf("export.reasoning", c.Export.Reasoning, "keep", "drop", "inline"),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// counts checks the numbers that must not be negative or must be at least one.
func (c *Config) counts() error {
	nonNeg := []struct {
		key string
		v   float64
	}{
		{"task.limit", float64(c.Task.Limit)}, {"task.offset", float64(c.Task.Offset)},
		{"generate.max_steps", float64(c.Generate.MaxSteps)}, {"generate.num_exemplars", float64(c.Generate.NumExemplars)},
		{"generate.target_correct", float64(c.Generate.TargetCorrect)},
		{"llm.rpm", c.LLM.RPM}, {"llm.tpm", c.LLM.TPM}, {"llm.max_requests", float64(c.LLM.MaxRequests)},
		{"llm.max_tokens", float64(c.LLM.MaxTokens)}, {"llm.max_cost_usd", c.LLM.MaxCostUSD},
		{"llm.max_retries", float64(c.LLM.MaxRetries)}, {"llm.temperature", c.LLM.Temperature},
		{"llm.request_max_tokens", float64(c.LLM.RequestMaxTokens)},
		{"llm.stall_timeout", float64(c.LLM.StallTimeout)},
		{"filter.min_f1", c.Filter.MinF1}, {"filter.min_reward", c.Filter.MinReward}, {"filter.max_steps", float64(c.Filter.MaxSteps)},
		{"filter.max_tokens", float64(c.Filter.MaxTokens)}, {"filter.max_per_question", float64(c.Filter.MaxPerQuestion)},
		{"filter.balance_tolerance", c.Filter.BalanceTolerance},
		{"export.shard_rows", float64(c.Export.ShardRows)}, {"export.max_tokens", float64(c.Export.MaxTokens)}, {"export.shard_bytes", float64(c.Export.ShardBytes)},
		{"env.max_observation_chars", float64(c.Env.MaxObservationChars)},
		{"env.max_consecutive_failures", float64(c.Env.MaxConsecutiveFailures)},
		{"run.fsync_every", float64(c.Run.FsyncEvery)},
	}
	for _, n := range nonNeg {
		if n.v < 0 {
			return &ConfigError{Key: n.key, Message: fmt.Sprintf("must not be negative, got %v", n.v)}
		}
	}
	positive := []struct {
		key string
		v   int
	}{
		{"generate.attempts", c.Generate.Attempts}, {"generate.concurrency", c.Generate.Concurrency},
		{"generate.samples", c.Generate.Samples}, {"llm.concurrency", c.LLM.Concurrency},
		{"env.sentences", c.Env.Sentences}, {"serve.max_sessions", c.Serve.MaxSessions},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return &ConfigError{Key: p.key, Message: fmt.Sprintf("must be at least 1, got %d", p.v)}
		}
	}
	if c.Serve.MaxBodyBytes < 1<<10 {
		return &ConfigError{Key: "serve.max_body_bytes", Message: fmt.Sprintf("must be at least 1024, got %d", c.Serve.MaxBodyBytes)}
	}
	return nil
}

// batchMode checks llm.mode and, in batch mode, the llm.batch settings.
func (c *Config) batchMode() error {
	if err := oneOf("llm.mode", c.LLM.Mode, "online", "batch"); err != nil {
		return err
	}
	if err := oneOf("llm.batch.backend", c.LLM.Batch.Backend, "openai", "files"); err != nil {
		return err
	}
	if c.LLM.Mode == "batch" {
		switch {
		case c.LLM.Batch.MaxLines < 1:
			return &ConfigError{Key: "llm.batch.max_lines", Message: fmt.Sprintf("must be at least 1, got %d", c.LLM.Batch.MaxLines)}
		case c.LLM.Batch.MaxBytes < 1<<20:
			return &ConfigError{Key: "llm.batch.max_bytes", Message: fmt.Sprintf("must be at least 1 MiB, got %d", c.LLM.Batch.MaxBytes)}
		case c.LLM.Batch.Window <= 0:
			return &ConfigError{Key: "llm.batch.window", Message: fmt.Sprintf("must be positive, got %s", c.LLM.Batch.Window)}
		case c.LLM.Batch.Poll <= 0:
			return &ConfigError{Key: "llm.batch.poll", Message: fmt.Sprintf("must be positive, got %s", c.LLM.Batch.Poll)}
		case c.LLM.Batch.PriceFactor < 0:
			return &ConfigError{Key: "llm.batch.price_factor", Message: fmt.Sprintf("must not be negative, got %v", c.LLM.Batch.PriceFactor)}
		case len(c.LLM.Endpoints) > 0:
			return &ConfigError{Key: "llm.mode", Message: "batch mode sends to llm.base_url alone; it does not take llm.endpoints"}
		}
	}
	return nil
}

// shard checks task.shard.
func (c *Config) shard() error {
	if _, err := ParseShard(c.Task.Shard); err != nil {
		return &ConfigError{Key: "task.shard", Message: err.Error()}
	}
	return nil
}

// endpoints checks each of llm.endpoints.
func (c *Config) endpoints() error {
	for i, e := range c.LLM.Endpoints {
		key := fmt.Sprintf("llm.endpoints[%d]", i)
		switch {
		case e.Concurrency < 0:
			return &ConfigError{Key: key + ".concurrency", Message: fmt.Sprintf("must not be negative, got %d", e.Concurrency)}
		case e.RPM < 0:
			return &ConfigError{Key: key + ".rpm", Message: fmt.Sprintf("must not be negative, got %v", e.RPM)}
		case e.TPM < 0:
			return &ConfigError{Key: key + ".tpm", Message: fmt.Sprintf("must not be negative, got %v", e.TPM)}
		case e.Weight != nil && !(*e.Weight >= 0):
			return &ConfigError{Key: key + ".weight", Message: fmt.Sprintf("must not be negative, got %v", *e.Weight)}
		}
	}
	return nil
}

// rewardFilter checks that filter.min_reward keeps episodes the export will write.
func (c *Config) rewardFilter() error {
	if c.Filter.MinReward > 0 && c.Export.CorrectOnly {
		return &ConfigError{Key: "filter.min_reward", Message: "keeps episodes whose reward is under 1, which export.correct_only (true by default) refuses to export; set export.correct_only: false with it"}
	}
	return nil
}

// methodSettings checks the generate settings that only some methods take.
func (c *Config) methodSettings() error {
	if c.Generate.CoTExemplars != "" && !slices.Contains([]string{"cot", "cot-sc", "react-cot-sc", "cot-sc-react"}, c.Generate.Method) {
		return &ConfigError{Key: "generate.cot_exemplars", Message: fmt.Sprintf(
			"method %s sends no CoT prompt; the key serves cot, cot-sc, react-cot-sc and cot-sc-react", c.Generate.Method)}
	}
	if c.Generate.Format == "tools" {
		switch c.Generate.Method {
		case "cot", "cot-sc", "standard":
			return &ConfigError{Key: "generate.format", Message: fmt.Sprintf("tools needs a method that acts (react, act, react-cot-sc, cot-sc-react), not %q; use chat or completion", c.Generate.Method)}
		}
	}
	if c.Generate.Prompting == "trained" {
		switch c.Generate.Method {
		case "react", "act", "standard":
		default:
			return &ConfigError{Key: "generate.method", Message: fmt.Sprintf("%q cannot be prompted in the trained layout: the export renders the views react, act and standard", c.Generate.Method)}
		}
		if err := trainedFormat(c.Generate.Format, c.Generate.TrainedFormat); err != nil {
			return err
		}
	} else if c.Generate.TrainedFormat != "" {
		return &ConfigError{Key: "generate.trained_format", Message: "is only read with generate.prompting trained"}
	}
	return nil
}

// outputs checks where the run writes and what the export writes.
func (c *Config) outputs() error {
	if abs, err := filepath.Abs(c.Run.Out); c.Run.Out == "" || err == nil && abs == string(filepath.Separator) {
		return &ConfigError{Key: "run.out", Message: fmt.Sprintf("%q cannot be a run directory: choose a directory of its own", c.Run.Out)}
	}
	if c.Export.ValidationFraction < 0 || c.Export.ValidationFraction >= 1 {
		return &ConfigError{Key: "export.validation_fraction", Message: fmt.Sprintf("must be in [0, 1), got %v", c.Export.ValidationFraction)}
	}
	if len(c.Export.Formats) == 0 {
		return &ConfigError{Key: "export.formats", Message: "must name at least one format"}
	}
	return nil
}

// ranges checks the sampling settings and fractions a server or a filter would take
// without complaint and act on wrongly: top_p outside (0, 1] (0 is left out of the
// request, so the server's default would apply), a temperature over 2 (OpenAI's bound;
// a higher one samples noise), a minimum F1 over 1 (nothing would pass).
func (c *Config) ranges() error {
	in := func(key string, v, lo, hi float64, loOpen bool, want string) error {
		if v > hi || v < lo || loOpen && v == lo {
			return &ConfigError{Key: key, Message: fmt.Sprintf("must be in %s, got %v", want, v)}
		}
		return nil
	}
	for _, err := range []error{
		in("llm.top_p", c.LLM.TopP, 0, 1, true, "(0, 1]"),
		in("llm.temperature", c.LLM.Temperature, 0, 2, false, "[0, 2]"),
		in("generate.sample_temperature", c.Generate.SampleTemperature, 0, 2, false, "[0, 2]"),
		in("filter.min_f1", c.Filter.MinF1, 0, 1, false, "[0, 1]"),
		in("filter.min_reward", c.Filter.MinReward, 0, 1, false, "[0, 1]"),
		in("llm.batch.price_factor", c.LLM.Batch.PriceFactor, 0, 1, false, "[0, 1]"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// headers checks every configured header's name and value (origin.CheckHeader): a CR or
// LF in a value would fail every request (or split it), and is refused here, naming the
// key, before anything is sent.
func (c *Config) headers() error {
	check := func(prefix string, h map[string]string) error {
		for _, name := range slices.Sorted(maps.Keys(h)) {
			if err := origin.CheckHeader(name, h[name]); err != nil {
				return &ConfigError{Key: prefix + "." + name, Message: err.Error()}
			}
		}
		return nil
	}
	if err := check("llm.headers", c.LLM.Headers); err != nil {
		return err
	}
	for i, e := range c.LLM.Endpoints {
		if err := check(fmt.Sprintf("llm.endpoints[%d].headers", i), e.Headers); err != nil {
			return err
		}
	}
	return nil
}

// ValidateSources checks that what generation reads is named: the task file, the corpus
// and the model. Filter and export on an existing run need none of them.
func (c *Config) ValidateSources() error {
	if GameTask(c.Task.Name) {
		return c.validateGame()
	}
	if c.Task.Path == "" {
		return &ConfigError{Key: "task.path", Message: "is required: the file of questions or claims"}
	}
	if c.Env.Backend == "local" && c.Corpus.Path == "" && c.Corpus.Index == "" {
		return &ConfigError{Key: "corpus.path", Message: "is required with env.backend local (or set corpus.index to a built index)"}
	}
	if c.Env.Backend == "mediawiki" && c.Env.MediaWikiURL == "" {
		return &ConfigError{Key: "env.mediawiki_url", Message: "is required with env.backend mediawiki"}
	}
	if c.Generate.Policy == "llm" && c.LLM.Model == "" {
		return &ConfigError{Key: "llm.model", Message: "is required with generate.policy llm"}
	}
	if c.Generate.Policy == "llm" {
		return c.LLM.pricedForBudget()
	}
	return nil
}

// validateGame checks what a game task reads: the AgentGym server, the games' range and
// the model.
func (c *Config) validateGame() error {
	switch {
	case c.Env.URL == "":
		return &ConfigError{Key: "env.url", Message: fmt.Sprintf("is required with task.name %s: the AgentGym %s server, e.g. http://127.0.0.1:36001 (docs/agentgym.md)", c.Task.Name, c.Task.Name)}
	case c.Task.Limit < 1:
		return &ConfigError{Key: "task.limit", Message: fmt.Sprintf("is required with task.name %s: the games are AgentGym's numbers task.offset to task.offset+task.limit-1", c.Task.Name)}
	case c.Task.Path != "":
		return &ConfigError{Key: "task.path", Message: fmt.Sprintf("does not apply to task.name %s, whose games come from env.url (task.offset, task.limit)", c.Task.Name)}
	case c.Env.Backend == "mediawiki":
		return &ConfigError{Key: "env.backend", Message: fmt.Sprintf("mediawiki does not apply to task.name %s, which is played on the AgentGym server at env.url", c.Task.Name)}
	case c.Generate.Policy != "llm":
		return &ConfigError{Key: "generate.policy", Message: fmt.Sprintf("%q cannot play %s: only the model (llm) does", c.Generate.Policy, c.Task.Name)}
	case c.Generate.Method != MethodReAct && c.Generate.Method != MethodAct:
		return &ConfigError{Key: "generate.method", Message: fmt.Sprintf("%q does not apply to %s: its games are played by react or act, as in the paper", c.Generate.Method, c.Task.Name)}
	case c.Generate.Prompting == "trained":
		return &ConfigError{Key: "generate.prompting", Message: fmt.Sprintf("trained is not available for %s yet: few-shot only", c.Task.Name)}
	case c.Generate.Rationalize:
		return &ConfigError{Key: "generate.rationalize", Message: fmt.Sprintf("does not apply to %s: a game has no gold answer to hint", c.Task.Name)}
	case c.Generate.Exemplars == "":
		return &ConfigError{Key: "generate.exemplars", Message: fmt.Sprintf("is required with task.name %s: the paper's prompt file (%s)", c.Task.Name, map[string]string{TaskALFWorld: "ReAct's prompts/alfworld_3prompts.json", TaskWebShop: "webshop.json, the WebShop notebook's prompts; docs/agentgym.md"}[c.Task.Name])}
	case c.LLM.Model == "":
		return &ConfigError{Key: "llm.model", Message: "is required with generate.policy llm"}
	}
	return c.LLM.pricedForBudget()
}

// pricedForBudget refuses llm.max_cost_usd when a model it would have to price has no
// price: the budget would count every response as free and never stop the run.
func (l LLMConfig) pricedForBudget() error {
	if l.MaxCostUSD <= 0 {
		return nil
	}
	unpriced := func(key string, prices map[string]Price, models ...string) error {
		for _, m := range models {
			if _, ok := LookupPrice(prices, m); ok {
				return nil
			}
		}
		return &ConfigError{Key: key, Message: fmt.Sprintf(
			"has no price for model %q, so llm.max_cost_usd %v could not count what the run spends; add %s.%s: {prompt: ..., completion: ...} (USD per 1M tokens; a key that is a prefix of the model name also prices it) or set llm.max_cost_usd to 0",
			models[0], l.MaxCostUSD, key, models[0])}
	}
	eps := l.ResolvedEndpoints()
	if eps == nil {
		return unpriced("llm.prices", l.Prices, l.Model)
	}
	for i, e := range eps {
		key := "llm.prices"
		if l.Endpoints[i].Prices != nil {
			key = fmt.Sprintf("llm.endpoints[%d].prices", i)
		}
		if err := unpriced(key, e.Prices, e.Model, l.Model); err != nil {
			return err
		}
	}
	return nil
}

// numbersAndDurations walks a config section by its mapstructure tags and refuses a
// number that is not finite (NaN and infinities cannot be sent as JSON, and every
// comparison with them is false, so no range check catches them) and a negative
// duration (a grace period, timeout or interval below zero).
func numbersAndDurations(v reflect.Value, prefix string) error {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			tag := t.Field(i).Tag.Get("mapstructure")
			if tag == "" {
				continue
			}
			if err := numbersAndDurations(v.Field(i), join(tag)); err != nil {
				return err
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return numbersAndDurations(v.Elem(), prefix)
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := numbersAndDurations(v.Index(i), fmt.Sprintf("%s[%d]", prefix, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if err := numbersAndDurations(v.MapIndex(k), join(fmt.Sprint(k.Interface()))); err != nil {
				return err
			}
		}
	case reflect.Float64, reflect.Float32:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return &ConfigError{Key: prefix, Message: fmt.Sprintf("must be a finite number, got %v", f)}
		}
	case reflect.Int64:
		if d, ok := v.Interface().(time.Duration); ok && d < 0 {
			return &ConfigError{Key: prefix, Message: fmt.Sprintf("must not be negative, got %s", d)}
		}
	}
	return nil
}

// trainedFormat checks generate.trained_format against the request format that serves it.
func trainedFormat(format, exportFormat string) error {
	allowed := map[string][]string{"chat": {"openai-chat", "axolotl-chat", "sharegpt", "agentgym"}, "completion": {"completion"},
		"tools": {"openai-tools", "hf-tools", "sharegpt-tools"}}[format]
	if exportFormat == "" || slices.Contains(allowed, exportFormat) {
		return nil
	}
	return &ConfigError{Key: "generate.trained_format", Message: fmt.Sprintf("%q cannot be served with generate.format %s (want one of %s)",
		exportFormat, format, strings.Join(allowed, ", "))}
}
