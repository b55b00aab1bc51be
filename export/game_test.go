package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// gameEpisode is a finished ReAct episode of a game task, its steps the actions as
// written (typed as generate types them) with their observations; a think action is
// answered "OK.". The last action ended the game with reward.
func gameEpisode(task, id, question string, reward float64, steps ...[2]string) pipeline.Episode {
	ep := pipeline.Episode{
		Schema: pipeline.SchemaVersion, ID: id, RunID: "run-game", Task: task, QuestionID: task + "-" + id, Question: question,
		Method: pipeline.MethodReAct, Policy: "test-model", Format: "completion", Finished: true, Correct: reward == 1,
		Reward: &reward, StopReason: pipeline.StopFinished,
	}
	for _, s := range steps {
		name, _, ok := tool.ParseCommand(task, s[0])
		if !ok {
			panic(fmt.Sprintf("%s: %q is no action of the game", task, s[0]))
		}
		arg := s[0]
		if i, j := strings.Index(arg, "["), strings.LastIndex(arg, "]"); task == pipeline.TaskWebShop && i >= 0 && j > i {
			arg = arg[i+1 : j]
		} else if task == pipeline.TaskALFWorld {
			_, arg, _ = strings.Cut(strings.TrimPrefix(arg, "think:"), " ")
		}
		ep.Steps = append(ep.Steps, pipeline.Step{Action: s[0], ActionType: name, Argument: arg, Observation: s[1]})
	}
	ep.Prediction = ep.Steps[len(ep.Steps)-1].Action
	return ep
}

// gameEpisodes are an ALFWorld win and a WebShop purchase (reward 1) and a WebShop
// near-miss (reward 0.5), each with think steps whose thoughts hold "PLAN".
func gameEpisodes() []pipeline.Episode {
	alf := gameEpisode(pipeline.TaskALFWorld, "alf-1", "You are in the middle of a room. Looking quickly around you, you see a desk 1 and a shelf 1.\nYour task is to: put a mug in shelf.", 1,
		[2]string{"think: PLAN: first I need a mug; it may be on the desk.", "OK."},
		[2]string{"go to desk 1", "On the desk 1, you see a mug 1."},
		[2]string{"take mug 1 from desk 1", "You pick up the mug 1 from the desk 1."},
		[2]string{"think: PLAN: now I put it on the shelf.", "OK."},
		[2]string{"go to shelf 1", "On the shelf 1, you see nothing."},
		[2]string{"put mug 1 in/on shelf 1", "You put the mug 1 in/on the shelf 1."})
	alf.QuestionType = "pick_and_place_simple-Mug-None-Shelf-1/trial_1"
	shop := func(id string, reward float64, option string) pipeline.Episode {
		return gameEpisode(pipeline.TaskWebShop, id, "WebShop [SEP] Instruction: [SEP] i need a pack of 3 feather quill pens with ink [SEP] Search", reward,
			[2]string{"search[feather quill pen ink]", "[Back to Search] [SEP] Page 1 (Total results: 1) [SEP] [Next >] [SEP] B0QUILL001 [SEP] Feather Quill Pen Set [SEP] $12.99"},
			[2]string{"think[PLAN: B0QUILL001 has ink; I will open it.]", "OK."},
			[2]string{"click[B0QUILL001]", "[Back to Search] [SEP] [< Prev] [SEP] size [SEP] pack of 1 [SEP] pack of 3 [SEP] Feather Quill Pen Set [SEP] Buy Now"},
			[2]string{"click[" + option + "]", "You have clicked " + option + "."},
			[2]string{"click[Buy Now]", fmt.Sprintf("Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0) [SEP] %g", reward)})
	}
	return []pipeline.Episode{alf, shop("shop-1", 1, "pack of 3"), shop("shop-2", 0.5, "pack of 1")}
}

// TestGameRewardInEveryFormat exports game episodes to every format and finds each
// episode's reward where a format can carry it: the Arrow and Parquet reward column (null
// for a Wikipedia episode), ADP's details and the reward of its last item, ATIF's extra;
// the ADP and ATIF rows, games' included, pass the formats' schemas.
func TestGameRewardInEveryFormat(t *testing.T) {
	eps := append(gameEpisodes(), episodetest.Small())
	rewards := map[string]*float64{}
	for _, ep := range eps {
		rewards[ep.ID] = ep.Reward
	}
	cfg := pipeline.ExportConfig{Formats: Formats(), Views: []string{ViewReAct, ViewAct}, ValidationFraction: 0}
	res, dir := runExport(t, cfg, func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(eps) })
	adpSchema, atifSchema := compileSchema(t, "adp-1.2.0.schema.json"), compileSchema(t, "atif-v1.7.schema.json")
	checked := map[string]int{}
	for _, f := range res.Files {
		path := filepath.Join(dir, f.Path)
		var exs []Example
		switch {
		case f.Format == "parquet" || f.Format == "arrow-file" || f.Format == "arrow" && strings.HasSuffix(f.Path, ".arrow"):
			exs = readExamples(t, f.Format, path)
		case f.Format == "adp" || f.Format == "atif":
			for i, line := range lines(t, path) {
				var row struct {
					Content []struct {
						Reward *float64 `json:"reward"`
					} `json:"content"`
					Details struct {
						EpisodeID string `json:"episode_id"`
						Reward    string `json:"reward"`
					} `json:"details"`
					Extra struct {
						EpisodeID string   `json:"episode_id"`
						Reward    *float64 `json:"reward"`
					} `json:"extra"`
				}
				if err := json.Unmarshal(line, &row); err != nil {
					t.Fatalf("%s line %d: %v", f.Path, i+1, err)
				}
				schema := atifSchema
				if f.Format == "adp" {
					schema = adpSchema
				} else if err := atifRules(line); err != nil {
					t.Errorf("%s line %d: %v", f.Path, i+1, err)
				}
				if err := validateJSON(schema, line); err != nil {
					t.Errorf("%s line %d: schema: %v", f.Path, i+1, err)
				}
				id, got := row.Extra.EpisodeID, row.Extra.Reward
				if f.Format == "adp" {
					id = row.Details.EpisodeID
					last := row.Content[len(row.Content)-1].Reward
					if want := fmt.Sprint(deref(rewards[id])); (rewards[id] == nil) != (row.Details.Reward == "") || (rewards[id] != nil && row.Details.Reward != want) {
						t.Errorf("%s line %d (%s): details reward %q, want %s", f.Path, i+1, id, row.Details.Reward, want)
					}
					for k, c := range row.Content[:len(row.Content)-1] {
						if c.Reward != nil {
							t.Errorf("%s line %d: item %d carries reward %v, want only the last", f.Path, i+1, k, *c.Reward)
						}
					}
					got = last
				}
				if !sameReward(got, rewards[id]) {
					t.Errorf("%s line %d (%s): reward %v, want %v", f.Path, i+1, id, deref(got), deref(rewards[id]))
				}
				checked[f.Format]++
			}
			continue
		default:
			continue
		}
		for _, ex := range exs {
			if !sameReward(ex.Reward, rewards[ex.ID]) {
				t.Errorf("%s (%s): reward column %v, want %v", f.Path, ex.ID, deref(ex.Reward), deref(rewards[ex.ID]))
			}
			checked[f.Format]++
		}
	}
	for _, format := range []string{"parquet", "arrow", "arrow-file", "adp", "atif"} {
		if checked[format] != 2*len(eps) {
			t.Errorf("%s: %d rows checked, want %d (two views)", format, checked[format], 2*len(eps))
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func sameReward(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// TestGameActViewDropsThinks exports ALFWorld and WebShop ReAct episodes in the act view
// to every format: no row holds a think action, its "OK." or think among the tools, as
// the paper's act prompts have none; the react view keeps them all. ADP's actions are
// calls of the games' own tools, as its metadata declares them.
func TestGameActViewDropsThinks(t *testing.T) {
	eps := gameEpisodes()
	cfg := pipeline.ExportConfig{Formats: Formats(), Views: []string{ViewReAct, ViewAct}, ValidationFraction: 0}
	res, dir := runExport(t, cfg, func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(eps) })
	var meta struct {
		CustomTools []toolDef `json:"custom_tools"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, ADPMetadata)), &meta); err != nil {
		t.Fatal(err)
	}
	tools, err := toolSchemas(meta.CustomTools)
	if err != nil {
		t.Fatalf("%s: %v", ADPMetadata, err)
	}
	seen := map[string]bool{}
	for _, f := range res.Files {
		if f.View == "" {
			continue // the view-less files: hand-off configs, ADP's metadata of every tool
		}
		path := filepath.Join(dir, f.Path)
		var rows [][]byte
		switch {
		case f.Format == "parquet" || f.Format == "arrow-file" || f.Format == "arrow" && strings.HasSuffix(f.Path, ".arrow"):
			rows = examplesJSON(t, readExamples(t, f.Format, path))
		case strings.HasSuffix(f.Path, ".jsonl"):
			rows = lines(t, path)
		default:
			continue
		}
		if len(rows) == 0 {
			t.Errorf("%s: no row", f.Path)
		}
		thinks := 0 // rows with a think (the per-step formats' rows hold one step each)
		for i, row := range rows {
			if f.Format == "adp" {
				// Each action an api_action of the game's action set, as the metadata declares it.
				if err := adpRules(row, tools); err != nil {
					t.Errorf("%s row %d: %v", f.Path, i+1, err)
				}
				if bytes.Contains(row, []byte(`"message_action"`)) {
					t.Errorf("%s row %d: an action the game's tools do not express: %.300s", f.Path, i+1, row)
				}
			}
			has := bytes.Contains(row, []byte("think")) || bytes.Contains(row, []byte("PLAN")) || bytes.Contains(row, []byte("OK."))
			if f.View == ViewAct && has {
				t.Errorf("%s row %d: the act view holds a think step: %.400s", f.Path, i+1, row)
			}
			if has {
				thinks++
			}
		}
		if f.View == ViewReAct && thinks == 0 {
			t.Errorf("%s: the react view lost its think steps", f.Path)
		}
		seen[f.Format+"/"+f.View] = true
	}
	for _, format := range Formats() {
		for _, v := range []string{ViewReAct, ViewAct} {
			if !seen[format+"/"+v] {
				t.Errorf("format %s, view %s: no file checked", format, v)
			}
		}
	}
	// The act view's trajectory: the other actions, each with its observation, in order.
	for _, ep := range eps {
		ex, err := Render(ep, ViewAct, RenderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, s := range ep.Steps {
			if s.ActionType != pipeline.ActionThink {
				want = append(want, s.Action+" -> "+s.Observation)
			}
		}
		var got []string
		for _, s := range ex.Steps {
			got = append(got, s.Action+" -> "+s.Observation)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") || ex.NSteps != int64(len(want)) {
			t.Errorf("%s: act steps\n%s\nwant\n%s", ep.ID, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if n := len(ex.Messages); n != 2*len(want) || ex.Messages[n-1].Content != "Action: "+ep.Prediction {
			t.Errorf("%s: %d turns ending %q, want %d ending the game's last action", ep.ID, n, ex.Messages[n-1].Content, 2*len(want))
		}
	}
}

// TestGameActViewKeepsMasks: a masked step keeps its mark in the act view under its new
// number, and a masked think step leaves with the step.
func TestGameActViewKeepsMasks(t *testing.T) {
	ep := gameEpisodes()[0] // think, go, take, think, go, put
	ep.MaskedSteps = []pipeline.MaskedStep{{Step: 1, Code: "c"}, {Step: 5, Code: "repeated"}}
	ex, err := Render(ep, ViewAct, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Steps) != 4 || ex.Steps[2].Action != "go to shelf 1" || !ex.isMasked(2) || len(ex.masked) != 1 {
		t.Fatalf("act steps %d, masked %v; want go to shelf 1 (step 3 of 4) masked alone", len(ex.Steps), ex.masked)
	}
	for _, m := range ex.Messages {
		if m.Role == RoleAssistant && m.Trainable == (m.Content == "Action: go to shelf 1") {
			t.Errorf("turn %q: trainable %v", m.Content, m.Trainable)
		}
	}
	if err := Validate(&ex, ValidateOptions{}); err != nil {
		t.Error(err)
	}
	if len(ep.Steps) != 6 || ep.MaskedSteps[1].Step != 5 {
		t.Error("Render changed the episode it was handed")
	}
}

// examplesJSON encodes decoded rows as JSON lines, for a text check.
func examplesJSON(t *testing.T, exs []Example) [][]byte {
	t.Helper()
	out := make([][]byte, len(exs))
	for i := range exs {
		b, err := json.Marshal(&exs[i])
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}
