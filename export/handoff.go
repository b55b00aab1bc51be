package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/reactgen/reactgen/pipeline"
)

// Hand-off files: what each trainer needs to start on the export, naming exactly the
// files written (paths relative to the export directory, which is the dataset directory
// of each snippet).
const (
	LlamaFactoryInfo   = "dataset_info.json" // LLaMA-Factory's dataset registry
	LlamaFactoryConfig = "llamafactory.yaml" // a LLaMA-Factory SFT config using it
	AxolotlConfig      = "axolotl.yaml"      // axolotl datasets / test_datasets entries
	TRLCommand         = "trl-sft.sh"        // TRL's `trl sft` command line
)

// lfEntry is one dataset of LLaMA-Factory's dataset_info.json.
type lfEntry struct {
	FileName   string            `json:"file_name"`
	Formatting string            `json:"formatting"`
	Ranking    bool              `json:"ranking,omitempty"`
	Columns    map[string]string `json:"columns"`
	Tags       map[string]string `json:"tags,omitempty"`
}

// llamaFactoryEntry says how LLaMA-Factory reads a file of format, or false when it does
// not read that format.
func llamaFactoryEntry(format string, system bool) (lfEntry, bool) {
	sharegptTags := map[string]string{"role_tag": "from", "content_tag": "value", "user_tag": "human",
		"assistant_tag": "gpt", "observation_tag": "observation", "function_tag": "function_call", "system_tag": "system"}
	switch format {
	case "alpaca":
		cols := map[string]string{"prompt": "instruction", "query": "input", "response": "output"}
		if system {
			cols["system"] = "system"
		}
		return lfEntry{Formatting: "alpaca", Columns: cols}, true
	case "sharegpt":
		return lfEntry{Formatting: "sharegpt", Columns: map[string]string{"messages": "conversations"}, Tags: sharegptTags}, true
	case "sharegpt-tools":
		cols := map[string]string{"messages": "conversations", "tools": "tools"}
		if system {
			cols["system"] = "system"
		}
		return lfEntry{Formatting: "sharegpt", Columns: cols, Tags: sharegptTags}, true
	case "openai-chat":
		return lfEntry{Formatting: "sharegpt", Columns: map[string]string{"messages": "messages"}, Tags: map[string]string{
			"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant", "system_tag": "system"}}, true
	case "pairs":
		return lfEntry{Formatting: "alpaca", Ranking: true, Columns: map[string]string{"prompt": "prompt", "chosen": "chosen", "rejected": "rejected"}}, true
	}
	return lfEntry{}, false
}

// datasetName is a file's name in dataset_info.json: reactgen_<format>[_<view>]_<split>
// [_<shard>], with dashes as underscores.
func datasetName(f File) string {
	parts := []string{"reactgen", f.Format}
	if f.View != "" && f.View != ViewReAct {
		parts = append(parts, f.View)
	}
	if f.Split != "" {
		parts = append(parts, f.Split)
	}
	// A shard: <...>.<split>-0000i-of-0000N.jsonl adds 0000i_of_0000N.
	if _, shard, ok := strings.Cut(filepath.Base(f.Path), "."+f.Split+"-"); ok && f.Split != "" {
		parts = append(parts, strings.SplitN(shard, ".", 2)[0])
	}
	return strings.ReplaceAll(strings.Join(parts, "_"), "-", "_")
}

// writeHandoff writes the trainer hand-off files for the files written so far; masked
// is the number of assistant turns the filter masked (filter.mask_steps).
func writeHandoff(stage string, cfg pipeline.ExportConfig, files []File, masked int) ([]File, error) {
	h := &handoff{stage: stage}
	if err := h.llamaFactory(cfg, files); err != nil {
		return nil, err
	}
	if err := h.axolotl(cfg, files, masked); err != nil {
		return nil, err
	}
	if err := h.trl(cfg, masked); err != nil {
		return nil, err
	}
	return h.out, nil
}

// handoff writes hand-off files into the export's stage directory and lists them.
type handoff struct {
	stage string
	out   []File
}

func (h *handoff) write(rel string, data []byte) error {
	size, sum, err := writeWhole(filepath.Join(h.stage, rel), data)
	if err != nil {
		return err
	}
	h.out = append(h.out, File{Path: rel, Format: "handoff", Bytes: size, SHA256: sum})
	return nil
}

// llamaFactory writes LLaMA-Factory's dataset_info.json, naming every file of a format it
// reads, and an SFT config on the react view of the first of them the export has.
func (h *handoff) llamaFactory(cfg pipeline.ExportConfig, files []File) error {
	system := cfg.System != ""
	info := map[string]lfEntry{}
	var lfTrain, lfEval []string
	lfPick := ""
	for _, f := range []string{"sharegpt-tools", "sharegpt", "openai-chat", "alpaca"} {
		if slices.Contains(cfg.Formats, f) {
			lfPick = f
			break
		}
	}
	for _, f := range files {
		e, ok := llamaFactoryEntry(f.Format, system)
		if !ok || strings.HasSuffix(f.Path, ".gz") || strings.HasSuffix(f.Path, ".zst") {
			continue // LLaMA-Factory reads plain JSON files
		}
		e.FileName = f.Path
		name := datasetName(f)
		info[name] = e
		if f.Format == lfPick && (f.View == ViewReAct || f.View == "") {
			if f.Split == SplitValidation {
				lfEval = append(lfEval, name)
			} else {
				lfTrain = append(lfTrain, name)
			}
		}
	}
	if len(info) > 0 {
		data, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		if err := h.write(LlamaFactoryInfo, append(data, '\n')); err != nil {
			return err
		}
	}
	if len(lfTrain) == 0 {
		return nil
	}
	slices.Sort(lfTrain)
	slices.Sort(lfEval)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# LLaMA-Factory SFT on %s (llamafactory-cli train %s, run from this directory).\n", lfPick, LlamaFactoryConfig)
	b.WriteString("# Set model_name_or_path and template to the model's; the rest is a LoRA starting point.\n")
	conf := []keyValue{
		{"model_name_or_path", "Qwen/Qwen2.5-7B-Instruct"}, {"template", "qwen"},
		{"stage", "sft"}, {"do_train", true}, {"finetuning_type", "lora"}, {"lora_target", "all"},
		{"dataset_dir", "."}, {"dataset", strings.Join(lfTrain, ",")},
	}
	if len(lfEval) > 0 {
		conf = append(conf, keyValue{"eval_dataset", strings.Join(lfEval, ",")})
	}
	conf = append(conf, keyValue{"cutoff_len", 4096}, keyValue{"output_dir", "saves/reactgen-sft"},
		keyValue{"per_device_train_batch_size", 1}, keyValue{"gradient_accumulation_steps", 8},
		keyValue{"learning_rate", 1.0e-4}, keyValue{"num_train_epochs", 3.0}, keyValue{"bf16", true})
	if err := encodeYAML(&b, conf); err != nil {
		return err
	}
	return h.write(LlamaFactoryConfig, b.Bytes())
}

// axolotl writes axolotl's datasets: chat_template entries for the chat formats, alpaca
// for alpaca, and export.chat_template as the template when one is set.
func (h *handoff) axolotl(cfg pipeline.ExportConfig, files []File, masked int) error {
	var train, test []map[string]any
	for _, f := range files {
		e := axolotlEntry(f.Format, cfg.TrainObservations)
		if f.Format == "openai-chat" && masked > 0 {
			// The masked steps' turns have weight 0: axolotl reads the flag from it.
			e = append(e, keyValue{"message_field_training", "weight"})
		}
		if e == nil || (f.View != ViewReAct && f.View != "") {
			continue
		}
		e = append([]keyValue{{"path", f.Path}, {"ds_type", "json"}}, e...)
		m := map[string]any{}
		for _, kv := range e {
			m[kv.Key] = kv.Value
		}
		if f.Split == SplitValidation {
			test = append(test, m)
		} else {
			train = append(train, m)
		}
	}
	if len(train) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("# axolotl datasets for this export: paste into an axolotl config (paths are relative to\n")
	b.WriteString("# this directory; run axolotl from here or make them absolute). Only assistant turns\n")
	b.WriteString("# carry loss, as the export's masks say.\n")
	b.WriteString("# The tool-calling files (hf-tools) need a chat template that renders an assistant turn's\n")
	b.WriteString("# content (the ReAct thought) beside its tool_calls and prints string arguments as they\n")
	b.WriteString("# are: Qwen3's does; Llama 3.1's and Hermes' drop the thought, Qwen2.5's quotes the\n")
	b.WriteString("# arguments (docs/formats.md, \"Chat templates\").\n")
	var doc []keyValue
	if cfg.ChatTemplate != "" {
		b.WriteString("# export.chat_template was checked to render them whole: it is the template here.\n")
		tpl, err := chatTemplateSource(cfg.ChatTemplate)
		if err != nil {
			return err
		}
		doc = append(doc, keyValue{"chat_template", "jinja"}, keyValue{"chat_template_jinja", tpl})
	}
	doc = append(doc, keyValue{"datasets", train})
	if len(test) > 0 {
		doc = append(doc, keyValue{"test_datasets", test})
	}
	if err := encodeYAML(&b, doc); err != nil {
		return err
	}
	return h.write(AxolotlConfig, b.Bytes())
}

// chatTemplateSource is the Jinja source of export.chat_template: the file, or the
// chat_template string of a tokenizer_config.json.
func chatTemplateSource(path string) (string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("export.chat_template: %w", err)
	}
	tpl := string(src)
	if strings.HasSuffix(path, ".json") {
		var tc struct {
			ChatTemplate any `json:"chat_template"`
		}
		if err := json.Unmarshal(src, &tc); err == nil {
			if s, ok := tc.ChatTemplate.(string); ok {
				tpl = s
			}
		}
	}
	return tpl, nil
}

// trl writes `trl sft` on the card's config of the best conversational format. TRL trains
// every assistant turn a template marks (--assistant_only_loss): it cannot leave a masked
// step untrained, so with masked steps the script refuses, naming what works.
func (h *handoff) trl(cfg pipeline.ExportConfig, masked int) error {
	f := ""
	for _, c := range []string{"hf-tools", "openai-chat"} {
		if slices.Contains(cfg.Formats, c) {
			f = c
			break
		}
	}
	if f == "" {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("#!/bin/sh\n")
	if masked > 0 {
		fmt.Fprintf(&b, "# TRL cannot train on %s here: %d assistant turns are masked (filter.mask_steps) and\n", f, masked)
		b.WriteString("# TRL's --assistant_only_loss trains every assistant turn, weight 0 or not.\n")
		fmt.Fprintf(&b, "echo 'trl-sft.sh: %d masked assistant turns would be trained by TRL; train with axolotl on axolotl-chat or openai-chat (axolotl.yaml reads their per-turn flags), on chat-text (export.chat_template: its loss spans leave them out), or drop filter.mask_steps' >&2\n", masked)
		b.WriteString("exit 1\n")
		return h.write(TRLCommand, b.Bytes())
	}
	fmt.Fprintf(&b, "# TRL SFT on %s: the dataset is this directory, whose README.md declares the config %q\n", f, f)
	b.WriteString("# (its train and validation files). assistant_only_loss trains on the assistant turns\n")
	b.WriteString("# alone and needs a chat template with generation markers (TRL swaps its own in for\n")
	b.WriteString("# Qwen2.5, Qwen3 and Llama 3).\n")
	model := "Qwen/Qwen2.5-0.5B-Instruct"
	if f == "hf-tools" {
		b.WriteString("# The template must render an assistant turn's content (the ReAct thought) beside its\n")
		b.WriteString("# tool_calls and print string arguments as they are: Qwen3's does (the model below);\n")
		b.WriteString("# Llama 3.1's and Hermes' drop the thought, so the model would learn to act without\n")
		b.WriteString("# reasoning, and Qwen2.5's quotes the arguments. For another model, set\n")
		b.WriteString("# export.chat_template to a template that works (reactgen checks it) and pass it here.\n")
		model = "Qwen/Qwen3-0.6B"
	}
	b.WriteString("cd \"$(dirname \"$0\")\" && exec trl sft \\\n")
	fmt.Fprintf(&b, "  --model_name_or_path %s \\\n", model)
	if cfg.ChatTemplate != "" {
		p := cfg.ChatTemplate
		if strings.HasSuffix(p, ".json") {
			p = filepath.Dir(p) // a tokenizer directory
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "  --chat_template_path %s \\\n", shellQuote(abs))
	}
	fmt.Fprintf(&b, "  --dataset_name . --dataset_config %s \\\n", f)
	b.WriteString("  --dataset_train_split train --dataset_test_split validation \\\n")
	b.WriteString("  --assistant_only_loss true --output_dir trl-sft \"$@\"\n")
	return h.write(TRLCommand, b.Bytes())
}

// axolotlEntry is the dataset entry axolotl needs for a format (without the path), or nil.
func axolotlEntry(format string, trainObs bool) []keyValue {
	roles := []string{"assistant"}
	switch format {
	case "openai-chat":
		return []keyValue{{"type", "chat_template"}, {"field_messages", "messages"},
			{"message_property_mappings", map[string]string{"role": "role", "content": "content"}},
			{"roles_to_train", roles}, {"train_on_eos", "turn"}}
	case "axolotl-chat":
		// The per-turn flag says what trains, observation turns too under
		// export.train_observations.
		return []keyValue{{"type", "chat_template"}, {"field_messages", "messages"},
			{"message_property_mappings", map[string]string{"role": "role", "content": "content"}},
			{"roles_to_train", []string{}}, {"message_field_training", "train"}, {"train_on_eos", "turn"}}
	case "sharegpt":
		return []keyValue{{"type", "chat_template"}, {"field_messages", "conversations"},
			{"message_property_mappings", map[string]string{"role": "from", "content": "value"}},
			{"roles", map[string][]string{"user": {"human", "observation"}, "assistant": {"gpt"}, "system": {"system"}}},
			{"roles_to_train", roles}, {"train_on_eos", "turn"}}
	case "hf-tools":
		if trainObs {
			roles = append(roles, RoleTool)
		}
		return []keyValue{{"type", "chat_template"}, {"field_messages", "messages"}, {"field_tools", "tools"},
			{"roles_to_train", roles}, {"train_on_eos", "turn"}}
	case "alpaca":
		return []keyValue{{"type", "alpaca"}}
	}
	return nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// encodeYAML writes ordered keys as YAML.
func encodeYAML(b *bytes.Buffer, kvs []keyValue) error {
	var node yaml.Node
	node.Kind = yaml.MappingNode
	for _, kv := range kvs {
		var v yaml.Node
		if err := v.Encode(kv.Value); err != nil {
			return err
		}
		node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: kv.Key}, &v)
	}
	enc := yaml.NewEncoder(b)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return err
	}
	return enc.Close()
}
