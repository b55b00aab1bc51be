package env_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envtest"
)

// failing is a corpus whose backend is down.
type failing struct{ err error }

func (f failing) Page(context.Context, string, env.Match) (env.Page, bool, error) {
	return env.Page{}, false, f.err
}
func (f failing) Similar(context.Context, string, int) ([]string, error) {
	return nil, f.err
}

func TestWikiCorpusError(t *testing.T) {
	down := errors.New("backend down")
	w := env.New(failing{down}, env.Options{Observations: env.ObservationsRules})
	if _, err := w.Step(t.Context(), "Search[Anything]"); !errors.Is(err, down) {
		t.Errorf("Search on a failing corpus: got %v, want %v", err, down)
	}
	// Actions that need no corpus still work.
	res, err := w.Step(t.Context(), "Lookup[x]")
	if err != nil || res.Observation != env.NoPageObservation {
		t.Errorf("Lookup on a failing corpus: got %q, %v, want %q", res.Observation, err, env.NoPageObservation)
	}
}

func TestWikiEmptyPage(t *testing.T) {
	c := envtest.NewMemory([]env.Page{{Title: "Blank"}})
	for _, tt := range []struct{ mode, want string }{
		{env.ObservationsRules, "The page Blank has no text."},
		{env.ObservationsPaper, ""}, // wikienv.py joins no sentences
	} {
		res, err := env.New(c, env.Options{Observations: tt.mode}).Step(t.Context(), "Search[blank]")
		if err != nil {
			t.Fatal(err)
		}
		if res.Observation != tt.want {
			t.Errorf("%s: Search[blank]: got %q, want %q", tt.mode, res.Observation, tt.want)
		}
	}
}

func TestWikiCutTinyLimit(t *testing.T) {
	c := envtest.NewMemory(envtest.Pages())
	res, err := env.New(c, env.Options{Observations: env.ObservationsRules, MaxObservationChars: 4}).Step(t.Context(), "Search[Orla Vint]")
	if err != nil {
		t.Fatal(err)
	}
	if res.Observation != "Orla" {
		t.Errorf("limit 4: got %q, want %q", res.Observation, "Orla")
	}
}

func TestPaperSentences(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"one paragraph", "Ada Vint was a poet. She lived in Karsa.", []string{"Ada Vint was a poet.", "She lived in Karsa.."}},
		{"abbreviations split", "It was opened by Dr. Ada Vint in 1868. It closed.", []string{"It was opened by Dr.", "Ada Vint in 1868.", "It closed.."}},
		{"paragraph ends", "One two three. Four five six.\nSeven eight nine.", []string{"One two three.", "Four five six..", "Seven eight nine.."}},
		{"no full stop", "Vint may refer to:\nOrla Vint, a poet", []string{"Vint may refer to:.", "Orla Vint, a poet."}},
		{"short lines dropped", "Early life\n\n  A  b  \nShe was born in Karsa in 1950.", []string{"A  b.", "She was born in Karsa in 1950.."}},
		{"white space", " \t Pieces get  stripped .  Then  a full stop. \r\n", []string{"Pieces get  stripped.", "Then  a full stop.."}},
		{"no break without space", "Version 3.5 was out.Next came 4. End of story", []string{"Version 3.5 was out.Next came 4.", "End of story."}},
		{"empty pieces", "Wait. . . What now.", []string{"Wait.", "What now.."}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := env.PaperSentences(tt.text)
			if !slices.Equal(got, tt.want) {
				t.Errorf("PaperSentences(%q):\n got %q\nwant %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestPaperTextParagraphs(t *testing.T) {
	c := envtest.NewMemory([]env.Page{{
		Title:     "Ada Vint",
		Sentences: []string{"Ada Vint (born 1901) was a painter.", "She studied under Dr. Orla Marché.", "In 1930 she moved to Karsa."},
		Text:      "Ada Vint (born 1901) was a painter. She studied under Dr. Orla Marché.\nIn 1930 she moved to Karsa.",
	}})
	steps := []struct{ raw, want string }{
		{"Search[Ada Vint]", "Ada Vint (born 1901) was a painter. She studied under Dr. Orla Marché.. In 1930 she moved to Karsa.."},
		{"Lookup[Marché]", "(Result 1 / 1) Orla Marché.."},
		{"Lookup[she]", "(Result 1 / 2) She studied under Dr."},
	}
	w := env.New(c, env.Options{})
	for _, s := range steps {
		res, err := w.Step(t.Context(), s.raw)
		if err != nil {
			t.Fatal(err)
		}
		if res.Observation != s.want {
			t.Errorf("%s: got %q, want %q", s.raw, res.Observation, s.want)
		}
	}
	// Rules observations show the sentences the source gives.
	res, err := env.New(c, env.Options{Observations: env.ObservationsRules}).Step(t.Context(), "Search[Ada Vint]")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Ada Vint (born 1901) was a painter. She studied under Dr. Orla Marché. In 1930 she moved to Karsa."; res.Observation != want {
		t.Errorf("rules: got %q, want %q", res.Observation, want)
	}
}

func TestFailed(t *testing.T) {
	for obs, want := range map[string]bool{
		"Invalid action: jump[x]": true,
		"Invalid action: jump[x]. Valid actions are Search[<entity>], Lookup[<keyword>] and Finish[<answer>].": true,
		env.NoPageObservation:               true,
		"Could not find X. Similar: ['Y'].": false,
		"No more results.":                  false,
		"(Result 1 / 2) The page says so.":  false,
		"Episode finished.":                 false,
	} {
		if got := env.Failed(obs); got != want {
			t.Errorf("Failed(%q) = %v, want %v", obs, got, want)
		}
	}
}

// TestPaperPythonEdges plays what wikienv.py, wrappers.py and the notebooks' first-letter
// lower-casing answer under Python 3.11 where Python's string rules differ from Go's
// simple ones: str.lower() (İ to i̇, the final sigma), str.split() white space in
// normalize_answer, and repr() in the Similar list.
func TestPaperPythonEdges(t *testing.T) {
	c := envtest.NewMemory([]env.Page{
		{Title: "Odos Street", Text: "The ΟΔΟΣ sign stands at the corner.\nThe street is old."},
		{Title: "Istanbul Names", Text: "The city is written İSTANBUL on the sign. Istanbul is its usual spelling."},
		{Title: "Zero\u200bWidth Hall", Text: "A hall with an odd name."},
		{Title: "Tab\tHall", Text: "Another hall with an odd name."},
	})
	tests := []struct {
		name, gold string
		script     []struct{ raw, want string }
	}{
		{"lookup lower-cases as str.lower", "", []struct{ raw, want string }{
			{"Search[Odos Street]", "The ΟΔΟΣ sign stands at the corner.. The street is old.."},
			{"Lookup[οδος]", "(Result 1 / 1) The ΟΔΟΣ sign stands at the corner.."}, // "ΟΔΟΣ".lower() is "οδος"
			{"Lookup[οδοσ]", "No more results.\n"},
			{"Search[Istanbul Names]", "The city is written İSTANBUL on the sign. Istanbul is its usual spelling.."},
			{"Lookup[İstanbul]", "(Result 1 / 1) The city is written İSTANBUL on the sign."}, // i̇stanbul
			{"Lookup[istanbul]", "(Result 1 / 1) Istanbul is its usual spelling.."},
		}},
		{"first letter lower-cased as str.lower", "", []struct{ raw, want string }{
			{"İnvalid[x]", "Invalid action: i\u0307nvalid[x]"},
			{"Σearch[x]", "Invalid action: σearch[x]"},
		}},
		{"similar titles as repr", "", []struct{ raw, want string }{
			{"Search[Width Hall]", `Could not find Width Hall. Similar: ['Zero\u200bWidth Hall', 'Tab\tHall'].`},
		}},
		{"reward: final sigma", "ΟΔΟΣ", []struct{ raw, want string }{{"Finish[οδος]", "Episode finished, reward = 1\n"}}},
		{"reward: U+001F is white space", "Paris", []struct{ raw, want string }{{"Finish[Paris\u001f]", "Episode finished, reward = 1\n"}}},
		{"reward: İ is not I", "istanbul", []struct{ raw, want string }{{"Finish[İstanbul]", "Episode finished, reward = 0\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := env.New(c, env.Options{Gold: tt.gold})
			for _, s := range tt.script {
				res, err := w.Step(t.Context(), s.raw)
				if err != nil {
					t.Fatal(err)
				}
				if res.Observation != s.want {
					t.Errorf("%s:\n got %q\nwant %q", s.raw, res.Observation, s.want)
				}
			}
		})
	}
}
