package react

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/pipeline"
)

func TestStep(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		thought  string
		action   string
		typ      string
		has, cut bool
		extra    bool
	}{
		{"numbered", "Thought 3: I should look it up.\nAction 3: Search[Carrow Bay]", "I should look it up.", "Search[Carrow Bay]", pipeline.ActionSearch, true, false, false},
		{"unnumbered lower-case", "Thought: find it\nAction: search[carrow bay]", "find it", "Search[carrow bay]", pipeline.ActionSearch, true, false, false},
		{"any case labels", "THOUGHT 2: hm\naction 2: LOOKUP[mill]", "hm", "Lookup[mill]", pipeline.ActionLookup, true, false, false},
		{"space before bracket and trailing text", "Thought: x\nAction: Finish [Aldbrook] because it fits", "x", "Finish[Aldbrook]", pipeline.ActionFinish, true, false, false},
		{"several actions", "Thought: x\nAction 1: Search[A]\nAction 2: Search[B]", "x", "Search[A]", pipeline.ActionSearch, true, false, true},
		{"several actions on one line", "Action: search[A], search[B]", "", "Search[A]", pipeline.ActionSearch, true, false, true},
		{"missing thought label", "I need to search the mill.\nAction 1: Search[Old Mill]", "I need to search the mill.", "Search[Old Mill]", pipeline.ActionSearch, true, false, false},
		{"own observation cut", "Thought 1: go\nAction 1: Search[A]\nObservation 1: A is a letter.\nThought 2: done\nAction 2: Finish[A]", "go", "Search[A]", pipeline.ActionSearch, true, true, false},
		{"observation on the action line", "Action: Search[A] Observation: made up", "", "Search[A]", pipeline.ActionSearch, true, true, false},
		{"continuation after Thought 1 prompt", " I need to search Carrow Bay.\nAction 1: Search[Carrow Bay]\n", "I need to search Carrow Bay.", "Search[Carrow Bay]", pipeline.ActionSearch, true, false, false},
		{"fireact", "Thought: The answer is Euphoria.\nAction: finish[Euphoria]", "The answer is Euphoria.", "Finish[Euphoria]", pipeline.ActionFinish, true, false, false},
		{"windows newlines and padding", "  \r\nThought 2: a\r\nAction 2: Lookup[b]\r\n\r\n", "a", "Lookup[b]", pipeline.ActionLookup, true, false, false},
		{"inline action", "Thought: check it. Action: Search[Velmar Bridge]", "check it.", "Search[Velmar Bridge]", pipeline.ActionSearch, true, false, false},
		{"bare action line", "Thought: check it\nsearch[Velmar Bridge]", "check it", "Search[Velmar Bridge]", pipeline.ActionSearch, true, false, false},
		{"action on the next line", "Thought: x\nAction 2:\n  Search[Y]", "x", "Search[Y]", pipeline.ActionSearch, true, false, false},
		{"nested brackets", "Action: Search[Orion [film]]", "", "Search[Orion [film]]", pipeline.ActionSearch, true, false, false},
		{"missing closing bracket", "Action: Search[Orion", "", "Search[Orion]", pipeline.ActionSearch, true, false, false},
		{"unknown action name", "Thought: x\nAction: Answer[Y]", "x", "Answer[Y]", pipeline.ActionInvalid, true, false, false},
		{"no action", "Thought: I am not sure what to do.", "I am not sure what to do.", "", "", false, false, false},
		{"empty", "", "", "", "", false, false, false},
		{"long s folds onto s as in the regexps", "Thought: x\nAction: Search[A]\nObſervation: y", "x", "Search[A]", pipeline.ActionSearch, true, true, false},
		{"reflexion inner thought kept", "Thought: reflect. Thought: try again\nAction: search[B]", "reflect. Thought: try again", "Search[B]", pipeline.ActionSearch, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Step(tt.in, 1)
			if p.Thought != tt.thought {
				t.Errorf("thought: got %q, want %q", p.Thought, tt.thought)
			}
			if p.Action != tt.action || p.ActionType != tt.typ || p.HasAction != tt.has {
				t.Errorf("action: got %q %q has=%v, want %q %q has=%v", p.Action, p.ActionType, p.HasAction, tt.action, tt.typ, tt.has)
			}
			if p.Cut != tt.cut || p.Extra != tt.extra {
				t.Errorf("cut/extra: got %v/%v, want %v/%v", p.Cut, p.Extra, tt.cut, tt.extra)
			}
		})
	}
}

// TestActionOnlyAndAnswer: the two extractors of a bare reply, each with its cases.
func TestActionOnlyAndAnswer(t *testing.T) {
	type tcase struct {
		in, want string
		ok       bool
	}
	for _, fn := range []struct {
		name  string
		f     func(string) (string, bool)
		cases []tcase
	}{
		{"ActionOnly", ActionOnly, []tcase{
			{"Action 3: Search[Velmar Bridge]", "Search[Velmar Bridge]", true},
			{"lookup[1931]", "Lookup[1931]", true},
			{"  finish[REFUTES]\n", "Finish[REFUTES]", true},
			{"I cannot decide.", "I cannot decide.", false},
			{"Action: Jump[x]", "Jump[x]", false},
		}},
		{"Answer", Answer, []tcase{
			{"Answer: Aldbrook", "Aldbrook", true},
			{"Thought: the mill is on the Aldbrook. So the answer is Aldbrook.", "Aldbrook", true},
			{"so the answer is: St. Louis.", "St. Louis", true},
			{"the answer is U.S. Navy. That is all.", "U.S. Navy", true},
			{"The answer is Carrow Bay. I am sure.", "Carrow Bay", true},
			{"Thought: it is yes.\nAction: Finish[yes]", "yes", true},
			{"finish [ REFUTES ]", "REFUTES", true},
			{"Answer: \"1931\"", "1931", true},
			{"final answer: 42\r\n", "42", true},
			{"I do not know.", "", false},
			{"Answer:", "", false},
		}},
	} {
		for _, tt := range fn.cases {
			t.Run(fn.name+"/"+tt.in, func(t *testing.T) {
				got, ok := fn.f(tt.in)
				if got != tt.want || ok != tt.ok {
					t.Errorf("%s(%q): got (%q, %v), want (%q, %v)", fn.name, tt.in, got, ok, tt.want, tt.ok)
				}
			})
		}
	}
}

// The word filters in front of the regexps must never hide a match.
func TestFiltersKeepMatches(t *testing.T) {
	inputs := []string{
		"", "Thought: x", "Thought: x\nAction: Search[A]", "ACTION 2: LOOKUP[b]", "aCtIoN:x", "act ion: x",
		"x OBSERVATION 1: y", "x]observation: y", "obſervation: y", "Obſervation: y", "search[a] lookup[b]",
		"\tSeArCh [a]", "Finish[x]", "loo\u212aup[x]", "ſearch[x]", "Action\u00a0: x", "actio", "observatio",
	}
	filtered := []struct {
		name string
		re   *regexp.Regexp
		word string
	}{
		{"obs", obsRe, "observation"}, {"actLine", actLineRe, "action"}, {"actInline", actInlineRe, "action"}, {"bare", bareActRe, "["},
	}
	for _, in := range inputs {
		for _, f := range filtered {
			if got, want := findAll(f.re, in, -1, f.word), f.re.FindAllStringIndex(in, -1); !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("%s on %q: got %v, want %v", f.name, in, got, want)
			}
		}
		checkLineFilters(t, in)
		if n := len(actNameRe.FindAllStringIndex(in, 3)); n > 1 && strings.Count(in, "[") < 2 {
			t.Errorf("actName on %q: %d matches with fewer brackets", in, n)
		}
	}
}

// checkLineFilters: findAllLines, which starts the scan at the line where the word may
// first be, finds what the regexp finds in the whole text.
func checkLineFilters(t *testing.T, in string) {
	t.Helper()
	for _, f := range []struct {
		name string
		re   *regexp.Regexp
		word string
	}{{"actLine", actLineRe, "action"}, {"bare", bareActRe, "["}} {
		for _, n := range []int{-1, 1, 2} {
			if got, want := findAllLines(f.re, in, n, f.word), f.re.FindAllStringIndex(in, n); !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("%s on %q (n %d): got %v, want %v", f.name, in, n, got, want)
			}
		}
	}
}

// TestLineFiltersKeepMatches runs checkLineFilters on lines of labels, words, brackets and
// blanks in every order: the word on a line before the one that matches, in the middle of
// a line, twice, in another case, after a non-ASCII letter.
func TestLineFiltersKeepMatches(t *testing.T) {
	lines := []string{
		"", "Thought 1: I should search", "Action 1: Search[A]", "action: lookup[b]", "  \tACTION 2 : Finish[c]",
		"no action here", "the action: is inline", "Search[x]", " lookup [y] and finish[z]", "[", "a[b",
		"Observation 1: x", "ſearch[x]", "Actio", "action", "\tsearch\t[",
	}
	rng := rand.New(rand.NewPCG(25, 3))
	for range 5000 {
		parts := make([]string, 1+rng.IntN(4))
		for i := range parts {
			parts[i] = lines[rng.IntN(len(lines))]
		}
		checkLineFilters(t, strings.Join(parts, "\n"))
	}
}

func FuzzLineFilters(f *testing.F) {
	f.Add("Thought: x\nAction: Search[A]\nAction: Lookup[b]")
	f.Add("search here\n search[a]")
	f.Fuzz(func(t *testing.T, in string) { checkLineFilters(t, in) })
}
