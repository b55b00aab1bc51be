package envtest

import (
	"slices"
	"testing"

	"github.com/reactgen/reactgen/env"
)

func TestMemoryConformance(t *testing.T) {
	RunConformance(t, func(t *testing.T, pages []env.Page) env.Corpus { return NewMemory(pages) })
}

func TestMemorySimilarRanking(t *testing.T) {
	c := NewMemory(Pages())
	got, err := c.Similar(t.Context(), "Vint", 3)
	if err != nil {
		t.Fatal(err)
	}
	// Title matches weigh more than text matches; ties go alphabetically.
	want := []string{"Orla Vint", "Vint", "Vint River"}
	if !slices.Equal(got, want) {
		t.Errorf("Similar(Vint, 3): got %q, want %q", got, want)
	}
}
