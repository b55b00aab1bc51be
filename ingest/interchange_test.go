package ingest

import (
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/export"
	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/filetest"
	"github.com/reactgen/reactgen/pipeline"
)

// roundTripEpisodes are episodes whose every carried field is set: reasoning, calls with
// usage, cost, cache, log-probabilities and token ids (one step asked twice), an invalid
// action, a Lookup, texts that need escaping, a wrong answer kept with its verdict.
func roundTripEpisodes() []pipeline.Episode {
	a := episodetest.Small()
	a.ID, a.QuestionID, a.Policy = "rt-a", "qa", "qwen3"
	a.Steps[0].Reasoning = "The museum's page says where.\n"
	a.Steps[0].Calls = []pipeline.Call{{Model: "qwen3", Usage: pipeline.Usage{PromptTokens: 120, CompletionTokens: 9, TotalTokens: 129,
		CostUSD: 0.000125, CachedTokens: 64}, Logprobs: []float64{-0.5, -0.0625}, PromptTokenIDs: []int64{151644, 872}, CompletionTokenIDs: []int64{785, 13}}}
	a.Steps[1].Calls = []pipeline.Call{
		{Model: "qwen3", Bad: true, Usage: pipeline.Usage{PromptTokens: 150, CompletionTokens: 4, TotalTokens: 154}},
		{Model: "qwen3", Usage: pipeline.Usage{PromptTokens: 150, CompletionTokens: 7, TotalTokens: 157, CostUSD: 0.0002}, Logprobs: []float64{-0.25}, CompletionTokenIDs: []int64{46}},
	}
	b := episodetest.Episode("rt-b", "qb", "Search[Ünïcode <&> \"quotes\"]", "Lookup[tab\there]", "Dance[wildly]", "Finish[Aldbrook]")
	b.Steps[0].Argument, b.Steps[1].Argument, b.Steps[3].Argument = "Ünïcode <&> \"quotes\"", "tab\there", episodetest.Answer
	b.Steps[0].Observation = "Line one\nline two \\ backslash \u2028 separator </script>"
	b.Steps[2].ActionType, b.Steps[2].Observation = pipeline.ActionInvalid, "Invalid action: Dance[wildly]"
	c := episodetest.Episode("rt-c", "qc", "Search[Kelmor]", "Finish[Aust]")
	c.Steps[0].Argument, c.Steps[1].Argument = "Kelmor", "Aust"
	c.Prediction, c.Correct, c.EM, c.F1 = "Aust", false, 0, 0.5
	return []pipeline.Episode{a, b, c}
}

// carried is what the interchange format keeps of an episode: every field reactgen
// writes into it. ATIF keeps per step one metrics object: the calls' usage summed, the
// log-probabilities and token ids of the step's last call (the completion it was read
// from), the model, and the number of requests; ADP keeps no calls.
func carried(ep pipeline.Episode, format string, imported bool) pipeline.Episode {
	out := pipeline.Episode{ID: ep.ID, Task: ep.Task, QuestionID: ep.QuestionID, Question: ep.Question, Answer: ep.Answer,
		Prediction: ep.Prediction, Correct: ep.Correct, EM: ep.EM, F1: ep.F1, Method: ep.Method, Policy: ep.Policy,
		Finished: ep.Finished, StopReason: ep.StopReason}
	for i, s := range ep.Steps {
		st := pipeline.Step{Thought: s.Thought, Action: s.Action, ActionType: s.ActionType, Argument: s.Argument,
			Observation: s.Observation, Reasoning: s.Reasoning}
		if i == len(ep.Steps)-1 && s.ActionType == pipeline.ActionFinish {
			st.Observation = "" // what the environment said to the closing Finish: no format exports it
		}
		if format == "atif" && len(s.Calls) > 0 {
			if imported {
				st.Calls = s.Calls
			} else {
				c := pipeline.Call{Reasoning: s.Reasoning}
				for _, x := range s.Calls {
					c.Model = x.Model
					c.Usage = c.Usage.Add(pipeline.Usage{PromptTokens: x.Usage.PromptTokens, CompletionTokens: x.Usage.CompletionTokens,
						TotalTokens: x.Usage.PromptTokens + x.Usage.CompletionTokens, CostUSD: x.Usage.CostUSD, CachedTokens: x.Usage.CachedTokens})
					c.Logprobs, c.PromptTokenIDs, c.CompletionTokenIDs = x.Logprobs, x.PromptTokenIDs, x.CompletionTokenIDs
				}
				st.Calls = []pipeline.Call{c}
				out.LLMCalls += len(s.Calls)
			}
			out.Usage = out.Usage.Add(st.Calls[0].Usage)
		}
		out.Steps = append(out.Steps, st)
	}
	if imported {
		out.LLMCalls = ep.LLMCalls
	}
	return out
}

// TestInterchangeRoundTrip exports episodes to adp and atif and imports the files back:
// every field the format carries comes back equal.
func TestInterchangeRoundTrip(t *testing.T) {
	eps := roundTripEpisodes()
	dir := filepath.Join(t.TempDir(), "export")
	res, err := export.Run(t.Context(), export.RunOptions{Dir: dir,
		Config: pipeline.ExportConfig{Formats: []string{"adp", "atif"}, Views: []string{export.ViewReAct}, System: "Answer.", ValidationFraction: 0.5, SplitSeed: 3},
		Kept:   func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(eps) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"adp", "atif"} {
		t.Run(format, func(t *testing.T) {
			var files []string
			for _, f := range res.Files {
				if f.Format == format {
					files = append(files, filepath.Join(dir, f.Path))
				}
			}
			got, rep := collect(t, Options{Format: format}, files...)
			if rep.Imported != len(eps) || rep.Skipped != 0 {
				t.Fatalf("imported %d of %d (skipped %d)", rep.Imported, len(eps), rep.Skipped)
			}
			byID := map[string]pipeline.Episode{}
			for _, ep := range got {
				byID[ep.ID] = ep
			}
			for _, want := range eps {
				g, ok := byID[want.ID]
				if !ok {
					t.Errorf("episode %s did not come back", want.ID)
					continue
				}
				w, gc := carried(want, format, false), carried(g, format, true)
				if !reflect.DeepEqual(gc, w) {
					t.Errorf("episode %s:\ngot  %+v\nwant %+v", want.ID, gc, w)
				}
			}
		})
	}
}

// TestImportInterchangeTaskMismatch: a FEVER trajectory imported as HotpotQA fails,
// naming the flag that fixes it.
func TestImportInterchangeTaskMismatch(t *testing.T) {
	ep := episodetest.Small()
	ep.Task, ep.Question, ep.Answer, ep.Prediction = pipeline.TaskFEVER, "The museum is in Oslo.", pipeline.LabelSupports, pipeline.LabelSupports
	ep.Steps[1].Action, ep.Steps[1].Argument = "Finish[SUPPORTS]", pipeline.LabelSupports
	dir := filepath.Join(t.TempDir(), "export")
	if _, err := export.Run(t.Context(), export.RunOptions{Dir: dir, Config: pipeline.ExportConfig{Formats: []string{"atif"}},
		Kept: func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq([]pipeline.Episode{ep}) }}); err != nil {
		t.Fatal(err)
	}
	_, err := Import(t.Context(), Options{Format: "atif"}, []string{filepath.Join(dir, "atif.train.jsonl")}, func(pipeline.Episode) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "--task fever") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("got %v, want the line and --task fever named", err)
	}
	eps, _ := collect(t, Options{Format: "atif", Task: pipeline.TaskFEVER}, filepath.Join(dir, "atif.train.jsonl"))
	if len(eps) != 1 || eps[0].Prediction != pipeline.LabelSupports || !eps[0].Correct {
		t.Errorf("imported as fever: %+v", eps)
	}
}

// TestImportADPSamples reads ADP standardized trajectories shaped like the samples ADP
// publishes (datasets/*/sample_std.json: a JSON array; the older ones without
// schema_version and with what the agent said as a text_observation of source "agent",
// the newer with schema_version, environment observations and reasoning_content), from
// another corpus: a Wikipedia question answered with search and finish, and one whose
// tools are not ReAct's.
func TestImportADPSamples(t *testing.T) {
	eps, rep := collect(t, Options{Format: "adp", Gold: filepath.Join("testdata", "interchange_gold.jsonl")}, filepath.Join("testdata", "adp_sample_std.json"))
	if rep.Read != 3 || rep.Imported != 3 {
		t.Fatalf("report %+v, want 3 read and imported", rep)
	}
	wiki := eps[0]
	if wiki.Question != "Which river runs through Kelmor?" || wiki.Policy != "import:adp" || wiki.Method != "react" {
		t.Errorf("question %q, policy %q, method %q", wiki.Question, wiki.Policy, wiki.Method)
	}
	wantSteps := []pipeline.Step{
		{Thought: "I should search Kelmor.", Action: "Search[Kelmor]", ActionType: "search", Argument: "Kelmor",
			Observation: "Kelmor is a town on the river Aust."},
		{Thought: "The river is the Aust.", Action: "Finish[Aust]", ActionType: "finish", Argument: "Aust"},
	}
	if !reflect.DeepEqual(wiki.Steps, wantSteps) {
		t.Errorf("steps:\ngot  %+v\nwant %+v", wiki.Steps, wantSteps)
	}
	if !wiki.Finished || !wiki.Correct || wiki.Answer != "Aust" || wiki.EM != 1 {
		t.Errorf("outcome: finished %v correct %v answer %q em %v", wiki.Finished, wiki.Correct, wiki.Answer, wiki.EM)
	}
	newer := eps[1]
	if newer.Question != "Who founded the Lantern Museum?" || len(newer.Steps) != 3 || newer.Steps[1].Reasoning != "The founder is named on the page." ||
		newer.Steps[1].Action != "Lookup[founded]" || newer.Steps[2].Action != "Finish[Ada Brell]" || !newer.Correct {
		t.Errorf("newer sample: %+v", newer)
	}
	kg := eps[2]
	if len(kg.Steps) != 3 || kg.Steps[0].ActionType != pipeline.ActionInvalid || kg.Steps[0].Action != "get_relations[Kerosene]" ||
		kg.Steps[1].Action != `intersection[{"a":"#0","b":"#1"}]` || kg.Steps[2].Action != "Finish[#2]" || kg.Correct {
		t.Errorf("a trajectory of other tools: %+v", kg.Steps)
	}
}

// TestImportATIFSamples reads ATIF trajectories as other agents write them: a JSON array
// (as ADP's sample_atif.json), and one pretty-printed document (as Harbor's
// trajectory.json), with multimodal content parts, two calls in one step and a closing
// text answer.
func TestImportATIFSamples(t *testing.T) {
	gold := filepath.Join("testdata", "interchange_gold.jsonl")
	eps, rep := collect(t, Options{Format: "atif", Gold: gold}, filepath.Join("testdata", "atif_samples.json"), filepath.Join("testdata", "atif_trajectory.json"))
	if rep.Imported != 3 {
		t.Fatalf("report %+v, want 3 imported", rep)
	}
	first := eps[0]
	wantSteps := []pipeline.Step{
		{Thought: "I should search Kelmor.", Reasoning: "Kelmor is a town; its page names the river.", Action: "Search[Kelmor]", ActionType: "search",
			Argument: "Kelmor", Observation: "Kelmor is a town on the river Aust."},
		{Thought: "The river is the Aust.", Action: "Finish[Aust]", ActionType: "finish", Argument: "Aust"},
	}
	for i := range first.Steps {
		first.Steps[i].Calls = nil
	}
	if !reflect.DeepEqual(first.Steps, wantSteps) || !first.Correct {
		t.Errorf("steps:\ngot  %+v\nwant %+v", first.Steps, wantSteps)
	}
	if eps[0].Usage.PromptTokens != 200 || eps[0].Usage.CompletionTokens != 30 || eps[0].LLMCalls != 2 {
		t.Errorf("usage %+v, %d calls", eps[0].Usage, eps[0].LLMCalls)
	}
	two := eps[1]
	if len(two.Steps) != 3 || two.Steps[0].Thought != "Search both." || two.Steps[1].Thought != "" ||
		two.Steps[0].Observation != "Ada Brell founded the Lantern Museum." || two.Steps[1].Observation != "The Lantern Museum is in Oslo.\n[image: shots/museum.png]" ||
		two.Steps[2].Action != "Finish[Ada Brell]" || !two.Correct {
		t.Errorf("two calls in one step: %+v", two.Steps)
	}
	harbor := eps[2]
	if harbor.Question != "Which river runs through Kelmor?" || len(harbor.Steps) != 2 || harbor.Steps[1].Action != "Finish[The Aust.]" {
		t.Errorf("pretty-printed trajectory: %+v", harbor)
	}
}

// TestImportInterchangeBadInput: what is not a trajectory fails with the file and record.
func TestImportInterchangeBadInput(t *testing.T) {
	tests := []struct{ format, name, body, want string }{
		{"adp", "bad.jsonl", `{"id": "x", "content": [{"class_": "tool_action"}]}` + "\n", `line 1: bad record: content item 0: class_ "tool_action"`},
		{"adp", "bad.json", "[\n  {\"id\": 1}\n]\n", "record 1: bad record: not an ADP trajectory"},
		{"atif", "bad.jsonl", `{"schema_version": "v2", "steps": []}` + "\n", `line 1: bad record: schema_version "v2" is not ATIF-v1.x`},
		{"atif", "bad2.jsonl", `{"schema_version": "ATIF-v1.7", "steps": [{"step_id": 1, "source": "tool", "message": "x"}]}` + "\n", `step 1: source "tool"`},
	}
	for _, tt := range tests {
		t.Run(tt.format+"/"+tt.name, func(t *testing.T) {
			path := filetest.Write(t, tt.name, tt.body)
			_, err := Import(t.Context(), Options{Format: tt.format}, []string{path}, func(pipeline.Episode) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("got %v, want %q and the path", err, tt.want)
			}
		})
	}
}

// TestImportADPRepositorySamples reads every sample_std.json and sample_atif.json of a
// checkout of ADP's repository, when REACTGEN_ADP_REPO names one (tests have no network):
// every file reads without error; a trajectory that holds no question or no step (a GUI
// task given as the agent's own message, say) is skipped under SkipBad and counted.
func TestImportADPRepositorySamples(t *testing.T) {
	root := os.Getenv("REACTGEN_ADP_REPO")
	if root == "" {
		t.Skip("REACTGEN_ADP_REPO names no checkout of neulab/agent-data-protocol")
	}
	for format, name := range map[string]string{"adp": "sample_std.json", "atif": "sample_atif.json"} {
		files, err := filepath.Glob(filepath.Join(root, "datasets", "*", name))
		if err != nil {
			t.Fatal(err)
		}
		n, skipped := 0, 0
		for _, f := range files {
			eps, rep := collect(t, Options{Format: format, SkipBad: true}, f)
			n += len(eps)
			skipped += rep.Skipped
			t.Logf("%s: %d imported, %d skipped", f, rep.Imported, rep.Skipped)
		}
		t.Logf("%s: %d files, %d episodes, %d skipped", name, len(files), n, skipped)
	}
}
