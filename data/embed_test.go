package data

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/internal/sentence"
	"github.com/reactgen/reactgen/pipeline"
)

type exemplarFile struct {
	Task        string `json:"task"`
	Instruction string `json:"instruction"`
	Exemplars   []struct {
		Question  string `json:"question"`
		Answer    string `json:"answer"`
		Reasoning string `json:"reasoning"`
		Steps     []struct {
			Thought     string  `json:"thought"`
			Action      string  `json:"action"`
			Observation *string `json:"observation"`
		} `json:"steps"`
	} `json:"exemplars"`
}

func TestFiles(t *testing.T) {
	for _, name := range []string{
		"prompts/hotpotqa.json", "prompts/fever.json",
		"demo/corpus.jsonl", "demo/hotpotqa.json", "demo/fever.jsonl", "demo/README.md",
	} {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Errorf("embedded %s: %v", name, err)
			continue
		}
		if len(b) == 0 {
			t.Errorf("embedded %s is empty", name)
		}
	}
}

var (
	miss   = regexp.MustCompile(`^Could not find \[[^\]]+\]\. Similar: \[('[^']+'(, '[^']+'){0,4})?\]\.$`)
	result = regexp.MustCompile(`^\(Result (\d+) / (\d+)\) \S`)
)

// TestExemplars checks the exemplars' shape and that every observation is one the
// environment could have given: a hit shows at most five sentences, a miss and a Lookup
// use the environment's exact formats, and the last step is Finish with the answer.
func TestExemplars(t *testing.T) {
	tests := []struct {
		file, task string
		n          int
		answers    []string
	}{
		{"prompts/hotpotqa.json", pipeline.TaskHotpotQA, 6, nil},
		{"prompts/fever.json", pipeline.TaskFEVER, 3, []string{pipeline.LabelSupports, pipeline.LabelRefutes, pipeline.LabelNEI}},
	}
	for _, tt := range tests {
		t.Run(tt.task, func(t *testing.T) {
			b, err := fs.ReadFile(FS, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			var f exemplarFile
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatalf("%s: %v", tt.file, err)
			}
			if f.Task != tt.task || f.Instruction == "" {
				t.Errorf("task %q instruction %q", f.Task, f.Instruction)
			}
			if len(f.Exemplars) != tt.n {
				t.Fatalf("exemplars: got %d, want %d", len(f.Exemplars), tt.n)
			}
			kinds := map[string]int{}
			for i, ex := range f.Exemplars {
				if tt.answers != nil && ex.Answer != tt.answers[i] {
					t.Errorf("exemplar %d answer: got %q, want %q", i, ex.Answer, tt.answers[i])
				}
				if !strings.HasSuffix(ex.Reasoning, "So the answer is "+ex.Answer+".") {
					t.Errorf("exemplar %d reasoning does not end with its answer: %q", i, ex.Reasoning)
				}
				for j, s := range ex.Steps {
					a := env.ParseAction(s.Action)
					kinds[a.Type]++
					last := j == len(ex.Steps)-1
					if s.Thought == "" || a.String() != s.Action {
						t.Errorf("exemplar %d step %d: thought %q action %q (normalised %q)", i, j+1, s.Thought, s.Action, a.String())
					}
					if last {
						if a.Type != pipeline.ActionFinish || a.Argument != ex.Answer || s.Observation != nil {
							t.Errorf("exemplar %d: last step %q with observation, want Finish[%s] without", i, s.Action, ex.Answer)
						}
						continue
					}
					if s.Observation == nil {
						t.Errorf("exemplar %d step %d: no observation", i, j+1)
						continue
					}
					obs := *s.Observation
					switch a.Type {
					case pipeline.ActionSearch:
						if strings.HasPrefix(obs, "Could not find") {
							kinds["miss"]++
							if !miss.MatchString(obs) {
								t.Errorf("exemplar %d step %d: miss %q not in the environment's format", i, j+1, obs)
							}
						} else if strings.Contains(obs, "may refer to:") {
							kinds["disambiguation"]++
						} else if n := len(sentence.Split(obs)); n > 5 {
							t.Errorf("exemplar %d step %d: search shows %d sentences, want at most 5", i, j+1, n)
						}
					case pipeline.ActionLookup:
						if m := result.FindStringSubmatch(obs); m == nil && obs != "No more results." {
							t.Errorf("exemplar %d step %d: lookup %q not in the environment's format", i, j+1, obs)
						} else if m != nil && !strings.Contains(strings.ToLower(obs), strings.ToLower(a.Argument)) {
							t.Errorf("exemplar %d step %d: lookup result lacks keyword %q", i, j+1, a.Argument)
						}
					default:
						t.Errorf("exemplar %d step %d: %q before the last step", i, j+1, s.Action)
					}
				}
			}
			if tt.task == pipeline.TaskHotpotQA {
				for _, k := range []string{pipeline.ActionLookup, "miss", "disambiguation"} {
					if kinds[k] == 0 {
						t.Errorf("no exemplar shows %s", k)
					}
				}
			}
		})
	}
}

// TestNoLeak checks that no exemplar answer is the answer of a demo question: the
// exemplars are about entities outside the demo world.
func TestNoLeak(t *testing.T) {
	b, err := fs.ReadFile(FS, "demo/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	corpus := string(b)
	for _, file := range []string{"prompts/hotpotqa.json", "prompts/fever.json"} {
		raw, err := fs.ReadFile(FS, file)
		if err != nil {
			t.Fatal(err)
		}
		var f exemplarFile
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		for _, ex := range f.Exemplars {
			for _, s := range ex.Steps {
				a := env.ParseAction(s.Action)
				if a.Type == pipeline.ActionSearch && strings.Contains(corpus, `"title":"`+a.Argument+`"`) {
					t.Errorf("%s: exemplar searches %q, a demo world page", file, a.Argument)
				}
			}
		}
	}
}
