package env_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reactgen/reactgen/env"
	"github.com/reactgen/reactgen/env/envtest"
)

// BenchmarkLookup measures one Lookup step on a long page (60 sentences of about 120
// characters, a page larger than most Wikipedia intros), alternating two keywords so
// that every other call scans the whole page afresh, in each observation mode (paper,
// the default, walks the sentences it cuts from the page's text; rules walks the page's
// own sentences).
func BenchmarkLookup(b *testing.B) {
	for _, mode := range env.ObservationModes {
		b.Run(mode, func(b *testing.B) { benchLookup(b, mode) })
	}
}

func benchLookup(b *testing.B, mode string) {
	sentences := make([]string, 60)
	for i := range sentences {
		sentences[i] = fmt.Sprintf("In %d the observatory of Varnhold recorded comet number %d, which the survey catalogued with its orbit and brightness.", 1800+i, i)
	}
	sentences[17] += " Its keeper was Dr. Ilsa Morrow."
	sentences[42] += " Morrow retired in 1901."
	c := envtest.NewMemory([]env.Page{{Title: "Varnhold Observatory", Sentences: sentences}})
	w := env.New(c, env.Options{Observations: mode})
	if _, err := w.Step(b.Context(), "Search[Varnhold Observatory]"); err != nil {
		b.Fatal(err)
	}
	actions := []string{"Lookup[Morrow]", "Lookup[comet number 59]"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		res, err := w.Step(b.Context(), actions[i%2])
		if err != nil || !strings.HasPrefix(res.Observation, "(Result") {
			b.Fatalf("lookup: %q, %v", res.Observation, err)
		}
	}
}
