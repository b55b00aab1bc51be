package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/data"
	"github.com/reactgen/reactgen/generate/prompt"
	"github.com/reactgen/reactgen/internal/shareddata"
	"github.com/reactgen/reactgen/pipeline"
)

// TestImportFireActMultimethod imports FireAct's multi-method file, filters it with the
// correct rule and exports it: the file records 40 failed trajectories, and exactly those
// are rejected.
func TestImportFireActMultimethod(t *testing.T) {
	src := shareddata.Path(t, "fireact/gpt_format_hotpotqa_multimethod.jsonl")
	cfg := writeConfig(t, minimalConfig+"filter:\n  rules: [correct]\nexport:\n  formats: [openai-chat, parquet]\n  validation_fraction: 0\n")
	out := filepath.Join(t.TempDir(), "run")
	res := invoke(t, "", nil, "import", "--format", "openai-chat", "--task", "hotpotqa", "--config", cfg, "--out", out, src)
	if res.code != 0 {
		t.Fatalf("import: exit %d: %s", res.code, res.stderr)
	}
	m, err := pipeline.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Stages["import"].Counts["imported"]; got != 733 {
		t.Errorf("imported: got %d, want 733", got)
	}
	f := m.Stages["filter"].Counts
	if f["kept"] != 693 || f["rejected"] != 40 {
		t.Errorf("filter: got kept %d rejected %d, want 693 and 40", f["kept"], f["rejected"])
	}
	if got := countLines(t, filepath.Join(out, "export", "openai-chat.train.jsonl")); got != 693 {
		t.Errorf("exported: got %d, want 693", got)
	}
}

// TestImportRoundTripsFireActConversations: importing FireAct's GPT-4 chat file and
// exporting it as openai-chat gives back its conversations.
func TestImportRoundTripsFireActConversations(t *testing.T) {
	src := shareddata.Path(t, "fireact/gpt_format_hotpotqa.jsonl")
	cfg := writeConfig(t, minimalConfig+"filter:\n  rules: [finished]\nexport:\n  formats: [openai-chat]\n  validation_fraction: 0\n")
	out := filepath.Join(t.TempDir(), "run")
	res := invoke(t, "", nil, "import", "--format", "openai-chat", "--config", cfg, "--out", out, src)
	if res.code != 0 {
		t.Fatalf("import: exit %d: %s", res.code, res.stderr)
	}
	type msg struct{ Role, Content string }
	read := func(path string) map[string][]msg {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		convs := map[string][]msg{}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var rec struct{ Messages []msg }
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			// Key by the question turn; compare the assistant turns, which are what trains.
			var key string
			var turns []msg
			for _, m := range rec.Messages {
				m.Content = strings.TrimSpace(m.Content)
				if m.Role == "user" && key == "" {
					// reactgen's layout labels the question; FireAct's file does not.
					key = strings.TrimPrefix(m.Content, "Question: ")
				}
				if m.Role == "assistant" {
					turns = append(turns, m)
				}
			}
			convs[key] = turns
		}
		return convs
	}
	orig := read(src)
	back := read(filepath.Join(out, "export", "openai-chat.train.jsonl"))
	if len(back) == 0 {
		t.Fatal("nothing exported")
	}
	same := 0
	for q, turns := range back {
		o := orig[q]
		if len(o) == 0 {
			continue
		}
		eq := len(o) == len(turns)
		for i := 0; eq && i < len(o); i++ {
			// Action names come back in the paper's spelling (Search[...] for search[...]).
			want := paperSpelling.ReplaceAllStringFunc(o[i].Content, strings.Title)
			eq = strings.Join(strings.Fields(want), " ") == strings.Join(strings.Fields(turns[i].Content), " ")
		}
		if eq {
			same++
		}
	}
	// The importer keeps only the first of several actions written on one line (one
	// turn in this file does so); every other conversation must come back unchanged.
	if same < len(back)-1 {
		t.Errorf("round trip: %d of %d conversations came back unchanged", same, len(back))
	}
}

func TestPlayWritesAnExemplar(t *testing.T) {
	dir, _ := demoRun(t)
	b, err := os.ReadFile("../../data/demo/fever.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var claim struct {
		ID    int    `json:"id"`
		Label string `json:"label"`
	}
	line, _, _ := strings.Cut(string(b), "\n")
	json.Unmarshal([]byte(line), &claim)
	save := filepath.Join(t.TempDir(), "mine.json")
	in := "I should look the claim up.\nSearch[" + firstTitle(t) + "]\nThat settles it.\nFinish[" + claim.Label + "]\n"
	res := invoke(t, in, nil, "play", "--task", "fever", "--questions", "../../data/demo/fever.jsonl",
		"--question", strconv.Itoa(claim.ID), "--index", filepath.Join(dir, "index"), "--save", save)
	if res.code != 0 {
		t.Fatalf("play: exit %d: %s", res.code, res.stderr)
	}
	var set struct {
		Task      string
		Exemplars []struct {
			Question string
			Answer   string
			Steps    []struct{ Thought, Action, Observation string }
		}
	}
	b, err = os.ReadFile(save)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Exemplars) != 1 || len(set.Exemplars[0].Steps) != 2 || set.Exemplars[0].Steps[1].Action != "Finish["+claim.Label+"]" {
		t.Fatalf("exemplar: %+v", set)
	}
	if set.Exemplars[0].Steps[0].Observation == "" {
		t.Error("the search step has no observation")
	}
	// A second play appends.
	res = invoke(t, in, nil, "play", "--task", "fever", "--questions", "../../data/demo/fever.jsonl",
		"--question", strconv.Itoa(claim.ID), "--index", filepath.Join(dir, "index"), "--save", save)
	if res.code != 0 {
		t.Fatalf("second play: %s", res.stderr)
	}
	b, _ = os.ReadFile(save)
	json.Unmarshal(b, &set)
	if len(set.Exemplars) != 2 {
		t.Errorf("exemplars after a second play: got %d, want 2", len(set.Exemplars))
	}
	// The saved file loads as generate.exemplars.
	ld, err := testLoad(writeConfig(t, "task:\n  name: fever\n  path: x.jsonl\ncorpus:\n  path: c.jsonl\ngenerate:\n  exemplars: "+save+"\n"), nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := prompt.Configured(ld.Config.Generate, ld.Config.Task.Name, data.FS); err != nil {
		t.Errorf("the played exemplar file does not load: %v", err)
	}
}

var paperSpelling = regexp.MustCompile(`\b(search|lookup|finish)\[`)
