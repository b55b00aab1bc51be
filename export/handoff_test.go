package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"iter"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/reactgen/reactgen/internal/chattemplate"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
)

// wrongAnswers streams, for every fourth of episodetest.Stream(n, nil), a finished episode with a wrong
// answer: the rejected side of a preference pair.
func wrongAnswers(n int) func() iter.Seq2[pipeline.Rejected, error] {
	return func() iter.Seq2[pipeline.Rejected, error] {
		return func(yield func(pipeline.Rejected, error) bool) {
			for i := 0; i < n; i += 4 {
				if !yield(wrongAnswer(i), nil) {
					return
				}
			}
		}
	}
}

// wrongAnswer is episodetest.Synth(i) finished with a wrong answer, rejected for it.
func wrongAnswer(i int) pipeline.Rejected {
	ep := episodetest.Synth(i)
	ep.ID += "-bad"
	ep.Correct, ep.Prediction = false, "wrong guess"
	ep.Steps[len(ep.Steps)-1].Action = "Finish[wrong guess]"
	return pipeline.Rejected{Episode: ep, Rejects: []pipeline.Reject{{Rule: "correct", Code: "wrong_answer"}}}
}

// TestHandoffReferencesFilesOnDisk: dataset_info.json, the LLaMA-Factory and axolotl
// snippets and the TRL command name exactly the files the export wrote that each trainer
// reads, every one of which is on disk.
func TestHandoffReferencesFilesOnDisk(t *testing.T) {
	const n = 40
	formats := []string{"openai-chat", "axolotl-chat", "completion", "alpaca", "sharegpt", "agentgym",
		"openai-tools", "hf-tools", "sharegpt-tools", "parquet"}
	cfg := pipeline.ExportConfig{Formats: formats, System: "Sys.", ValidationFraction: 0.25, SplitSeed: 2, ShardRows: 20,
		Views: []string{ViewReAct, ViewAct}, Pairs: true, CorrectOnly: true}
	dir := filepath.Join(t.TempDir(), "export")
	res, err := Run(t.Context(), RunOptions{Config: cfg, Dir: dir, Kept: episodetest.Stream(n, nil), Rejected: wrongAnswers(n)})
	if err != nil {
		t.Fatal(err)
	}
	onDisk := func(rel string) bool {
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		return err == nil
	}
	filesOf := func(keep func(File) bool) []string {
		var out []string
		for _, f := range res.Files {
			if keep(f) {
				out = append(out, f.Path)
			}
		}
		slices.Sort(out)
		return out
	}
	read := func(rel string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}

	// LLaMA-Factory's registry: every file of the formats it reads, each once.
	var info map[string]struct {
		FileName   string            `json:"file_name"`
		Formatting string            `json:"formatting"`
		Ranking    bool              `json:"ranking"`
		Columns    map[string]string `json:"columns"`
		Tags       map[string]string `json:"tags"`
	}
	if err := json.Unmarshal(read(LlamaFactoryInfo), &info); err != nil {
		t.Fatal(err)
	}
	var named []string
	for name, e := range info {
		named = append(named, e.FileName)
		if !onDisk(e.FileName) {
			t.Errorf("dataset_info.json %s: %s is not on disk", name, e.FileName)
		}
		if e.Formatting != "alpaca" && e.Formatting != "sharegpt" {
			t.Errorf("%s: formatting %q", name, e.Formatting)
		}
		if strings.Contains(e.FileName, "sharegpt-tools") && (e.Columns["tools"] != "tools" || e.Tags["function_tag"] != "function_call" || e.Tags["observation_tag"] != "observation") {
			t.Errorf("%s: the tool columns and tags are missing: %+v", name, e)
		}
		if strings.HasPrefix(e.FileName, "pairs.") != e.Ranking {
			t.Errorf("%s: ranking %v", name, e.Ranking)
		}
	}
	slices.Sort(named)
	want := filesOf(func(f File) bool {
		return slices.Contains([]string{"alpaca", "sharegpt", "sharegpt-tools", "openai-chat", "pairs"}, f.Format)
	})
	if !slices.Equal(named, want) {
		t.Errorf("dataset_info.json names\n%v\nwant\n%v", named, want)
	}

	var lf map[string]any
	if err := yaml.Unmarshal(read(LlamaFactoryConfig), &lf); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"dataset", "eval_dataset"} {
		for _, name := range strings.Split(lf[key].(string), ",") {
			if _, ok := info[name]; !ok || !strings.Contains(info[name].FileName, "sharegpt-tools.") {
				t.Errorf("llamafactory.yaml %s: %q is not a sharegpt-tools entry of dataset_info.json", key, name)
			}
		}
	}

	// axolotl: every react-view file of the formats it reads, with the right type.
	var ax struct {
		Datasets     []map[string]any `yaml:"datasets"`
		TestDatasets []map[string]any `yaml:"test_datasets"`
	}
	if err := yaml.Unmarshal(read(AxolotlConfig), &ax); err != nil {
		t.Fatal(err)
	}
	var axPaths []string
	for _, d := range append(ax.Datasets, ax.TestDatasets...) {
		p := d["path"].(string)
		axPaths = append(axPaths, p)
		if !onDisk(p) {
			t.Errorf("axolotl.yaml: %s is not on disk", p)
		}
		typ := d["type"]
		switch {
		case strings.HasPrefix(p, "alpaca."):
			if typ != "alpaca" {
				t.Errorf("%s: type %v", p, typ)
			}
		case strings.HasPrefix(p, "axolotl-chat."):
			if typ != "chat_template" || d["message_field_training"] != "train" {
				t.Errorf("%s: %v", p, d)
			}
		case strings.HasPrefix(p, "hf-tools."):
			if typ != "chat_template" || d["field_tools"] != "tools" || !slices.Equal(toStrings(d["roles_to_train"]), []string{"assistant"}) {
				t.Errorf("%s: %v", p, d)
			}
		default:
			if typ != "chat_template" || !slices.Equal(toStrings(d["roles_to_train"]), []string{"assistant"}) {
				t.Errorf("%s: %v", p, d)
			}
		}
	}
	slices.Sort(axPaths)
	want = filesOf(func(f File) bool {
		return f.View == ViewReAct && slices.Contains([]string{"openai-chat", "axolotl-chat", "sharegpt", "hf-tools", "alpaca"}, f.Format)
	})
	if !slices.Equal(axPaths, want) {
		t.Errorf("axolotl.yaml paths\n%v\nwant\n%v", axPaths, want)
	}

	// TRL: the config the command names is in the card, with exactly hf-tools' files.
	m := regexp.MustCompile(`--dataset_config (\S+)`).FindSubmatch(read(TRLCommand))
	if m == nil || string(m[1]) != "hf-tools" {
		t.Fatalf("trl-sft.sh names no hf-tools config: %s", read(TRLCommand))
	}
	meta, _ := readCard(t, filepath.Join(dir, "README.md"))
	var cardPaths []string
	for _, c := range meta.Configs {
		if c.Name != "hf-tools" {
			continue
		}
		for _, df := range c.DataFiles {
			for _, p := range df.Path {
				cardPaths = append(cardPaths, p)
				if !onDisk(p) {
					t.Errorf("card config hf-tools: %s is not on disk", p)
				}
			}
		}
	}
	slices.Sort(cardPaths)
	if want := filesOf(func(f File) bool { return f.Format == "hf-tools" && f.View == ViewReAct }); !slices.Equal(cardPaths, want) {
		t.Errorf("card config hf-tools\n%v\nwant\n%v", cardPaths, want)
	}
	listed := map[string]bool{}
	for _, f := range res.Files {
		listed[f.Path] = true
	}
	for _, h := range []string{LlamaFactoryInfo, LlamaFactoryConfig, AxolotlConfig, TRLCommand} {
		if !listed[h] {
			t.Errorf("%s is not in the result's files: %v", h, slices.Sorted(maps.Keys(listed)))
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestOpenAIPairs(t *testing.T) {
	const n = 12
	cfg := pipeline.ExportConfig{Formats: []string{"openai-chat"}, Pairs: true, System: "Sys."}
	dir := filepath.Join(t.TempDir(), "export")
	if _, err := Run(t.Context(), RunOptions{Config: cfg, Dir: dir, Kept: episodetest.Stream(n, nil), Rejected: wrongAnswers(n)}); err != nil {
		t.Fatal(err)
	}
	lines := lines(t, filepath.Join(dir, "pairs-openai.jsonl"))
	if len(lines) != 3 {
		t.Fatalf("pairs-openai.jsonl: %d rows, want 3", len(lines))
	}
	for _, line := range lines {
		var row struct {
			Input struct {
				Messages []struct{ Role, Content string } `json:"messages"`
			} `json:"input"`
			Preferred    []struct{ Role, Content string } `json:"preferred_output"`
			NonPreferred []struct{ Role, Content string } `json:"non_preferred_output"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&row); err != nil {
			t.Fatal(err)
		}
		in := row.Input.Messages
		if len(in) != 2 || in[0].Role != "system" || in[0].Content != "Sys." || in[1].Role != "user" ||
			!(strings.HasPrefix(in[1].Content, "Question: ") || strings.HasPrefix(in[1].Content, "Claim: ")) || strings.HasSuffix(in[1].Content, "\n") {
			t.Errorf("input: %+v", in)
		}
		if len(row.Preferred) != 1 || row.Preferred[0].Role != "assistant" || len(row.NonPreferred) != 1 || row.NonPreferred[0].Role != "assistant" {
			t.Fatalf("outputs: %+v / %+v", row.Preferred, row.NonPreferred)
		}
		if !strings.Contains(row.NonPreferred[0].Content, "Finish[wrong guess]") || strings.Contains(row.Preferred[0].Content, "wrong guess") {
			t.Errorf("preferred %q, non-preferred %q", row.Preferred[0].Content, row.NonPreferred[0].Content)
		}
	}
}

// TestHandoffTrainsTheThought: the TRL and axolotl hand-offs never train an Act-only
// model or a masked step silently. Without export.chat_template, trl-sft.sh trains
// hf-tools on a Qwen3 model, whose training template (the one TRL swaps in for
// --assistant_only_loss) renders the probe conversation whole; with it, both hand-offs
// use that template; with masked steps, trl-sft.sh refuses (it exits 1 naming what
// works) and axolotl reads openai-chat's weights.
func TestHandoffTrainsTheThought(t *testing.T) {
	qwen3 := shareddata.Path(t, "chat-templates/trl-qwen3_training.jinja")
	src, err := os.ReadFile(qwen3)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := chattemplate.Parse(qwen3, string(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if why := probeWith(tpl).Shortfall(true); why != "" {
		t.Fatalf("Qwen3's training template: %s", why)
	}

	_, dir := runExport(t, pipeline.ExportConfig{Formats: []string{"hf-tools", "openai-chat"}, CorrectOnly: true}, episodetest.Stream(4, nil))
	script, err := os.ReadFile(filepath.Join(dir, TRLCommand))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "--model_name_or_path Qwen/Qwen3-") || strings.Contains(string(script), "--chat_template_path") {
		t.Errorf("trl-sft.sh without export.chat_template:\n%s", script)
	}

	_, dir = runExport(t, pipeline.ExportConfig{Formats: []string{"hf-tools"}, ChatTemplate: qwen3, CorrectOnly: true}, episodetest.Stream(4, nil))
	script, err = os.ReadFile(filepath.Join(dir, TRLCommand))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "--chat_template_path '"+qwen3+"'") {
		t.Errorf("trl-sft.sh does not pass export.chat_template:\n%s", script)
	}
	var ax map[string]any
	data, err := os.ReadFile(filepath.Join(dir, AxolotlConfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &ax); err != nil {
		t.Fatal(err)
	}
	if ax["chat_template"] != "jinja" || ax["chat_template_jinja"] != string(src) {
		t.Errorf("axolotl.yaml does not carry export.chat_template: chat_template %v", ax["chat_template"])
	}

	mod := func(i int, ep *pipeline.Episode) {
		if i%2 == 0 && len(ep.Steps) > 2 {
			ep.MaskedSteps = []pipeline.MaskedStep{{Step: 2, Code: "repeated_search"}}
		}
	}
	_, dir = runExport(t, pipeline.ExportConfig{Formats: []string{"openai-chat"}, Weights: true, CorrectOnly: true}, episodetest.Stream(6, mod))
	cmd := exec.CommandContext(t.Context(), "sh", filepath.Join(dir, TRLCommand))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "masked") || !strings.Contains(string(out), "axolotl") {
		t.Errorf("trl-sft.sh with masked steps: %v, %s; want exit 1 naming what works", err, out)
	}
	data, err = os.ReadFile(filepath.Join(dir, AxolotlConfig))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "message_field_training: weight") {
		t.Errorf("axolotl.yaml with masked steps does not read openai-chat's weights:\n%s", data)
	}
}
