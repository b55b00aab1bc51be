package export

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

// TestMaskedStepsCarryNoLoss: the steps the filter masked stay in the trajectory with no
// loss on them in every format that can say so (openai-chat weight 0, openai-tools weight
// 0, axolotl-chat train false, agentgym loss false, Arrow trainable false, no completion
// row), every other assistant turn keeps weight 1, and the card counts the turns with
// weight 0. A format that cannot leave a turn untrained fails the export, naming the keys.
func TestMaskedStepsCarryNoLoss(t *testing.T) {
	const n = 10
	masks := 0
	mod := func(i int, ep *pipeline.Episode) {
		if i%2 == 0 && len(ep.Steps) > 2 {
			ep.MaskedSteps = []pipeline.MaskedStep{{Step: 2, Code: "repeated_search"}}
		}
	}
	steps := 0
	for i := range n {
		ep := episodetest.Synth(i)
		mod(i, &ep)
		masks += len(ep.MaskedSteps)
		steps += len(ep.Steps)
	}
	cfg := pipeline.ExportConfig{Formats: []string{"openai-chat", "openai-tools", "axolotl-chat", "agentgym", "completion", "arrow-file"},
		Weights: true, Views: []string{ViewReAct, ViewAct}}
	res, dir := runExport(t, cfg, episodetest.Stream(n, mod))
	if res.Masked[ViewReAct] != masks || res.Trained[ViewReAct] != steps-masks {
		t.Errorf("masked %v, trained %v: want %d masked and %d trained turns", res.Masked, res.Trained, masks, steps-masks)
	}
	weights := map[float64]int{}
	for _, row := range readJSONLRows(t, filepath.Join(dir, "openai-chat.train.jsonl")) {
		msgs := row["messages"].([]any)
		for i, x := range msgs {
			m := x.(map[string]any)
			if m["role"] != "assistant" {
				continue
			}
			w := m["weight"].(float64)
			weights[w]++
			if w == 0 && (i != 3 || !strings.Contains(m["content"].(string), "Action: ")) {
				t.Errorf("weight 0 on turn %d %q, want it only on step 2", i, m["content"])
			}
		}
	}
	if weights[0] != masks || weights[1] != steps-masks {
		t.Errorf("openai-chat weights %v: want %d at 0 and %d at 1", weights, masks, steps-masks)
	}
	toolZero := 0
	for _, row := range readJSONLRows(t, filepath.Join(dir, "openai-tools.train.jsonl")) {
		for _, x := range row["messages"].([]any) {
			if m := x.(map[string]any); m["role"] == "assistant" && m["weight"].(float64) == 0 {
				toolZero++
			}
		}
	}
	axolotlOff, gymOff := 0, 0
	for _, row := range readJSONLRows(t, filepath.Join(dir, "axolotl-chat.train.jsonl")) {
		for _, x := range row["messages"].([]any) {
			if m := x.(map[string]any); m["role"] == "assistant" && m["train"] == false {
				axolotlOff++
			}
		}
	}
	for _, row := range readJSONLRows(t, filepath.Join(dir, "agentgym.train.jsonl")) {
		for _, x := range row["conversations"].([]any) {
			if m := x.(map[string]any); m["from"] == "gpt" && m["loss"] == false {
				gymOff++
			}
		}
	}
	arrowOff := 0
	for _, ex := range readExamples(t, "arrow-file", filepath.Join(dir, "dataset.arrow")) {
		for _, m := range ex.Messages {
			if m.Role == RoleAssistant && !m.Trainable {
				arrowOff++
			}
		}
	}
	if toolZero != masks || axolotlOff != masks || gymOff != masks || arrowOff != masks {
		t.Errorf("untrained assistant turns: openai-tools %d, axolotl %d, agentgym %d, arrow %d; want %d each", toolZero, axolotlOff, gymOff, arrowOff, masks)
	}
	if rows := readJSONLRows(t, filepath.Join(dir, "completion.train.jsonl")); len(rows) != steps-masks {
		t.Errorf("completion: %d rows, want one per unmasked step (%d)", len(rows), steps-masks)
	}
	card, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "| react | 10 | 0 | " + itoa(steps-masks) + " | " + itoa(masks) + " |"; !strings.Contains(string(card), want) {
		t.Errorf("card has no %q:\n%s", want, card)
	}

	for _, bad := range []pipeline.ExportConfig{
		{Formats: []string{"openai-chat"}},
		{Formats: []string{"sharegpt"}},
		{Formats: []string{"completion"}, TrainObservations: true},
	} {
		_, err := Run(t.Context(), RunOptions{Config: bad, Dir: t.TempDir(), Kept: episodetest.Stream(n, mod)})
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "filter.mask_steps") || !strings.Contains(err.Error(), bad.Formats[0]) {
			t.Errorf("%v: got %v, want a ValidationError naming the format and filter.mask_steps", bad.Formats, err)
		}
	}
}
