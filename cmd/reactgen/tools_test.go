package main

// generate.format tools through the command line, over the demo world: the same correct
// count as the chat format, a cache that replays a whole run, and a run killed mid-way
// that resumes to the uninterrupted run's episodes.

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/internal/llm"
	"github.com/reactgen/reactgen/internal/llm/llmtest"
	"github.com/reactgen/reactgen/internal/tool"
	"github.com/reactgen/reactgen/pipeline"
)

// toolReply answers a tools-format request with the move text would give, as one
// function call with the thought as content.
func (f *fakeModel) toolReply(r llmtest.Req) llmtest.Reply {
	q, start := "", 0
	for i, m := range r.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "Question: ") {
			q, start = strings.TrimPrefix(m.Content, "Question: "), i
		}
	}
	steps := 0
	for _, m := range r.Messages[start+1:] {
		if m.Role == "assistant" {
			steps++
		}
	}
	thought, action := f.move(q, steps)
	name, arg, _ := strings.Cut(strings.TrimSuffix(action, "]"), "[")
	fn, args, ok := tool.FromAction(strings.ToLower(name), arg)
	if !ok {
		return llmtest.Reply{Texts: []string{thought}}
	}
	return llmtest.Reply{Texts: []string{thought}, ToolCalls: []llm.ToolCall{{Function: llm.FunctionCall{Name: fn, Arguments: args}}}}
}

// byQuestion keys a run's episodes by question id, a question's last record winning.
func byQuestion(eps []pipeline.Episode) map[string]pipeline.Episode {
	out := map[string]pipeline.Episode{}
	for _, ep := range eps {
		out[ep.QuestionID] = ep
	}
	return out
}

func TestToolsFormatOnTheDemoWorld(t *testing.T) {
	model := newFakeModel(t)
	srv := llmtest.NewServer(t, model.handle)
	tmp := t.TempDir()
	cache := filepath.Join(tmp, "cache")
	runs := map[string][]pipeline.Episode{}
	for _, format := range []string{"chat", "tools"} {
		res, out := generateWith(t, filepath.Join(tmp, format), srv.URL, map[string]any{
			"generate.format": format, "llm.cache_dir": cache,
		}, nil)
		if res.code != 0 {
			t.Fatalf("%s: exit %d: %v\n%s", format, res.code, res.err, res.stderr)
		}
		runs[format] = logLines(t, filepath.Join(out, pipeline.EpisodesFile))
	}
	correct := map[string]int{}
	for format, eps := range runs {
		for _, ep := range eps {
			if ep.Correct {
				correct[format]++
			}
		}
	}
	if correct["chat"] == 0 || correct["tools"] != correct["chat"] || len(runs["tools"]) != len(runs["chat"]) {
		t.Errorf("correct: chat %d of %d, tools %d of %d, want equal and not 0",
			correct["chat"], len(runs["chat"]), correct["tools"], len(runs["tools"]))
	}
	t.Logf("correct: chat %d of %d, tools %d of %d", correct["chat"], len(runs["chat"]), correct["tools"], len(runs["tools"]))
	chat := byQuestion(runs["chat"])
	for _, ep := range runs["tools"] {
		c := chat[ep.QuestionID]
		if !reflect.DeepEqual(episodetest.Actions(ep), episodetest.Actions(c)) || ep.Prediction != c.Prediction || ep.Correct != c.Correct {
			t.Errorf("%s: tools %v %q, chat %v %q", ep.QuestionID, episodetest.Actions(ep), ep.Prediction, episodetest.Actions(c), c.Prediction)
		}
		if ep.Format != "tools" {
			t.Errorf("%s: format %q", ep.QuestionID, ep.Format)
		}
		for i, st := range ep.Steps {
			if st.ToolCall == nil || st.ToolCall.Name != st.ActionType {
				t.Errorf("%s step %d: tool call %+v for %s", ep.QuestionID, i+1, st.ToolCall, st.Action)
			}
		}
	}

	// The same config into a new run directory over the same cache sends nothing.
	before := srv.Requests()
	res, out := generateWith(t, filepath.Join(tmp, "tools-again"), srv.URL, map[string]any{
		"generate.format": "tools", "llm.cache_dir": cache,
	}, nil)
	if res.code != 0 {
		t.Fatalf("replay: exit %d: %v\n%s", res.code, res.err, res.stderr)
	}
	if n := srv.Requests() - before; n != 0 {
		t.Errorf("replay over the cache sent %d requests, want 0", n)
	}
	again := byQuestion(logLines(t, filepath.Join(out, pipeline.EpisodesFile)))
	for _, ep := range runs["tools"] {
		a := again[ep.QuestionID]
		if !reflect.DeepEqual(a.Steps[0].ToolCall, ep.Steps[0].ToolCall) || !reflect.DeepEqual(episodetest.Actions(a), episodetest.Actions(ep)) {
			t.Errorf("%s: replay %v %+v, first %v %+v", ep.QuestionID, episodetest.Actions(a), a.Steps[0].ToolCall, episodetest.Actions(ep), ep.Steps[0].ToolCall)
		}
	}
}

func TestToolsRunKilledResumes(t *testing.T) {
	model := newFakeModel(t)
	model.setDelay(5*time.Millisecond, 25*time.Millisecond)
	srv := llmtest.NewServer(t, model.handle)
	tmp := t.TempDir()
	cfg := testConfig(t, filepath.Join(tmp, "cfg"), srv.URL, map[string]any{
		"task.limit": 40, "generate.format": "tools", "generate.concurrency": 2,
	})
	killed, whole := filepath.Join(tmp, "killed"), filepath.Join(tmp, "whole")
	env := childEnv{vars: map[string]string{"OPENAI_API_KEY": "sk-test"}}
	// Kill once some episodes are in the log, so that the resume has work done to keep.
	killThenResume(t, env, cfg, killed, whole, 3, func(i int) func() bool {
		return func() bool {
			b, _ := os.ReadFile(filepath.Join(killed, pipeline.EpisodesFile))
			return strings.Count(string(b), "\n") >= 5*(i+1)
		}
	})
	got, want := effective(logLines(t, filepath.Join(killed, pipeline.EpisodesFile))), effective(logLines(t, filepath.Join(whole, pipeline.EpisodesFile)))
	if len(want) != 40 || len(got) != len(want) {
		t.Fatalf("episodes: killed run %d, uninterrupted %d, want 40", len(got), len(want))
	}
	for id, w := range want {
		g := got[id]
		if g.Correct != w.Correct || g.Prediction != w.Prediction || !reflect.DeepEqual(episodetest.Actions(g), episodetest.Actions(w)) {
			t.Errorf("%s: killed run %v %q, uninterrupted %v %q", id, episodetest.Actions(g), g.Prediction, episodetest.Actions(w), w.Prediction)
		}
	}
	if m := readManifest(t, killed); m.Resumes < 1 {
		t.Errorf("resumes %d, want at least 1", m.Resumes)
	}
}
