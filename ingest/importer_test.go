package ingest

import (
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/filter"
	"github.com/reactgen/reactgen/internal/filetest"
	"github.com/reactgen/reactgen/internal/jsonltest"
	"github.com/reactgen/reactgen/internal/react"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
)

func TestParseReward(t *testing.T) {
	tests := []struct {
		in          string
		correct, ok bool
	}{
		{"Episode finished, reward = True", true, true},
		{"Episode finished, reward = 1", true, true},
		{"Episode finished, reward = 1.0", true, true},
		{"Episode finished, reward = False", false, true},
		{"Episode finished, reward = 0", false, true},
		{"episode finished reward=true", true, true},
		{"The Velmar Bridge is a bridge.", false, false},
		{"Episode finished, reward = maybe", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, ok := ParseReward(tt.in)
			if c != tt.correct || ok != tt.ok {
				t.Errorf("ParseReward(%q): got (%v, %v), want (%v, %v)", tt.in, c, ok, tt.correct, tt.ok)
			}
		})
	}
}

func collect(t *testing.T, opts Options, files ...string) ([]pipeline.Episode, Report) {
	t.Helper()
	var eps []pipeline.Episode
	rep, err := Import(t.Context(), opts, files, func(ep pipeline.Episode) error { eps = append(eps, ep); return nil })
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return eps, rep
}

const chatFixture = `{"messages": [{"role": "system", "content": "Answer questions."}, {"role": "user", "content": "Which river runs through Carrow?"}, {"role": "assistant", "content": "Thought: I should search Carrow.\nAction: search[Carrow]"}, {"role": "user", "content": "Observation: Carrow is a town on the Aldbrook."}, {"role": "assistant", "content": "Thought: It is the Aldbrook.\nAction: finish[Aldbrook]"}, {"role": "user", "content": "Observation: Episode finished, reward = True"}]}
{"messages": [{"role": "user", "content": "Which river runs through Carrow?"}, {"role": "assistant", "content": "Thought: Guess.\nAction: finish[Velmar]"}, {"role": "user", "content": "Observation: Episode finished, reward = False"}]}
`

func TestImportChat(t *testing.T) {
	p := filetest.Write(t, "chat.jsonl", chatFixture)
	eps, rep := collect(t, Options{Format: "openai-chat"}, p)
	if rep != (Report{Read: 2, Imported: 2, Correct: 1}) {
		t.Errorf("report: got %+v", rep)
	}
	if len(eps) != 2 {
		t.Fatalf("episodes: got %d, want 2", len(eps))
	}
	ep := eps[0]
	if ep.Question != "Which river runs through Carrow?" || ep.Prediction != "Aldbrook" || !ep.Correct || !ep.Finished ||
		ep.StopReason != pipeline.StopFinished || ep.Policy != "import:openai-chat" || ep.Method != "react" || len(ep.Steps) != 2 {
		t.Errorf("episode 0: got %+v", ep)
	}
	if s := ep.Steps[0]; s.Thought != "I should search Carrow." || s.Action != "Search[Carrow]" || s.Observation != "Carrow is a town on the Aldbrook." {
		t.Errorf("step 0: got %+v", s)
	}
	if eps[1].QuestionID != ep.QuestionID || eps[1].Attempt != 1 || eps[1].ID == ep.ID || eps[1].Correct {
		t.Errorf("episode 1: got qid %s attempt %d id %s correct %v", eps[1].QuestionID, eps[1].Attempt, eps[1].ID, eps[1].Correct)
	}
	if want := pipeline.EpisodeID("hotpotqa", ep.QuestionID, "import-openai-chat", 0, false); ep.ID != want {
		t.Errorf("id: got %s, want %s", ep.ID, want)
	}

	// With a gold file the recorded outcome is re-scored: the gold says Velmar.
	gold := filetest.Write(t, "gold.json", `[{"question": "which river runs through carrow", "answer": "Velmar", "type": "bridge"}]`)
	eps, rep = collect(t, Options{Format: "openai-chat", Gold: gold}, p)
	if eps[0].Correct || !eps[1].Correct || eps[1].Answer != "Velmar" || eps[1].QuestionType != "bridge" || rep.Correct != 1 {
		t.Errorf("re-scored: got correct %v/%v answer %q type %q", eps[0].Correct, eps[1].Correct, eps[1].Answer, eps[1].QuestionType)
	}
}

// TestImportFEVERLabels re-scores transcripts that record no outcome: labels are matched
// by the official rule (score.Label) and written in the dataset's spelling.
func TestImportFEVERLabels(t *testing.T) {
	line := func(idx int, claim, answer, gold string) string {
		tr := "Claim: " + claim + "\nThought 1: I know it.\nAction 1: Finish[" + answer + "]"
		b, err := json.Marshal(map[string]any{"question_idx": idx, "transcript": tr, "answer": answer, "gt_answer": gold})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	p := filetest.Write(t, "t.jsonl", line(1, "Carrow lies on the Aldbrook.", "supports!", "SUPPORTS")+
		line(2, "Carrow has a harbour.", "NOT ENOUGH INFORMATION", "NOT ENOUGH INFO")+
		line(3, "Carrow lies on the Velmar.", "'REFUTES'", "refutes"))
	eps, rep := collect(t, Options{Format: "react-transcript", Task: pipeline.TaskFEVER}, p)
	if rep.Imported != 3 || rep.Correct != 2 {
		t.Fatalf("report: got %+v, want 3 imported, 2 correct", rep)
	}
	want := []struct {
		pred, answer string
		correct      bool
	}{
		{pipeline.LabelSupports, pipeline.LabelSupports, true},
		{"NOT ENOUGH INFORMATION", pipeline.LabelNEI, false},
		{pipeline.LabelRefutes, pipeline.LabelRefutes, true},
	}
	for i, w := range want {
		if ep := eps[i]; ep.Prediction != w.pred || ep.Answer != w.answer || ep.Correct != w.correct {
			t.Errorf("episode %d: got prediction %q answer %q correct %v, want %q %q %v", i, ep.Prediction, ep.Answer, ep.Correct, w.pred, w.answer, w.correct)
		}
	}
}

func TestImportTextFormats(t *testing.T) {
	alpaca := filetest.Write(t, "a.json", `[{"instruction": "Which river runs through Carrow?", "input": "", "output": "Thought: Search it.\nAction: search[Carrow]\nObservation: Carrow lies on the Aldbrook.\nThought: Done.\nAction: finish[Aldbrook]\nObservation: Episode finished, reward = 1\n"}]`)
	transcript := filetest.Write(t, "t.jsonl", `{"question_idx": 17, "transcript": "Claim: The Velmar Bridge opened in 1931.\nThought 1: I should search it.\nAction 1: Search[Velmar Bridge]\nObservation 1: The Velmar Bridge opened in 1931 over the Aldbrook.\n\nThought 2: It says so.\nAction 2: Finish[SUPPORTS]\nObservation 2: Episode finished, reward = 1", "answer": "SUPPORTS", "gt_answer": "SUPPORTS", "em": 1, "steps": 2}`+"\n")
	trajs := filetest.Write(t, "tr.json", `{"9": {"reward": false, "em": false, "f1": 0.5, "gt": "aldbrook river", "pred": "aldbrook", "traj": "Preamble.\n\n### Instruction:\nWhich river runs through Carrow?\n\n### Response:\nThought: Search.\nAction: search[Carrow]\nObservation: Carrow lies on the Aldbrook.\nThought: Done.\nAction: finish[Aldbrook]\nObservation: Episode finished, reward = False\n"}}`)
	tests := []struct {
		name, format, task, file string
		qid, question, pred      string
		correct                  bool
		f1                       float64
	}{
		{"alpaca", "alpaca", "hotpotqa", alpaca, "", "Which river runs through Carrow?", "Aldbrook", true, 1},
		{"react-transcript", "react-transcript", "fever", transcript, "17", "The Velmar Bridge opened in 1931.", "SUPPORTS", true, 1},
		{"fireact-trajs", "fireact-trajs", "hotpotqa", trajs, "9", "Which river runs through Carrow?", "aldbrook", false, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eps, rep := collect(t, Options{Format: tt.format, Task: tt.task}, tt.file)
			if rep.Imported != 1 || len(eps) != 1 {
				t.Fatalf("report: got %+v", rep)
			}
			ep := eps[0]
			if tt.qid != "" && ep.QuestionID != tt.qid {
				t.Errorf("qid: got %q, want %q", ep.QuestionID, tt.qid)
			}
			if ep.Question != tt.question || ep.Prediction != tt.pred || ep.Correct != tt.correct || ep.F1 != tt.f1 {
				t.Errorf("got question %q pred %q correct %v f1 %v, want %q %q %v %v", ep.Question, ep.Prediction, ep.Correct, ep.F1, tt.question, tt.pred, tt.correct, tt.f1)
			}
			if len(ep.Steps) != 2 || ep.Steps[0].ActionType != pipeline.ActionSearch || ep.Steps[1].ActionType != pipeline.ActionFinish {
				t.Errorf("steps: got %+v", ep.Steps)
			}
			if !strings.HasPrefix(ep.Steps[0].Observation, "Carrow lies") && !strings.HasPrefix(ep.Steps[0].Observation, "The Velmar") {
				t.Errorf("observation 0: got %q", ep.Steps[0].Observation)
			}
			if strings.Contains(ep.Steps[0].Observation, "Thought") {
				t.Errorf("observation 0 runs into the next thought: %q", ep.Steps[0].Observation)
			}
		})
	}
}

func TestImportErrors(t *testing.T) {
	p := filetest.Write(t, "bad.jsonl", chatFixture+"{not json\n"+`{"messages": [{"role": "user", "content": "Only a question"}]}`+"\n")
	_, err := Import(t.Context(), Options{Format: "openai-chat"}, []string{p}, func(pipeline.Episode) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl line 3") {
		t.Errorf("bad line: got %v, want an error naming bad.jsonl line 3", err)
	}
	_, rep := collect(t, Options{Format: "openai-chat", SkipBad: true}, p)
	if rep != (Report{Read: 4, Imported: 2, Skipped: 2, Correct: 1}) {
		t.Errorf("skip bad: got %+v", rep)
	}
	if _, err := Import(t.Context(), Options{Format: "sharegpt"}, []string{p}, nil); err == nil {
		t.Error("unknown format: got nil error")
	}
	stop := errors.New("stop")
	if _, err := Import(t.Context(), Options{Format: "openai-chat"}, []string{p}, func(pipeline.Episode) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("emit error: got %v, want it wrapped", err)
	}
}

type message struct{ Role, Content string }

// render is the test's own Episode -> chat rendering in FireAct's style.
func render(ep pipeline.Episode) []message {
	out := []message{{"user", ep.Question}}
	for _, s := range ep.Steps {
		action := s.Action
		if s.ActionType != pipeline.ActionInvalid {
			action = s.ActionType + "[" + s.Argument + "]"
		}
		out = append(out, message{"assistant", "Thought: " + s.Thought + "\nAction: " + action})
		if s.Observation != "" {
			out = append(out, message{"user", "Observation: " + s.Observation})
		}
	}
	return out
}

func readChatFile(t *testing.T, path string) [][]message {
	t.Helper()
	var out [][]message
	jsonltest.Each(t, path, func(_ int, rec struct{ Messages []message }) {
		out = append(out, rec.Messages)
	})
	return out
}

// trimLines drops the space at the ends of the text and of each line, the one change the
// importer makes (parse trims thoughts, actions and observations).
func trimLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}

func TestFireActChatRoundTrip(t *testing.T) {
	path := shareddata.Path(t, "fireact/gpt_format_hotpotqa.jsonl")
	want := readChatFile(t, path)
	eps, rep := collect(t, Options{Format: "openai-chat"}, path)
	if rep.Imported != len(want) || len(eps) != len(want) {
		t.Fatalf("imported %d of %d", rep.Imported, len(want))
	}
	diff := 0
	for i, ep := range eps {
		got := render(ep)
		same := len(got) == len(want[i])
		for j := 0; same && j < len(got); j++ {
			same = got[j].Role == want[i][j].Role && got[j].Content == trimLines(want[i][j].Content)
		}
		if !same {
			diff++
			// The one change allowed: a turn with several actions keeps the first.
			extra := false
			for _, m := range want[i] {
				extra = extra || (m.Role == "assistant" && react.Step(m.Content, 0).Extra)
			}
			if extra {
				continue
			}
			if diff <= 3 {
				t.Errorf("conversation %d differs:\ngot  %q\nwant %q", i+1, got, want[i])
			}
		}
	}
	t.Logf("%d conversations, %d differ after the round trip (each where a turn wrote several actions); %d recorded correct", len(eps), diff, rep.Correct)
}

func TestFireActMultimethodCorrect(t *testing.T) {
	path := shareddata.Path(t, "fireact/gpt_format_hotpotqa_multimethod.jsonl")
	// Count the recorded failures from the file itself.
	failures := 0
	for _, conv := range readChatFile(t, path) {
		last := conv[len(conv)-1]
		if c, ok := ParseReward(last.Content); ok && !c {
			failures++
		}
	}
	eps, rep := collect(t, Options{Format: "openai-chat"}, path)
	if rep.Read != 733 || rep.Imported != 733 {
		t.Errorf("report: got %+v, want 733 read and imported", rep)
	}
	chain, err := filter.New(pipeline.FilterConfig{Rules: []string{"correct"}}, pipeline.TaskHotpotQA, filter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var in iter.Seq2[pipeline.Episode, error] = func(yield func(pipeline.Episode, error) bool) {
		for _, ep := range eps {
			if !yield(ep, nil) {
				return
			}
		}
	}
	keptWrong := 0
	st, err := chain.Run(t.Context(), in, func(ep pipeline.Episode) error {
		if !ep.Correct {
			keptWrong++
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if failures != 40 {
		t.Errorf("failures counted in the file: got %d, want 40", failures)
	}
	if st.Rejected != failures || st.Kept != 733-failures || keptWrong != 0 || rep.Correct != 733-failures {
		t.Errorf("correct rule: kept %d rejected %d (kept wrong %d, report correct %d), want kept %d rejected %d",
			st.Kept, st.Rejected, keptWrong, rep.Correct, 733-failures, failures)
	}
	t.Logf("multimethod: %d episodes, %d recorded failures, rule correct kept %d rejected %d", len(eps), failures, st.Kept, st.Rejected)
}

func TestImportRealCorpora(t *testing.T) {
	tests := []struct {
		rel, format, task string
		records, correct  int
	}{
		{"fireact/alpaca_format_hotpotqa.json", "alpaca", "hotpotqa", 500, -1},
		{"react-transcripts/fever_dev_react_text-davinci-002.jsonl", "react-transcript", "fever", 500, 270},
		{"fireact/trajs_hotpotqa_dev_llama2-7b-lora.json", "fireact-trajs", "hotpotqa", 500, 131},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			path := shareddata.Path(t, tt.rel)
			eps, rep := collect(t, Options{Format: tt.format, Task: tt.task}, path)
			if rep.Imported != tt.records {
				t.Errorf("imported: got %d, want %d (%+v)", rep.Imported, tt.records, rep)
			}
			if tt.correct >= 0 && rep.Correct != tt.correct {
				t.Errorf("correct: got %d, want %d", rep.Correct, tt.correct)
			}
			invalid, steps := 0, 0
			for _, ep := range eps {
				for _, s := range ep.Steps {
					steps++
					if s.ActionType == pipeline.ActionInvalid {
						invalid++
					}
				}
			}
			t.Logf("%s: %+v, %d steps, %d invalid actions", tt.format, rep, steps, invalid)
		})
	}
}

func TestImportWithRealGold(t *testing.T) {
	path := shareddata.Path(t, "react-transcripts/fever_dev_react_text-davinci-002.jsonl")
	gold := shareddata.Path(t, "fever/paper_dev.jsonl")
	eps, rep := collect(t, Options{Format: "react-transcript", Task: pipeline.TaskFEVER, Gold: gold}, path)
	recorded, _ := collect(t, Options{Format: "react-transcript", Task: pipeline.TaskFEVER}, path)
	for i, ep := range eps {
		if ep.Answer != recorded[i].Answer {
			t.Errorf("question %s: gold %q, transcript's gt_answer %q", ep.QuestionID, ep.Answer, recorded[i].Answer)
		}
		if ep.Correct != recorded[i].Correct {
			t.Errorf("question %s: re-scored %v, recorded em %v (prediction %q, gold %q)", ep.QuestionID, ep.Correct, recorded[i].Correct, ep.Prediction, ep.Answer)
		}
	}
	t.Logf("react transcripts with FEVER gold: %+v", rep)
	if rep.Correct != 270 {
		t.Errorf("re-scored correct: got %d, want the 270 the transcripts record", rep.Correct)
	}
}

// TestImportBadGold fails on a gold file the question reader refuses, naming its line.
func TestImportBadGold(t *testing.T) {
	p := filetest.Write(t, "chat.jsonl", chatFixture)
	tests := []struct {
		name, file, content, task, want string
	}{
		{"malformed line", "gold.jsonl", "{\"id\": 1, \"label\": \"SUPPORTS\", \"claim\": \"C\"}\n{\"id\": 2,\n", pipeline.TaskFEVER, "gold.jsonl line 2: malformed JSON"},
		{"not a label", "gold.jsonl", `{"id": 1, "label": "NOT ENOUGH INFORMATION", "claim": "C"}`, pipeline.TaskFEVER, `gold.jsonl line 1: label "NOT ENOUGH INFORMATION"`},
		{"other task", "gold.jsonl", `{"id": 1, "label": "SUPPORTS", "claim": "C"}`, pipeline.TaskHotpotQA, `format fever holds fever questions, not task "hotpotqa"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gold := filetest.Write(t, tt.file, tt.content)
			_, err := Import(t.Context(), Options{Format: "openai-chat", Task: tt.task, Gold: gold}, []string{p}, func(pipeline.Episode) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
