package envtest

import (
	"errors"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/pipeline"
)

// runPaper checks paper observations and paper action parsing: what wikienv.py and
// wrappers.py answer, written out by hand for the pages of Pages().
func runPaper(t *testing.T, c env.Corpus) {
	paper := env.Options{}
	paperSearches(t, c, paper)
	paperLookupsAndActions(t, c, paper)
}

// What paper mode observes on Pages(), word for word.
const (
	orla    = "Orla Vint (born 1950) is a poet from Karsa. She is best known for the novel The Grey Tide. Vint lived for many years beside Marrow Lake.."
	lake5   = "Marrow Lake is a glacial lake in the northern uplands of Karsa. Its reed beds shelter a colony of grey herons. The lake is fed by the Vint River and drains to the east. A cable ferry has crossed the narrows since 1888. The village of Harrow Town stands on its southern shore."
	heron1  = "(Result 1 / 3) Its reed beds shelter a colony of grey herons."
	heron2  = "(Result 2 / 3) Ornithologists count the herons every spring."
	heron3  = "(Result 3 / 3) Local legend holds that a white heron guards the lake."
	noMore  = "No more results.\n"
	missing = "Could not find Qzxvw Plkjh. Similar: []."
)

// paperSearches checks paper mode's Search: hits, no cut, disambiguation, titles as
// wikienv.py finds them, and misses.
func paperSearches(t *testing.T, c env.Corpus, paper env.Options) {
	t.Run("search hit", func(t *testing.T) {
		// The last sentence of a paragraph gets the splitter's full stop after its own.
		steps(t, c, paper, step{"Search[Orla Vint]", orla})
		steps(t, c, paper, step{"Search[Marrow Lake]", lake5})
		steps(t, c, paper, step{"Search[ orla_vint ]", orla})
		steps(t, c, env.Options{Sentences: 1}, step{"Search[Orla Vint]", "Orla Vint (born 1950) is a poet from Karsa."})
	})
	t.Run("no cut", func(t *testing.T) {
		const tower = "In year 1500 of the chronicle the keepers of Ostrow Tower repaired the stair. " +
			"In year 1507 of the chronicle the great bell of Ostrow Tower was recast. " +
			"In year 1514 of the chronicle the keepers of Ostrow Tower repaired the stair. " +
			"In year 1521 of the chronicle the keepers of Ostrow Tower repaired the stair. " +
			"In year 1528 of the chronicle the keepers of Ostrow Tower repaired the stair."
		steps(t, c, env.Options{MaxObservationChars: 60}, step{"Search[Ostrow Tower]", tower})
	})
	t.Run("disambiguation searches again in brackets", func(t *testing.T) {
		w := env.New(c, paper)
		res, err := w.Step(t.Context(), "Search[Vint]")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.Observation, "Could not find [Vint]. Similar: [") || !strings.HasSuffix(res.Observation, "].") {
			t.Errorf("Search[Vint]: got %q, want Could not find [Vint]. Similar: [...].", res.Observation)
		}
		// A list without "may refer to:" is a page like any other, one paragraph a line.
		steps(t, c, paper, step{"Search[Harrow]", "Harrow Town, a market town in Elsmere.. Harrow (band), a rock band from Karsa.."})
	})
	t.Run("titles as wikienv.py's search finds them", func(t *testing.T) {
		tamsin := "Tamsin Reach is a slow stretch of the Vint River below Marrow Lake.."
		survey := "TAMSIN REACH is a radio survey of the Karsan uplands, begun in 1962.."
		bay := "Kestrel Bay is a sheltered inlet on the western coast of Elsmere. Its harbour was dredged in 1931.."
		// Titles that differ only in case are two pages; the exact one is found.
		steps(t, c, paper, step{"Search[Tamsin Reach]", tamsin}, step{"Search[TAMSIN REACH]", survey}, step{"Search[Tamsin_Reach]", tamsin})
		// Case, underscores and white space are read as MediaWiki reads them, and a pair
		// of straight double quotes is stripped as its near match strips it.
		for _, v := range []string{"kestrel bay", "KESTREL BAY", " Kestrel_Bay ", `"Kestrel Bay"`} {
			steps(t, c, paper, step{"Search[" + v + "]", bay})
		}
		// No other quotes are stripped, and no disambiguation page stands in for a title.
		for _, v := range []string{"'Kestrel Bay'", "“Kestrel Bay”", "`Kestrel Bay`", `"Kestrel Bay`, "Kell"} {
			w := env.New(c, paper)
			res, err := w.Step(t.Context(), "Search["+v+"]")
			if err != nil {
				t.Fatal(err)
			}
			if prefix := "Could not find " + v + ". Similar: ["; !strings.HasPrefix(res.Observation, prefix) {
				t.Errorf("Search[%s]: got %q, want %s...].", v, res.Observation, prefix)
			}
		}
	})
	t.Run("miss names the entity as written", func(t *testing.T) {
		steps(t, c, paper, step{"Search[Qzxvw Plkjh]", missing})
		w := env.New(c, paper)
		res, err := w.Step(t.Context(), "Search[heron Marrow]")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.Observation, "Could not find heron Marrow. Similar: [") || !strings.Contains(res.Observation, "'Marrow Lake'") {
			t.Errorf("Search[heron Marrow]: got %q, want a miss listing 'Marrow Lake'", res.Observation)
		}
	})
}

// paperLookupsAndActions checks paper mode's Lookup, its other actions and Finish.
func paperLookupsAndActions(t *testing.T, c env.Corpus, paper env.Options) {
	t.Run("lookup without page", func(t *testing.T) {
		steps(t, c, paper, step{"Lookup[heron]", noMore}, step{"Lookup[heron]", noMore})
	})
	t.Run("lookup keyword compared exactly", func(t *testing.T) {
		steps(t, c, paper,
			step{"Search[Marrow Lake]", lake5},
			step{"Lookup[heron]", heron1},
			step{"Lookup[HERON]", heron1}, // another keyword: the walk starts again
			step{"Lookup[HERON]", heron2},
			step{"Lookup[HERON]", heron3},
			step{"Lookup[HERON]", noMore},
			step{"Lookup[]", "(Result 1 / 12) Marrow Lake is a glacial lake in the northern uplands of Karsa."},
		)
	})
	t.Run("miss keeps page and lookup", func(t *testing.T) {
		steps(t, c, paper,
			step{"Search[Marrow Lake]", lake5},
			step{"Lookup[heron]", heron1},
			step{"Search[Qzxvw Plkjh]", missing},
			step{"Lookup[heron]", heron2},
			step{"Search[Marrow Lake]", lake5}, // a hit ends the lookup
			step{"Lookup[heron]", heron1},
		)
	})
	t.Run("actions", func(t *testing.T) {
		for _, raw := range []string{"Search[Orla Vint]", "search[Orla Vint]", "Search[Orla Vint]  \n"} {
			steps(t, c, paper, step{raw, orla})
		}
		invalid := []struct{ raw, shown string }{
			{"SEARCH[Orla Vint]", "sEARCH[Orla Vint]"},
			{"  Search[Orla Vint]", "Search[Orla Vint]"}, // the lower-casing met the space
			{"Search [Orla Vint]", "search [Orla Vint]"},
			{"Search[Orla Vint] and then more", "search[Orla Vint] and then more"},
			{"Search[Orla Vint", "search[Orla Vint"},
			{"\n\nFinish[SUPPORTS]", "Finish[SUPPORTS]"}, // the lower-casing met the line break
			{"Think[about it]", "think[about it]"},
			{"Jump[x]", "jump[x]"},
			{"", ""},
		}
		for _, tt := range invalid {
			steps(t, c, paper, step{tt.raw, "Invalid action: " + tt.shown})
		}
	})
	t.Run("finish reports the reward", func(t *testing.T) {
		tests := []struct {
			task, gold, raw, answer, obs string
		}{
			{pipeline.TaskHotpotQA, "Orla Vint", "Finish[  Orla Vint ]", "  Orla Vint ", "Episode finished, reward = 1\n"},
			{pipeline.TaskHotpotQA, "Orla Vint", "finish[the orla vint.]", "the orla vint.", "Episode finished, reward = 1\n"},
			{pipeline.TaskHotpotQA, "Orla Vint", "Finish[Orla]", "Orla", "Episode finished, reward = 0\n"},
			{pipeline.TaskHotpotQA, "", "Finish[]", "", "Episode finished, reward = 0\n"},
			{pipeline.TaskHotpotQA, "Orla Vint", "Finish[]", "", "Episode finished, reward = 0\n"},
			{pipeline.TaskFEVER, pipeline.LabelSupports, "Finish[supports!]", pipeline.LabelSupports, "Episode finished, reward = 1\n"},
			{pipeline.TaskFEVER, pipeline.LabelNEI, "Finish[NOT ENOUGH INFORMATION]", "NOT ENOUGH INFORMATION", "Episode finished, reward = 0\n"},
			{pipeline.TaskFEVER, pipeline.LabelRefutes, "Finish[SUPPORTS]", pipeline.LabelSupports, "Episode finished, reward = 0\n"},
		}
		for _, tt := range tests {
			w := env.New(c, env.Options{Task: tt.task, Gold: tt.gold})
			res, err := w.Step(t.Context(), tt.raw)
			if err != nil {
				t.Fatalf("%s %s: %v", tt.task, tt.raw, err)
			}
			if !res.Done || res.Answer != tt.answer || res.Observation != tt.obs || res.Action.Type != pipeline.ActionFinish {
				t.Errorf("%s %s (gold %q): got done=%v answer=%q observation=%q type=%s, want done=true answer=%q observation=%q type=finish",
					tt.task, tt.raw, tt.gold, res.Done, res.Answer, res.Observation, res.Action.Type, tt.answer, tt.obs)
			}
			if _, err := w.Step(t.Context(), "Search[Orla Vint]"); !errors.Is(err, env.ErrDone) {
				t.Errorf("%s: step after finish: got %v, want ErrDone", tt.raw, err)
			}
		}
	})
}
