package env_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reactgen/reactgen/internal/env"
	"github.com/reactgen/reactgen/internal/env/envtest"
)

// failing is a corpus whose backend is down.
type failing struct{ err error }

func (f failing) Page(context.Context, string) (env.Page, bool, error) {
	return env.Page{}, false, f.err
}
func (f failing) Similar(context.Context, string, int) ([]string, error) {
	return nil, f.err
}

func TestWikiCorpusError(t *testing.T) {
	down := errors.New("backend down")
	w := env.New(failing{down}, env.Options{})
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
	res, err := env.New(c, env.Options{}).Step(t.Context(), "Search[blank]")
	if err != nil {
		t.Fatal(err)
	}
	if want := "The page Blank has no text."; res.Observation != want {
		t.Errorf("Search[blank]: got %q, want %q", res.Observation, want)
	}
}

func TestWikiCutTinyLimit(t *testing.T) {
	c := envtest.NewMemory(envtest.Pages())
	res, err := env.New(c, env.Options{MaxObservationChars: 4}).Step(t.Context(), "Search[Orla Vint]")
	if err != nil {
		t.Fatal(err)
	}
	if res.Observation != "Orla" {
		t.Errorf("limit 4: got %q, want %q", res.Observation, "Orla")
	}
}
