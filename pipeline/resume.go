package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CorpusKey is the result key that pins the corpus: the identity of the local index
// the run reads ("index:..."), or the MediaWiki endpoint.
const CorpusKey = "corpus"

// ResultKeys are the settings that change what a run produces: a resume must match them.
// taskSHA pins the task file, corpusID the corpus (its source file's hash or its index's
// fingerprint) and promptID the exemplars as loaded.
func (c *Config) ResultKeys(taskSHA, corpusID, promptID string) map[string]string {
	g, l := c.Generate, c.LLM
	keys := map[string]string{
		"task.name": c.Task.Name, "task.file_sha256": taskSHA, CorpusKey: corpusID,
		"env.backend": c.Env.Backend, "env.sentences": fmt.Sprint(c.Env.Sentences),
		"env.max_observation_chars": fmt.Sprint(c.Env.MaxObservationChars),
		"env.observations":          c.Env.Observations, "env.actions": c.Env.Actions,
		"generate.policy": g.Policy, "generate.method": g.Method, "generate.exemplars": promptID,
		"generate.max_steps": fmt.Sprint(g.MaxStepsFor(c.Task.Name)), "generate.seed": fmt.Sprint(g.Seed),
		"generate.shuffle": fmt.Sprint(g.Shuffle), "generate.rationalize": fmt.Sprint(g.Rationalize),
	}
	if c.Task.Shard != "" {
		keys[ShardKey] = c.Task.Shard
	}
	if g.Policy == "llm" {
		keys["llm.model"] = l.Model
		keys["generate.format"] = g.Format
		keys["llm.temperature"] = fmt.Sprint(l.Temperature)
		keys["llm.top_p"] = fmt.Sprint(l.TopP)
		keys["llm.request_max_tokens"] = fmt.Sprint(l.RequestMaxTokens)
		keys["llm.stop"] = strings.Join(l.Stop, "\x00")
		keys["llm.seed"] = fmt.Sprint(l.Seed)
		keys["generate.samples"] = fmt.Sprint(g.Samples)
		keys["generate.sample_temperature"] = fmt.Sprint(g.SampleTemperature)
		if l.ThinkTags { // splitting changes the text actions are read from; absent when off, as before the key
			keys["llm.think_tags"] = "true"
		}
		if g.Prompting == "trained" {
			keys["generate.prompting"] = g.Prompting
			keys["generate.trained_format"] = g.TrainedFormat
			keys["export.system"] = c.Export.System // the trained layout's system message
		}
	}
	return keys
}

// IndexDir is where the corpus index lives: corpus.index, or <run>/index.
func (c *Config) IndexDir() string {
	if c.Corpus.Index != "" {
		return c.Corpus.Index
	}
	return filepath.Join(c.Run.Out, IndexDir)
}

// CheckEvalFiles fails on an evaluation file (filter.eval_files) that cannot be read,
// before a stage starts.
func (c *Config) CheckEvalFiles() error {
	for _, f := range c.Filter.EvalFiles {
		if _, err := os.Stat(f); err != nil {
			return &ConfigError{Key: "filter.eval_files", Message: fmt.Sprintf("cannot read evaluation file: %v", err)}
		}
	}
	return nil
}

// EvalInputs pins the evaluation files (filter.eval_files) as inputs of the run.
func (c *Config) EvalInputs() ([]Input, error) {
	var ins []Input
	for _, f := range c.Filter.EvalFiles {
		in, err := DescribeInput("eval", f)
		if err != nil {
			return nil, &ConfigError{Key: "filter.eval_files", Message: err.Error()}
		}
		ins = append(ins, in)
	}
	return ins, nil
}

// FilterConfig is the filter section as the stages read it: its token counter defaults
// to the export's tokenizer, so that a run counts tokens one way.
func (c *Config) FilterConfig() FilterConfig {
	fc := c.Filter
	if fc.TokenCounter == "" {
		fc.TokenCounter = c.Export.Tokenizer
	}
	return fc
}
