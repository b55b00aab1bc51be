package envtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/pipeline"
)

// RunConformance checks an env.Corpus implementation through env.Wiki, in rules and in
// paper mode. newCorpus must return a corpus holding exactly pages (Pages()), with titles
// matched by env.NormalizeTitle, Similar ranking by full-text relevance and each page's
// text as env.PageText gives it; the corpus must return an error wrapping ctx.Err() when
// called with a cancelled context.
func RunConformance(t *testing.T, newCorpus func(t *testing.T, pages []env.Page) env.Corpus) {
	t.Helper()
	pages := Pages()
	c := newCorpus(t, Pages())
	t.Run("paper", func(t *testing.T) { runPaper(t, c) })
	byTitle := map[string]env.Page{}
	for _, p := range pages {
		byTitle[p.Title] = p
	}
	first := func(title string, n int) string {
		s := byTitle[title].Sentences
		return strings.Join(s[:min(n, len(s))], " ")
	}
	lake := byTitle["Marrow Lake"].Sentences

	searchCases(t, c, pages, first, lake)
	lookupCases(t, c, byTitle, first, lake)
	actionCases(t, c, first)
	corpusCases(t, c, first, lake)
}

// searchCases checks Search: hits, the sentences option, title variants, disambiguation
// and misses.
func searchCases(t *testing.T, c env.Corpus, pages []env.Page, first func(title string, n int) string, lake []string) {
	t.Helper()
	t.Run("search hit", func(t *testing.T) {
		for _, title := range []string{"Orla Vint", "Marrow Lake", "Ostrow Tower", "Zélie Marché", "Brannock's Ferry"} {
			steps(t, c, rules(env.Options{}), step{"Search[" + title + "]", first(title, 5)})
		}
	})
	t.Run("search sentences option", func(t *testing.T) {
		steps(t, c, rules(env.Options{Sentences: 2}), step{"Search[Marrow Lake]", first("Marrow Lake", 2)})
		steps(t, c, rules(env.Options{Sentences: 50}), step{"Search[Marrow Lake]", first("Marrow Lake", 50)})
	})
	t.Run("search title variants", func(t *testing.T) {
		want := first("Kestrel Bay", 5)
		for _, v := range []string{"kestrel bay", "Kestrel_Bay", "KESTREL   BAY", `"Kestrel Bay"`, "'Kestrel Bay'", "“Kestrel Bay”", " kestrel_bay "} {
			steps(t, c, rules(env.Options{}), step{"Search[" + v + "]", want})
		}
	})
	t.Run("search disambiguation", func(t *testing.T) {
		steps(t, c, rules(env.Options{}),
			step{"Search[Vint]", "Vint may refer to: Orla Vint (born 1950), a poet from Karsa. Vint River, a river in Karsa."},
			step{"Search[Harrow]", "Harrow may refer to: Harrow Town, a market town in Elsmere, Harrow (band), a rock band from Karsa."},
			step{"Lookup[band]", "(Result 1 / 1) Harrow (band), a rock band from Karsa."},
		)
	})
	t.Run("search titles differing in case", func(t *testing.T) {
		steps(t, c, rules(env.Options{}), step{"Search[Tamsin Reach]", first("Tamsin Reach", 5)})
		steps(t, c, rules(env.Options{}), step{"Search[TAMSIN REACH]", first("TAMSIN REACH", 5)})
		steps(t, c, rules(env.Options{}), step{"Search['TAMSIN_REACH']", first("TAMSIN REACH", 5)})
	})
	t.Run("search falls back to the disambiguation page", func(t *testing.T) {
		steps(t, c, rules(env.Options{}),
			step{"Search[Kell]", "Kell may refer to: Kell Hills, a range in Karsa. Kell Tarn, a lake in the Kell Hills."},
			step{"Lookup[tarn]", "(Result 1 / 1) Kell Tarn, a lake in the Kell Hills."},
		)
	})
	t.Run("search miss lists similar titles", func(t *testing.T) {
		tests := []struct {
			entity string
			want   string // the rendering of a title that must be listed
		}{
			{"heron Marrow", "'Marrow Lake'"},
			{"Brannock crossing", `"Brannock's Ferry"`},
			{"Ostrow bell", "'Ostrow Tower'"},
		}
		for _, tt := range tests {
			w := env.New(c, rules(env.Options{}))
			res, err := w.Step(t.Context(), "Search["+tt.entity+"]")
			if err != nil {
				t.Fatalf("Search[%s]: %v", tt.entity, err)
			}
			obs := res.Observation
			prefix := "Could not find [" + tt.entity + "]. Similar: ["
			if !strings.HasPrefix(obs, prefix) || !strings.HasSuffix(obs, "].") {
				t.Errorf("Search[%s]: got %q, want the form %s...].", tt.entity, obs, prefix)
			}
			if !strings.Contains(obs, tt.want) {
				t.Errorf("Search[%s]: got %q, want it to list %s", tt.entity, obs, tt.want)
			}
			listed := 0
			for _, p := range pages {
				if strings.Contains(obs, "'"+p.Title+"'") || strings.Contains(obs, `"`+p.Title+`"`) {
					listed++
				}
			}
			if listed < 1 || listed > env.SimilarCount {
				t.Errorf("Search[%s]: listed %d titles, want 1 to %d: %q", tt.entity, listed, env.SimilarCount, obs)
			}
		}
	})
	t.Run("search miss without similar", func(t *testing.T) {
		steps(t, c, rules(env.Options{}), step{"Search[Qzxvw Plkjh]", "Could not find [Qzxvw Plkjh]. Similar: []."})
	})
}

// lookupCases checks Lookup: its cycle over the sentences, long pages, and a search
// resetting it.
func lookupCases(t *testing.T, c env.Corpus, byTitle map[string]env.Page, first func(title string, n int) string, lake []string) {
	t.Helper()
	t.Run("lookup before search", func(t *testing.T) {
		steps(t, c, rules(env.Options{}), step{"Lookup[heron]", env.NoPageObservation})
	})
	t.Run("lookup cycles over all sentences", func(t *testing.T) {
		steps(t, c, rules(env.Options{}),
			step{"Search[Marrow Lake]", first("Marrow Lake", 5)},
			step{"Lookup[heron]", "(Result 1 / 3) " + lake[1]},
			step{"Lookup[HERON]", "(Result 2 / 3) " + lake[6]},
			step{"Lookup[heron]", "(Result 3 / 3) " + lake[10]},
			step{"Lookup[heron]", "No more results."},
			step{"Lookup[heron]", "No more results."},
			step{"Lookup[ferry]", "(Result 1 / 1) " + lake[3]},
			step{"Lookup[heron]", "(Result 1 / 3) " + lake[1]},
			step{"Lookup[pelican]", "No more results."},
		)
	})
	t.Run("lookup long page", func(t *testing.T) {
		tower := byTitle["Ostrow Tower"].Sentences
		script := []step{{"Search[Ostrow Tower]", first("Ostrow Tower", 5)}}
		for i := range 10 {
			script = append(script, step{"Lookup[great bell]", fmt.Sprintf("(Result %d / 10) %s", i+1, tower[4*i+1])})
		}
		script = append(script, step{"Lookup[great bell]", "No more results."})
		steps(t, c, rules(env.Options{}), script...)
	})
	t.Run("search resets lookup", func(t *testing.T) {
		steps(t, c, rules(env.Options{}),
			step{"Search[Marrow Lake]", first("Marrow Lake", 5)},
			step{"Lookup[heron]", "(Result 1 / 3) " + lake[1]},
			step{"Search[Marrow Lake]", first("Marrow Lake", 5)},
			step{"Lookup[heron]", "(Result 1 / 3) " + lake[1]},
			step{"Search[Orla Vint]", first("Orla Vint", 5)},
			step{"Lookup[heron]", "No more results."},
		)
	})
	t.Run("failed search clears page", func(t *testing.T) {
		steps(t, c, rules(env.Options{}),
			step{"Search[Marrow Lake]", first("Marrow Lake", 5)},
			step{"Search[Qzxvw Plkjh]", "Could not find [Qzxvw Plkjh]. Similar: []."},
			step{"Lookup[heron]", env.NoPageObservation},
		)
	})
}

// actionCases checks how actions are read: spellings, invalid actions, Finish and the
// observation cut.
func actionCases(t *testing.T, c env.Corpus, first func(title string, n int) string) {
	t.Helper()
	t.Run("action spellings", func(t *testing.T) {
		want := first("Orla Vint", 5)
		for _, raw := range []string{"search[Orla Vint]", "SEARCH[Orla Vint]", "Search [Orla Vint]", "  Search[ Orla Vint ]  ", "Search[Orla Vint] and then more", "Search[Orla Vint"} {
			steps(t, c, rules(env.Options{}), step{raw, want})
		}
	})
	t.Run("invalid actions", func(t *testing.T) {
		for _, raw := range []string{"Jump[Orla Vint]", "Search[]", "Search Orla Vint", "Lookup[  ]", "Finish[]", "Thought: hmm", "[Orla Vint]"} {
			steps(t, c, rules(env.Options{}), step{raw, "Invalid action: " + strings.TrimSpace(raw) + ". Valid actions are Search[<entity>], Lookup[<keyword>] and Finish[<answer>]."})
		}
	})
	t.Run("finish", func(t *testing.T) {
		tests := []struct {
			task, raw, want string
		}{
			{pipeline.TaskHotpotQA, "Finish[  Orla Vint ]", "Orla Vint"},
			{pipeline.TaskHotpotQA, "finish[supports]", "supports"},
			{pipeline.TaskFEVER, "Finish[SUPPORTS]", pipeline.LabelSupports},
			{pipeline.TaskFEVER, "Finish[supports]", pipeline.LabelSupports},
			{pipeline.TaskFEVER, "Finish[Refutes.]", pipeline.LabelRefutes},
			{pipeline.TaskFEVER, "Finish[not enough info]", pipeline.LabelNEI},
			{pipeline.TaskFEVER, "Finish[supports!]", pipeline.LabelSupports},
			{pipeline.TaskFEVER, "Finish['SUPPORTS']", pipeline.LabelSupports},
			// Not the labels under the official rule (score.Label): kept as written,
			// and scored wrong.
			{pipeline.TaskFEVER, "Finish[NOT ENOUGH INFORMATION]", "NOT ENOUGH INFORMATION"},
			{pipeline.TaskFEVER, "Finish[Not_Enough_Info]", "Not_Enough_Info"},
			{pipeline.TaskFEVER, "Finish[maybe]", "maybe"},
		}
		for _, tt := range tests {
			w := env.New(c, rules(env.Options{Task: tt.task}))
			res, err := w.Step(t.Context(), tt.raw)
			if err != nil {
				t.Fatalf("%s %s: %v", tt.task, tt.raw, err)
			}
			if !res.Done || res.Answer != tt.want || res.Observation != "Episode finished." || res.Action.Type != pipeline.ActionFinish {
				t.Errorf("%s %s: got done=%v answer=%q observation=%q type=%s, want done=true answer=%q observation=%q type=finish",
					tt.task, tt.raw, res.Done, res.Answer, res.Observation, res.Action.Type, tt.want, "Episode finished.")
			}
			if _, err := w.Step(t.Context(), "Search[Orla Vint]"); !errors.Is(err, env.ErrDone) {
				t.Errorf("%s: step after finish: got %v, want ErrDone", tt.raw, err)
			}
		}
	})
	t.Run("observation cut", func(t *testing.T) {
		w := env.New(c, rules(env.Options{MaxObservationChars: 60}))
		for _, raw := range []string{"Search[Ostrow Tower]", "Search[Qzxvw Plkjh " + strings.Repeat("x", 200) + "]", "Jump[" + strings.Repeat("y", 500) + "]"} {
			res, err := w.Step(t.Context(), raw)
			if err != nil {
				t.Fatalf("%.30s: %v", raw, err)
			}
			if n := len([]rune(res.Observation)); n > 60 || !strings.HasSuffix(res.Observation, "[...]") {
				t.Errorf("%.30s: got %d characters %q, want at most 60 ending in [...]", raw, n, res.Observation)
			}
		}
	})
}

// corpusCases checks the corpus itself: Page and Similar, a cancelled context and
// concurrent episodes.
func corpusCases(t *testing.T, c env.Corpus, first func(title string, n int) string, lake []string) {
	t.Helper()
	t.Run("corpus page and similar", func(t *testing.T) {
		ctx := t.Context()
		if _, ok, err := c.Page(ctx, "No Such Page Anywhere", env.MatchRules); ok || err != nil {
			t.Errorf("Page(missing): got ok=%v err=%v, want ok=false err=nil", ok, err)
		}
		p, ok, err := c.Page(ctx, "marrow_lake", env.MatchRules)
		if err != nil || !ok || p.Title != "Marrow Lake" || len(p.Sentences) != len(lake) {
			t.Errorf("Page(marrow_lake): got %q with %d sentences ok=%v err=%v, want Marrow Lake with %d", p.Title, len(p.Sentences), ok, err, len(lake))
		}
		if p, _, _ := c.Page(ctx, "Vint", env.MatchRules); !p.Disambiguation {
			t.Errorf("Page(Vint): got Disambiguation=false, want true")
		}
		got, err := c.Similar(ctx, "Karsa Vint", 2)
		if err != nil || len(got) < 1 || len(got) > 2 {
			t.Errorf("Similar(Karsa Vint, 2): got %q err=%v, want one or two titles", got, err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		w := env.New(c, rules(env.Options{}))
		if _, err := w.Step(ctx, "Search[Qzxvw Uncached]"); !errors.Is(err, context.Canceled) {
			t.Errorf("Search with cancelled context: got %v, want context.Canceled", err)
		}
	})
	t.Run("concurrent episodes", func(t *testing.T) {
		script := []step{
			{"Search[Marrow Lake]", first("Marrow Lake", 5)},
			{"Lookup[heron]", "(Result 1 / 3) " + lake[1]},
			{"Search[Vint_River]", first("Vint River", 5)},
			{"Search[heron Marrow]", ""},
			{"Lookup[heron]", env.NoPageObservation},
			{"Search[Kestrel Bay]", first("Kestrel Bay", 5)},
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := range 8 {
			wg.Go(func() {
				for range 10 {
					w := env.New(c, rules(env.Options{}))
					for _, s := range script {
						res, err := w.Step(t.Context(), s.raw)
						if err != nil {
							errs <- fmt.Errorf("goroutine %d %s: %w", g, s.raw, err)
							return
						}
						if s.want != "" && res.Observation != s.want {
							errs <- fmt.Errorf("goroutine %d %s: got %q, want %q", g, s.raw, res.Observation, s.want)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// rules sets o to reactgen's own observations and lenient action parsing.
func rules(o env.Options) env.Options {
	o.Observations, o.Actions = env.ObservationsRules, env.ActionsLenient
	return o
}

type step struct{ raw, want string }

// steps plays script on a fresh Wiki and checks every observation.
func steps(t *testing.T, c env.Corpus, opts env.Options, script ...step) {
	t.Helper()
	w := env.New(c, opts)
	for i, s := range script {
		res, err := w.Step(t.Context(), s.raw)
		if err != nil {
			t.Fatalf("step %d %s: %v", i+1, s.raw, err)
		}
		if res.Observation != s.want {
			t.Errorf("step %d %s:\n got %q\nwant %q", i+1, s.raw, res.Observation, s.want)
		}
	}
}
