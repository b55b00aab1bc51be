package export

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reactgen/reactgen/internal/chart"
	"github.com/reactgen/reactgen/internal/safefile"
	"github.com/reactgen/reactgen/pipeline"
)

// Plot files, relative to the export directory.
const (
	PlotSteps   = "plots/steps.svg"
	PlotTokens  = "plots/tokens.svg"
	PlotRejects = "plots/rejects.svg"
)

// writePlots writes the card's plots (drawn by internal/chart, as the compare report's
// are): steps per exported episode, tokens per example (first view) and the filter's
// reject reasons.
func writePlots(stage string, t *tally, rejects map[string]int) ([]File, error) {
	var reasons []chart.Bar
	for _, k := range slices.Sorted(maps.Keys(rejects)) {
		reasons = append(reasons, chart.Bar{Label: k, Value: float64(rejects[k])})
	}
	plots := []struct {
		path  string
		chart chart.Chart
	}{
		{PlotSteps, chart.Columns("steps", "Steps per episode", "steps (Thought / Action / Observation triples)", "episodes", chart.Buckets(t.steps, 30))},
		{PlotTokens, chart.Columns("tokens", "Tokens per example ("+t.counter.Name()+")", "tokens", "examples", chart.Buckets(t.tokens, 24))},
		{PlotRejects, chart.Columns("rejects", "Reject reasons", "filter rule / reason", "episodes", reasons)},
	}
	var out []File
	for _, p := range plots {
		size, sum, err := writeWhole(filepath.Join(stage, filepath.FromSlash(p.path)), []byte(p.chart.SVG+"\n"))
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: p.path, Format: "plot", Bytes: size, SHA256: sum})
	}
	return out, nil
}

// PlotCompareDir holds the compare report's charts (export.card_charts), relative to the
// export directory.
const PlotCompareDir = "plots/compare"

// MaxChartBytes bounds one chart of export.card_charts (compare's are tens of KiB).
const MaxChartBytes = 16 << 20

// copyCompareCharts copies the charts of a `reactgen compare` report directory (its
// charts/*.svg, and the *.png compare --png rendered) into the export's plots/compare/.
func copyCompareCharts(stage, dir string) ([]File, error) {
	var paths []string
	for _, pattern := range []string{"*.svg", "*.png"} {
		m, err := filepath.Glob(filepath.Join(dir, "charts", pattern))
		if err != nil {
			return nil, err
		}
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		return nil, &pipeline.ConfigError{Key: "export.card_charts", Message: fmt.Sprintf(
			"%s holds no charts/*.svg: name the --out directory of reactgen compare", dir)}
	}
	slices.Sort(paths)
	var out []File
	for _, p := range paths {
		// The folder is made for publishing: a chart must be a regular file inside the
		// compare report, never a link to /etc/shadow or a pipe.
		data, err := safefile.ReadIn(dir, filepath.Join("charts", filepath.Base(p)), MaxChartBytes)
		if err != nil {
			return nil, &pipeline.ConfigError{Key: "export.card_charts", Message: err.Error()}
		}
		rel := PlotCompareDir + "/" + filepath.Base(p)
		size, sum, err := writeWhole(filepath.Join(stage, filepath.FromSlash(rel)), data)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: rel, Format: "plot", Bytes: size, SHA256: sum})
	}
	return out, nil
}

// writePlotLinks shows the plots: the card's own, then the compared runs' charts, each
// as its PNG where there is one (not every card renderer shows SVG), else its SVG.
func writePlotLinks(b *bytes.Buffer, files []File) {
	b.WriteString("\n## Plots\n\n")
	png := map[string]bool{}
	for _, f := range files {
		if f.Format == "plot" && strings.HasSuffix(f.Path, ".png") {
			png[strings.TrimSuffix(f.Path, ".png")] = true
		}
	}
	compared := false
	for _, f := range files {
		stem, isSVG := strings.CutSuffix(f.Path, ".svg")
		if f.Format != "plot" || !isSVG {
			continue
		}
		if strings.HasPrefix(f.Path, PlotCompareDir+"/") && !compared {
			compared = true
			b.WriteString("### Compared runs (reactgen compare)\n\n")
		}
		link := f.Path
		if png[stem] {
			link = stem + ".png"
		}
		fmt.Fprintf(b, "![%s](%s)\n\n", filepath.Base(stem), link)
	}
}

// writeSettings prints the generation settings (or that the data was imported) and the
// filter settings.
func writeSettings(b *bytes.Buffer, info CardInfo) {
	row := func(k string, v any) {
		fmt.Fprintf(b, "| %s | %s |\n", k, strings.ReplaceAll(fmt.Sprint(v), "|", `\|`))
	}
	switch {
	case info.Source != "":
		fmt.Fprintf(b, "\n## Generation\n\nNot generated here: imported from %s, whose trajectories %s generated. "+
			"Only the filter and export settings below are reactgen's.\n", info.Source, info.Model)
	case info.Generate != nil:
		g := info.Generate
		b.WriteString("\n## Generation\n\n| setting | value |\n|---|---|\n")
		row("policy", g.Policy)
		row("method", g.Method)
		row("format", g.Format)
		exemplars := g.Exemplars
		if exemplars == "" {
			exemplars = "reactgen's own for the task"
		}
		row("exemplars", exemplars)
		row("exemplars used", map[bool]any{true: "all", false: g.NumExemplars}[g.NumExemplars == 0])
		row("max steps", g.MaxStepsFor(info.Task))
		row("attempts per question", g.Attempts)
		row("target correct", g.TargetCorrect)
		if info.LLM != nil && g.Policy == "llm" {
			row("temperature", info.LLM.Temperature)
			row("max tokens per request", info.LLM.RequestMaxTokens)
		}
		if strings.Contains(g.Method, "cot-sc") {
			row("CoT-SC samples", g.Samples)
		}
		if g.Attempts > 1 || strings.Contains(g.Method, "cot-sc") {
			row("sample temperature", g.SampleTemperature)
		}
		row("rationalization (STaR)", g.Rationalize)
		row("seed", g.Seed)
	}
	if f := info.Filter; f != nil {
		b.WriteString("\n## Filter\n\n| setting | value |\n|---|---|\n")
		row("rules, in order", strings.Join(f.Rules, ", "))
		if slices.Contains(f.Rules, "correct") {
			row("min F1 (0 = exact match)", f.MinF1)
		}
		if slices.Contains(f.Rules, "max_steps") {
			row("max steps", f.MaxSteps)
		}
		if slices.Contains(f.Rules, "max_tokens") {
			row("max tokens", f.MaxTokens)
			row("token counter", f.TokenCounter)
		}
		if slices.Contains(f.Rules, "dedupe") {
			row("per question", f.MaxPerQuestion)
			row("dedupe policy", f.DedupePolicy)
		}
		if slices.Contains(f.Rules, "balance") {
			row("balance by", f.BalanceBy)
			row("balance tolerance", f.BalanceTolerance)
		}
		if slices.Contains(f.Rules, "decontaminate") {
			row("evaluation files", strings.Join(f.EvalFiles, ", "))
		}
	}
}

// writeLoading says how each kind of file written is loaded.
func writeLoading(b *bytes.Buffer, cfg pipeline.ExportConfig, files []File) {
	has := func(format string) bool { return slices.Contains(cfg.Formats, format) }
	first := func(format, split string) string {
		for _, f := range files {
			if f.Format == format && f.Split == split && (f.View == ViewReAct || f.View == "") {
				return f.Path
			}
		}
		return ""
	}
	b.WriteString("\n## How to load it\n\n")
	b.WriteString("Paths are relative to this directory.\n\n")
	b.WriteString("- **Hugging Face datasets**: `load_dataset(\"path/to/this/dir\")` reads the `default` config above; " +
		"`load_dataset(dir, \"<config>\")` another (one per view, and one per conversational JSONL format).")
	if has("arrow") {
		b.WriteString(" `load_from_disk(\"arrow\")` reads the Arrow directory.")
	}
	b.WriteString("\n")
	if has("hf-tools") || has("openai-chat") {
		b.WriteString("- **TRL**: `sh " + TRLCommand + "` (`trl sft` on this directory's `hf-tools` or `openai-chat` config; set the model).\n")
	}
	if has("hf-tools") {
		b.WriteString("- **hf-tools** rows load with `load_dataset(\"json\", data_files=...)` as they are: `tools` and each call's `arguments` " +
			"are JSON strings, so the keys a datasets load merges across rows add no argument to a call and no property to a tool schema. " +
			"TRL parses `tools`; elsewhere pass `tools=json.loads(row[\"tools\"])` to `apply_chat_template`. The chat template must render " +
			"an assistant turn's content (the ReAct thought) beside its `tool_calls` and print string arguments as they are: Qwen3's does; " +
			"Llama 3.1's and Hermes' drop the thought (the model would learn to act without reasoning) and Qwen2.5's quotes the arguments.\n")
	}
	if has("openai-tools") {
		b.WriteString("- **openai-tools** is for OpenAI's upload as it is; a datasets load merges its tool schemas' properties into nulls: train other trainers on hf-tools.\n")
	}
	if has(ChatTextFormat) || cfg.ChatTemplate != "" {
		b.WriteString("- **chat-text** rows (`export.chat_template`): `text` is each example rendered by that template, `loss_spans` the " +
			"`[start, end)` character offsets (`text[start:end]`) of its assistant turns but masked steps'.\n")
	}
	if has("arrow") || has("arrow-file") || has("parquet") {
		b.WriteString("- **Arrow and Parquet**: `tool_messages[].tool_calls[].function.arguments` and `tools[].function.parameters` are JSON text; " +
			"`json.loads` the parameters, leave out empty `tool_calls`, `tool_call_id`, `name` and `reasoning` and rename `reasoning` `reasoning_content` before `apply_chat_template` " +
			"(the rows then render as hf-tools' do).\n")
	}
	if slices.ContainsFunc(files, func(f File) bool { return f.Path == AxolotlConfig }) {
		b.WriteString("- **axolotl**: paste the `datasets:` and `test_datasets:` of `" + AxolotlConfig + "` into an axolotl config.\n")
	}
	if slices.ContainsFunc(files, func(f File) bool { return f.Path == LlamaFactoryInfo }) {
		b.WriteString("- **LLaMA-Factory**: `" + LlamaFactoryInfo + "` registers every file it reads (`dataset_dir` = this directory); " +
			"`llamafactory-cli train " + LlamaFactoryConfig + "` starts an SFT run.\n")
	}
	for _, f := range []string{"openai-tools", "openai-chat"} {
		if tr := first(f, SplitTrain); tr != "" {
			v := first(f, SplitValidation)
			fmt.Fprintf(b, "- **OpenAI fine-tuning**: upload `%s`", tr)
			if v != "" {
				fmt.Fprintf(b, " and `%s`", v)
			}
			b.WriteString(" with purpose `fine-tune` and create a job with them as `training_file` (and `validation_file`)")
			if f == "openai-tools" {
				b.WriteString("; every row declares its tools")
			}
			b.WriteString(".\n")
			break
		}
	}
	if has("adp") {
		b.WriteString("- **Agent Data Protocol**: the `adp.*.jsonl` trajectories (ADP schema " + ADPSchemaVersion + ") and `" + ADPMetadata +
			"` go into ADP's `datasets/<name>/` (the metadata as `metadata.json`); its `agents/<agent>/std_to_sft.py` converts them for an agent.\n")
	}
	if has("atif") {
		b.WriteString("- **ATIF**: the `atif.*.jsonl` trajectories (" + ATIFSchemaVersion + ", one per line, with per-step token, cost and log-probability metrics) " +
			"are what Harbor's trajectory tools and NVIDIA's agent tooling read.\n")
	}
	if slices.ContainsFunc(files, func(f File) bool { return f.Format == "pairs-openai" }) {
		b.WriteString("- **Preference tuning**: `pairs.jsonl` for TRL's `DPOTrainer`; `pairs-openai.jsonl` for OpenAI's DPO (`method: dpo`).\n")
	}
}

// writeLoss says which turns carry loss in each kind of file.
func writeLoss(b *bytes.Buffer, cfg pipeline.ExportConfig) {
	obs := "never"
	if cfg.TrainObservations {
		obs = "yes (`export.train_observations`) where the format can mark it: axolotl-chat `train`, agentgym `loss`, the `trainable` columns, hf-tools via axolotl's `roles_to_train`; not openai-chat or openai-tools, whose weight is for assistant turns only"
	}
	b.WriteString("\n## Which turns carry loss\n\n| turn | trained |\n|---|---|\n")
	b.WriteString("| system, question | never |\n")
	b.WriteString("| assistant: thought and action (text formats), thought and call (tool formats) | always |\n")
	fmt.Fprintf(b, "| observation (user or tool turn) | %s |\n", obs)
	b.WriteString("\nThe masks: `trainable` in the Arrow and Parquet `messages` and `tool_messages`, `weight` in openai-chat " +
		"(with `export.weights`) and openai-tools, `train` in axolotl-chat, `loss` in agentgym; completion, alpaca and sharegpt " +
		"train on the whole completion or every gpt turn.\n")
}
