package react

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/jsonltest"
	"github.com/reactgen/reactgen/internal/shareddata"
)

// TestFireActGPT4 checks that every assistant turn of FireAct's GPT-4 trajectories
// parses to a thought and a valid action.
func TestFireActGPT4(t *testing.T) {
	path := shareddata.Path(t, "fireact/gpt_format_hotpotqa.jsonl")
	turns, extra := 0, 0
	type record struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	jsonltest.Each(t, path, func(line int, rec record) {
		for _, m := range rec.Messages {
			if m.Role != "assistant" {
				continue
			}
			turns++
			p := Step(m.Content, 0)
			if p.Extra {
				extra++ // GPT-4 once wrote five searches on one line; the first counts
			}
			if !p.Valid() || p.Thought == "" || p.Cut {
				t.Errorf("line %d: %q parsed to %+v", line, m.Content, p)
			}
		}
	})
	if turns == 0 {
		t.Fatal("no assistant turns read")
	}
	t.Logf("%d assistant turns, all valid; %d with several actions", turns, extra)
}

var thoughtLabel = regexp.MustCompile(`(?m)^Thought (\d+):`)

// TestReActTranscripts replays the paper's GPT-3 FEVER transcripts as completions: for
// each step, the text from after "Thought N:" to the end of the transcript, as a model
// that does not stop would write it. Each must give the step's own action and a cut.
func TestReActTranscripts(t *testing.T) {
	path := shareddata.Path(t, "react-transcripts/fever_dev_react_text-davinci-002.jsonl")
	actionLine := regexp.MustCompile(`(?m)^Action (\d+): (.*)$`)
	steps, valid, agree := 0, 0, 0
	type record struct {
		Transcript string `json:"transcript"`
	}
	jsonltest.Each(t, path, func(line int, rec record) {
		acts := actionLine.FindAllStringSubmatch(rec.Transcript, -1)
		for i, loc := range thoughtLabel.FindAllStringIndex(rec.Transcript, -1) {
			steps++
			p := Step(rec.Transcript[loc[1]:], i+1)
			if p.Valid() {
				valid++
			}
			if i < len(acts) && strings.EqualFold(strings.ReplaceAll(p.Action, " ", ""), strings.ReplaceAll(acts[i][2], " ", "")) {
				agree++
			}
			if i < len(acts)-1 && !p.Cut {
				t.Errorf("line %d step %d: not cut at the model's own observation", line, i+1)
			}
		}
	})
	if steps == 0 {
		t.Fatal("no steps read")
	}
	t.Logf("%d steps: %d valid actions (%.1f%%), %d equal to the transcript's action line", steps, valid, 100*float64(valid)/float64(steps), agree)
	if valid < steps*95/100 {
		t.Errorf("valid actions: got %d of %d, want at least 95%%", valid, steps)
	}
}

// TestLlamaParseRate measures the parse rate on the raw output of FireAct's fine-tuned
// Llama-2-7B: each assistant turn is the text between two observations.
func TestLlamaParseRate(t *testing.T) {
	path := shareddata.Path(t, "fireact/trajs_hotpotqa_dev_llama2-7b-lora.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs map[string]struct {
		Traj string `json:"traj"`
	}
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	obs := regexp.MustCompile(`(?m)^Observation[^\n]*(\n|$)`)
	turns, valid, extra, reflect := 0, 0, 0, 0
	for idx, r := range recs {
		resp := r.Traj
		i := strings.Index(resp, "### Response:")
		if i < 0 {
			t.Errorf("record %s: no response marker", idx)
			continue
		}
		resp = resp[i+len("### Response:"):]
		prev := 0
		for _, loc := range obs.FindAllStringIndex(resp, -1) {
			chunk := resp[prev:loc[1]] // the turn plus the observation label that ends it
			prev = loc[1]
			if strings.TrimSpace(chunk) == "" {
				continue
			}
			turns++
			p := Step(chunk, 0)
			if p.Valid() {
				valid++
			} else if strings.HasPrefix(strings.ToLower(p.Action), "reflect[") {
				reflect++ // a tool the agent was never given: truly invalid, not a parse miss
			}
			if p.Extra {
				extra++
			}
		}
	}
	if turns == 0 {
		t.Fatal("no turns read")
	}
	rate := float64(valid) / float64(turns)
	t.Logf("llama-2-7b: %d turns, %d with a valid action (%.2f%%), %d reflect[...] calls, %d with extra actions", turns, valid, 100*rate, reflect, extra)
	if rate < 0.9 {
		t.Errorf("parse rate %.3f, want at least 0.9", rate)
	}
}
