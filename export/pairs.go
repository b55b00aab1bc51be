package export

import (
	"fmt"
	"iter"
	"path/filepath"
	"strings"

	"github.com/reactgen/reactgen/pipeline"
)

// isWrongAnswer reports whether a rejected episode is a failed trajectory usable as the
// rejected side of a preference pair: it finished, with a wrong answer.
func isWrongAnswer(r *pipeline.Rejected) bool {
	return r.Finished && !r.Correct && r.StopReason == pipeline.StopFinished && r.Walked()
}

// wrongQuestions is the first pass of export.pairs: the questions with a wrong finished
// trajectory among the rejected episodes (nil without pairs).
func wrongQuestions(cfg pipeline.ExportConfig, rejected func() iter.Seq2[pipeline.Rejected, error]) (map[string]bool, error) {
	if !cfg.Pairs || rejected == nil {
		return nil, nil
	}
	wrong := map[string]bool{}
	for r, err := range rejected() {
		if err != nil {
			return nil, fmt.Errorf("read rejected episodes: %w", err)
		}
		if isWrongAnswer(&r) {
			wrong[r.QuestionID] = true
		}
	}
	return wrong, nil
}

// pairFormat is one file of preference pairs: its name and the row written from the
// prompt, the chosen and the rejected completion.
type pairFormat struct {
	name, format string
	row          func(system, prompt, chosen, rejected string) any
}

// pairRow is a line of pairs.jsonl, TRL's standard preference format.
type pairRow struct {
	Prompt   string `json:"prompt"`
	Chosen   string `json:"chosen"`
	Rejected string `json:"rejected"`
}

// pairMessage, pairMessages and openAIPairRow are a line of pairs-openai.jsonl, OpenAI's
// preference fine-tuning format.
type pairMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type pairMessages struct {
	Messages []pairMessage `json:"messages"`
}

type openAIPairRow struct {
	Input        pairMessages  `json:"input"`
	Preferred    []pairMessage `json:"preferred_output"`
	NonPreferred []pairMessage `json:"non_preferred_output"`
}

// pairFormats: TRL's standard preference format, and OpenAI's preference fine-tuning
// format (the conversation so far as input, one assistant message on each side).
var pairFormats = []pairFormat{
	{"pairs", "pairs", func(_, prompt, chosen, rejected string) any {
		return pairRow{Prompt: prompt, Chosen: chosen, Rejected: rejected}
	}},
	{"pairs-openai", "pairs-openai", func(system, prompt, chosen, rejected string) any {
		in := []pairMessage{}
		if system != "" {
			in = append(in, pairMessage{RoleSystem, system})
		}
		in = append(in, pairMessage{RoleUser, strings.TrimSuffix(prompt, "\n")})
		return openAIPairRow{Input: pairMessages{in}, Preferred: []pairMessage{{RoleAssistant, chosen}},
			NonPreferred: []pairMessage{{RoleAssistant, rejected}}}
	}},
}

// writePairs writes one pairs file: for each wrong finished trajectory of a question that
// also has a kept one, a row with the kept trajectory chosen and the wrong one rejected.
func writePairs(stage string, cfg pipeline.ExportConfig, ropts RenderOptions,
	rejected func() iter.Seq2[pipeline.Rejected, error], chosen map[string]string, pf pairFormat) (File, int, error) {
	ext, err := jsonlExt(cfg.Compression)
	if err != nil {
		return File{}, 0, err
	}
	rel := pf.name + ext
	out, err := createOut(filepath.Join(stage, rel))
	if err != nil {
		return File{}, 0, err
	}
	enc, err := newJSONLEncoder(out, cfg.Compression, nil, nil, lineOptions{})
	if err != nil {
		out.close()
		return File{}, 0, err
	}
	n := 0
	for r, err := range rejected() {
		if err != nil {
			out.close()
			return File{}, 0, fmt.Errorf("read rejected episodes: %w", err)
		}
		c, ok := chosen[r.QuestionID]
		if !ok || !isWrongAnswer(&r) {
			continue
		}
		ex, err := Render(r.Episode, ViewReAct, ropts)
		if err != nil {
			out.close()
			return File{}, 0, err
		}
		prompt := ex.Prompt()
		if pf.format == "pairs" {
			prompt = completionPrompt(&ex, cfg.System)
		}
		if _, err := enc.writeRow(pf.row(cfg.System, prompt, c, ex.Completion())); err != nil {
			out.close()
			return File{}, 0, fmt.Errorf("write %s: %w", rel, err)
		}
		n++
	}
	if err := enc.finish(); err != nil {
		out.close()
		return File{}, 0, fmt.Errorf("write %s: %w", rel, err)
	}
	size, sum, err := out.close()
	if err != nil {
		return File{}, 0, err
	}
	return File{Path: rel, Format: pf.format, Rows: n, Bytes: size, SHA256: sum}, n, nil
}
