package env_test

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envtest"
	"github.com/reactgen/reactgen/pipeline"
)

func TestServe(t *testing.T) {
	c := envtest.NewMemory(envtest.Pages())
	in := strings.Join([]string{
		"Search[Orla Vint]",
		"",
		"Search[Harrow]",
		"Search[heron Marrow]",
		"search[marrow_lake]",
		"Lookup[heron]",
		"Lookup[heron]",
		"Jump[somewhere]",
		"Finish[ refutes ]",
		"Search[never read]",
	}, "\n")
	var out strings.Builder
	if err := env.Serve(t.Context(), env.New(c, env.Options{Task: pipeline.TaskFEVER, Observations: env.ObservationsRules, Actions: env.ActionsLenient}), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := []env.ServeLine{
		{Action: "Search[Orla Vint]", Observation: "Orla Vint (born 1950) is a poet from Karsa. She is best known for the novel The Grey Tide. Vint lived for many years beside Marrow Lake."},
		{Action: "Search[Harrow]", Observation: "Harrow may refer to: Harrow Town, a market town in Elsmere, Harrow (band), a rock band from Karsa."},
		{Action: "Search[heron Marrow]"},
		{Action: "Search[marrow_lake]"},
		{Action: "Lookup[heron]", Observation: "(Result 1 / 3) Its reed beds shelter a colony of grey herons."},
		{Action: "Lookup[heron]", Observation: "(Result 2 / 3) Ornithologists count the herons every spring."},
		{Action: "Jump[somewhere]", Observation: "Invalid action: Jump[somewhere]. Valid actions are Search[<entity>], Lookup[<keyword>] and Finish[<answer>]."},
		{Action: "Finish[refutes]", Observation: "Episode finished.", Done: true, Answer: "REFUTES"},
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	i := 0
	for ; sc.Scan(); i++ {
		line := sc.Text()
		var got env.ServeLine
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("output line %d %q: %v", i+1, line, err)
		}
		if i >= len(want) {
			t.Fatalf("output line %d: unexpected %q", i+1, line)
		}
		w := want[i]
		if w.Observation == "" {
			w.Observation = got.Observation // checked below by prefix
			if !strings.HasPrefix(got.Observation, "Could not find") && !strings.HasPrefix(got.Observation, "Marrow Lake is") {
				t.Errorf("output line %d: got observation %q", i+1, got.Observation)
			}
		}
		if got != w {
			t.Errorf("output line %d:\n got %+v\nwant %+v", i+1, got, w)
		}
	}
	if i != len(want) {
		t.Errorf("got %d output lines, want %d", i, len(want))
	}
	if !strings.Contains(out.String(), `"done":false`) {
		t.Errorf("output %q: want the done field written even when false", out.String())
	}
}

func TestServeJSONPaper(t *testing.T) {
	c := envtest.NewMemory(envtest.Pages())
	in := strings.Join([]string{
		`"Lookup[heron]"`,
		`"Search[Vint River]\r"`,
		"",
		`"\n\nFinish[SUPPORTS]"`,
		`"Finish[SUPPORTS]"`,
		`"Search[never read]"`,
	}, "\r\n")
	var out strings.Builder
	if err := env.ServeJSON(t.Context(), env.New(c, env.Options{Task: pipeline.TaskFEVER, Gold: pipeline.LabelSupports}), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`{"action":"Lookup[heron]","observation":"No more results.\n","done":false}`,
		`{"action":"Search[Vint River]","observation":"The Vint River is a river in Karsa, 140 kilometres long. It rises in the Kell Hills and flows into Marrow Lake..","done":false}`,
		`{"action":"Finish[SUPPORTS]","observation":"Invalid action: Finish[SUPPORTS]","done":false}`,
		`{"action":"Finish[SUPPORTS]","observation":"Episode finished, reward = 1\n","done":true,"answer":"SUPPORTS"}`,
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	err := env.ServeJSON(t.Context(), env.New(c, env.Options{}), strings.NewReader("\"Search[Vint]\"\nSearch[Vint]\n"), &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "action line 2: want a JSON string") {
		t.Errorf("bare action in JSON mode: got %v, want an error naming line 2", err)
	}
}

func TestServeLongLineAndNoTrailingNewline(t *testing.T) {
	c := envtest.NewMemory(envtest.Pages())
	in := "Lookup[" + strings.Repeat("z", 1<<20) + "]\nSearch[Vint River]"
	var out strings.Builder
	if err := env.Serve(t.Context(), env.New(c, env.Options{}), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "The Vint River is a river") {
		t.Errorf("got %d lines, last %.80q; want 2 ending with the Vint River page", len(lines), lines[len(lines)-1])
	}
}

func TestServeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := envtest.NewMemory(envtest.Pages())
	err := env.Serve(ctx, env.New(c, env.Options{}), strings.NewReader("Search[Vint]\n"), &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "action line 1") {
		t.Errorf("cancelled: got %v, want an error naming action line 1", err)
	}
}
