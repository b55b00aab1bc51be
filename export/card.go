package export

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/reactgen/reactgen/pipeline"
)

// CardInfo is the run's statistics for the dataset card. It carries no secret and the card
// prints every field of it.
type CardInfo struct {
	RunID      string
	Model      string
	PromptHash string // sha256 of the few-shot prompt template
	CorpusHash string // hash of the corpus or index the observations came from
	Task       string // hotpotqa or fever
	Method     string
	License    string // empty: cc-by-sa-4.0 for HotpotQA, cc-by-sa-3.0 for FEVER (Wikipedia text)
	// Summary is the run summary (pipeline.Summarize), the same figures `reactgen stats`
	// prints: episodes generated and kept, tokens and cost, reject reasons, and the
	// accept rate per question type (HotpotQA) or label (FEVER).
	Summary pipeline.Summary
	// Source names the corpus of an imported run (Model is then the model that generated
	// it); empty for a generated run.
	Source string
	// Generate and LLM are the generation settings of a generated run, Filter the filter
	// settings; nil leaves their section out.
	Generate *pipeline.GenerateConfig
	LLM      *pipeline.LLMConfig
	Filter   *pipeline.FilterConfig
}

type cardDataFiles struct {
	Split string   `yaml:"split"`
	Path  []string `yaml:"path"`
}

type cardConfig struct {
	Name      string          `yaml:"config_name"`
	DataFiles []cardDataFiles `yaml:"data_files"`
	Default   bool            `yaml:"default,omitempty"`
}

type cardSplit struct {
	Name        string `yaml:"name"`
	NumBytes    int64  `yaml:"num_bytes"`
	NumExamples int    `yaml:"num_examples"`
}

type cardDatasetInfo struct {
	ConfigName   string        `yaml:"config_name"`
	Features     []yamlFeature `yaml:"features,omitempty"`
	Splits       []cardSplit   `yaml:"splits"`
	DownloadSize int64         `yaml:"download_size"`
	DatasetSize  int64         `yaml:"dataset_size"`
}

type cardMeta struct {
	License        string            `yaml:"license"`
	Language       []string          `yaml:"language"`
	TaskCategories []string          `yaml:"task_categories"`
	Tags           []string          `yaml:"tags"`
	PrettyName     string            `yaml:"pretty_name"`
	SizeCategories []string          `yaml:"size_categories"`
	Configs        []cardConfig      `yaml:"configs,omitempty"`
	DatasetInfo    []cardDatasetInfo `yaml:"dataset_info,omitempty"`
}

func sizeCategory(n int) string {
	switch {
	case n < 1000:
		return "n<1K"
	case n < 10_000:
		return "1K<n<10K"
	case n < 100_000:
		return "10K<n<100K"
	case n < 1_000_000:
		return "100K<n<1M"
	}
	return "1M<n<10M"
}

// cardSource picks the files the card's configs point at: the Parquet shards when
// written, else the first JSONL format's files (not an interchange format's: its rows are
// trajectories for converters, not training rows).
func cardSource(formats []string) string {
	if slices.Contains(formats, "parquet") {
		return "parquet"
	}
	for _, f := range formats {
		if _, ok := jsonlFormats[f]; ok && !slices.Contains(interchangeFormats, f) {
			return f
		}
	}
	return ""
}

// renderCard writes the dataset card README.md: Hugging Face YAML front matter (configs
// with data_files per split, dataset_info, license, task categories, tags) and a body with
// the run's statistics.
func renderCard(info CardInfo, cfg pipeline.ExportConfig, views []string, files []File, t *tally) ([]byte, error) {
	license := info.License
	if license == "" {
		license = "cc-by-sa-4.0"
		if info.Task == pipeline.TaskFEVER {
			license = "cc-by-sa-3.0"
		}
	}
	meta := cardMeta{
		License: license, Language: []string{"en"},
		TaskCategories: []string{"question-answering", "text-generation"},
		Tags:           []string{"react", "agent", "reasoning", "tool-use", "synthetic", info.Task},
		PrettyName:     "ReAct trajectories (" + info.Task + ", " + info.Method + ")",
	}
	source := cardSource(cfg.Formats)
	rowsTotal := 0
	for _, view := range views {
		name := view
		if view == views[0] {
			name = "default"
		}
		conf := cardConfig{Name: name, Default: name == "default"}
		di := cardDatasetInfo{ConfigName: name}
		if source == "parquet" {
			di.Features = hfYAMLFeatures()
		}
		for _, split := range []string{SplitTrain, SplitValidation} {
			var paths []string
			sp := cardSplit{Name: split}
			for _, f := range files {
				if f.Format == source && f.View == view && f.Split == split {
					paths = append(paths, f.Path)
					sp.NumBytes += f.Bytes
					sp.NumExamples += f.Rows
				}
			}
			if len(paths) == 0 || (split == SplitValidation && sp.NumExamples == 0) {
				continue
			}
			sort.Strings(paths)
			conf.DataFiles = append(conf.DataFiles, cardDataFiles{Split: split, Path: paths})
			di.Splits = append(di.Splits, sp)
			di.DownloadSize += sp.NumBytes
			di.DatasetSize += sp.NumBytes
			if view == views[0] {
				rowsTotal += sp.NumExamples
			}
		}
		if source != "" {
			meta.Configs = append(meta.Configs, conf)
			meta.DatasetInfo = append(meta.DatasetInfo, di)
		}
	}
	// One config per conversational JSONL format too (react view), so that
	// load_dataset(dir, name) and `trl sft --dataset_config` find its files.
	for _, format := range []string{"openai-chat", "hf-tools", "openai-tools", "sharegpt-tools"} {
		if !slices.Contains(cfg.Formats, format) {
			continue
		}
		conf := cardConfig{Name: format}
		for _, split := range []string{SplitTrain, SplitValidation} {
			var paths []string
			rows := 0
			for _, f := range files {
				if f.Format == format && f.View == views[0] && f.Split == split {
					paths = append(paths, f.Path)
					rows += f.Rows
				}
			}
			if len(paths) > 0 && (split == SplitTrain || rows > 0) {
				sort.Strings(paths)
				conf.DataFiles = append(conf.DataFiles, cardDataFiles{Split: split, Path: paths})
			}
		}
		meta.Configs = append(meta.Configs, conf)
	}
	meta.SizeCategories = []string{sizeCategory(rowsTotal)}
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(meta); err != nil {
		return nil, fmt.Errorf("dataset card: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("dataset card: %w", err)
	}
	b.WriteString("---\n\n")
	fmt.Fprintf(&b, "# %s\n\n", meta.PrettyName)
	if info.Source != "" {
		fmt.Fprintf(&b, "ReAct trajectories (interleaved Thought / Action / Observation, after Yao et al., ICLR 2023) "+
			"imported from %s, generated there by %s, filtered and exported by reactgen.\n\n", info.Source, info.Model)
	} else {
		fmt.Fprintf(&b, "ReAct trajectories (interleaved Thought / Action / Observation over Wikipedia, after Yao et al., ICLR 2023) "+
			"generated by few-shot prompting and kept only when the filters accepted them. Generated by reactgen.\n\n")
	}
	b.WriteString("## Run\n\n| | |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, strings.ReplaceAll(v, "|", `\|`)) }
	row("run id", info.RunID)
	if info.Source != "" {
		row("source", info.Source+" (imported)")
		row("generated by", info.Model)
	} else {
		row("model", info.Model)
	}
	row("prompt hash", info.PromptHash)
	row("corpus hash", info.CorpusHash)
	row("task", info.Task)
	row("method", info.Method)
	sum := &info.Summary
	row("episodes generated", fmt.Sprint(sum.Episodes))
	row("episodes kept", fmt.Sprint(sum.Kept))
	if sum.Episodes > 0 {
		row("accept rate", fmt.Sprintf("%.1f%%", 100*float64(sum.Kept)/float64(sum.Episodes)))
	}
	row("prompt tokens", fmt.Sprint(sum.Usage.PromptTokens))
	row("completion tokens", fmt.Sprint(sum.Usage.CompletionTokens))
	row("total tokens", fmt.Sprint(sum.Usage.TotalTokens))
	row("cached prompt tokens", fmt.Sprint(sum.Usage.CachedTokens))
	unpriced := sum.Usage.UnpricedCalls
	row("cost (USD)", pipeline.FormatUSD(sum.Usage.CostUSD, unpriced, "%.4f", ""))
	if unpriced > 0 {
		row("unpriced calls", fmt.Sprintf("%d: their model has no price in llm.prices nor in reactgen's table of %s, so their cost is unknown and left out", unpriced, pipeline.PricesAsOf))
	}
	if sum.Kept > 0 {
		row("cost per kept trajectory (USD)", pipeline.FormatUSD(sum.Usage.CostUSD/float64(sum.Kept), unpriced, "%.6f", ""))
		row("cost per kept trajectory without prompt caching (USD)", pipeline.FormatUSD(sum.Usage.CostWithoutCacheUSD()/float64(sum.Kept), unpriced, "%.6f", ""))
		row("tokens per kept trajectory", fmt.Sprintf("%.0f", float64(sum.Usage.TotalTokens)/float64(sum.Kept)))
	}
	if len(sum.Classes) > 0 {
		b.WriteString("\n## Accept rate by question type or label\n\n| group | generated | kept | rate |\n|---|---|---|---|\n")
		for _, k := range sortedKeys(sum.Classes) {
			a := sum.Classes[k]
			rate := 0.0
			if a.Generated > 0 {
				rate = 100 * float64(a.Kept) / float64(a.Generated)
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %.1f%% |\n", k, a.Generated, a.Kept, rate)
		}
	}
	if len(sum.Rounds) > 0 {
		b.WriteString("\n## STaR rounds\n\nEach round generated with its model on the questions the earlier rounds had not solved; a round's kept episodes are carried into the next.\n\n| round | model | episodes | kept |\n|---|---|---|---|\n")
		rounds := make([]int, 0, len(sum.Rounds))
		for k := range sum.Rounds {
			rounds = append(rounds, k)
		}
		slices.Sort(rounds)
		for _, k := range rounds {
			c := sum.Rounds[k]
			fmt.Fprintf(&b, "| %d | %s | %d | %d |\n", k, c.Model, c.Generated, c.Kept)
		}
	}
	b.WriteString("\n## Views\n\n| view | examples | kept episodes it cannot hold | assistant turns trained | turns with weight 0 (masked steps) |\n|---|---|---|---|---|\n")
	for _, v := range views {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", v, t.byView[v], t.outside[v], t.trained[v], t.masked[v])
	}
	b.WriteString("\nThe react and act views hold only trajectories the agent walked to its own Finish; an episode a CoT or CoT-SC answer stands for " +
		"(a react-cot-sc episode that ReAct did not finish) is in the cot view, as its winning chain, or in none. " +
		"A masked step (filter.mask_steps) stays in its trajectory with no loss on it: weight 0 in openai-chat and openai-tools, " +
		"train false in axolotl-chat, loss false in agentgym, trainable false in Arrow and Parquet, no row of its own in completion and alpaca.\n")
	writeReasoning(&b, cfg, t.reasoning)
	writeSettings(&b, info)
	b.WriteString("\n## Tokens\n\n")
	fmt.Fprintf(&b, "Counted with %s: each turn's role and content plus %d tokens of chat template per turn and %d for the reply (OpenAI's accounting).\n", t.counter.Name(), perMessage, replyPriming)
	if len(t.tokens) > 0 {
		sorted := slices.Clone(t.tokens)
		slices.Sort(sorted)
		total := 0
		for _, n := range sorted {
			total += n
		}
		fmt.Fprintf(&b, "Per example (%s view): min %d, median %d, mean %.0f, max %d.\n", views[0], sorted[0], sorted[len(sorted)/2], float64(total)/float64(len(sorted)), sorted[len(sorted)-1])
	}
	if cfg.MaxTokens > 0 {
		fmt.Fprintf(&b, "export.max_tokens %d: %d episodes over it were left out.\n", cfg.MaxTokens, t.dropped["max_tokens"])
	}
	writePlotLinks(&b, files)
	writeLoading(&b, cfg, files)
	writeLoss(&b, cfg)
	if len(sum.RejectReasons) > 0 {
		b.WriteString("\n## Reject reasons\n\n| reason | episodes |\n|---|---|\n")
		for _, k := range sortedKeys(sum.RejectReasons) {
			fmt.Fprintf(&b, "| %s | %d |\n", k, sum.RejectReasons[k])
		}
	}
	b.WriteString("\n## Files\n\n| file | format | view | split | rows | bytes |\n|---|---|---|---|---|---|\n")
	for _, f := range files {
		if f.Rows == 0 && f.Format == "arrow-meta" {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d |\n", f.Path, f.Format, f.View, f.Split, f.Rows, f.Bytes)
	}
	b.WriteString("\nThe formats are described in reactgen's docs/formats.md. Observations quote Wikipedia " +
		"(CC BY-SA); the questions and claims come from " + info.Task + ".\n")
	return b.Bytes(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeReasoning says where the reasoning text of a reasoning model went, per format,
// when any exported step carries one (export.reasoning).
func writeReasoning(b *bytes.Buffer, cfg pipeline.ExportConfig, steps int) {
	if steps == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Reasoning\n\n%d steps of the exported episodes carry the model's reasoning text (what a reasoning model returned apart from its answer), "+
		"kept apart from the ReAct thought. export.reasoning is %s:\n\n", steps, cmp.Or(cfg.Reasoning, ReasoningKeep))
	switch cfg.Reasoning {
	case ReasoningDrop:
		b.WriteString("- no file carries it; the episode log (episodes.jsonl, steps[].reasoning) still holds it.\n")
		return
	case ReasoningInline:
		b.WriteString("- every format trains on it: `<think>\\n…\\n</think>\\n\\n` before the thought of its assistant turn " +
			"(before `Thought k:` in completion, alpaca and the text column), as Qwen3 and DeepSeek-R1 write it.\n")
		return
	}
	lines := map[string]string{
		"openai-chat":  "`reasoning_content` on the assistant messages, the field Qwen3-family and TRL templates render. OpenAI's fine-tuning format has no such field: `reactgen train` uploads the rows without it.",
		"openai-tools": "`reasoning_content` on the assistant messages; `reactgen train` uploads the rows without it.",
		"axolotl-chat": "`reasoning_content` on the assistant turns, handed to the chat template with the turn.",
		"agentgym":     "`reasoning_content` on the gpt turns, which AgentGym's trainer does not read (export.reasoning inline trains on it).",
		"completion":   "nowhere: the format has no field for it (export.reasoning inline puts it in the completion).",
		"alpaca":       "nowhere: the format has no field for it (export.reasoning inline puts it in the output).",
		"arrow":        "the `reasoning` field of `steps`, `messages` and `tool_messages`.",
		"arrow-file":   "the `reasoning` field of `steps`, `messages` and `tool_messages`.",
		"parquet":      "the `reasoning` field of `steps`, `messages` and `tool_messages`.",
	}
	for _, f := range cfg.Formats {
		if l, ok := lines[f]; ok {
			fmt.Fprintf(b, "- %s: %s\n", f, l)
		}
	}
}
