package filter

import (
	"fmt"
	"iter"
	"testing"

	"github.com/reactgen/reactgen/internal/episodetest"
	"github.com/reactgen/reactgen/pipeline"
)

func BenchmarkChainRun(b *testing.B) {
	eps := make([]pipeline.Episode, 10000)
	for i := range eps {
		eps[i] = episodetest.Episode(fmt.Sprint(i), fmt.Sprint(i%3000), fmt.Sprintf("Search[%d]", i%5), "Lookup[river]", "Finish[Aldbrook]")
	}
	cfg := pipeline.Default().Filter
	cfg.Rules = append(cfg.Rules, "max_tokens", "balance")
	cfg.MaxTokens = 4096
	cfg.BalanceBy = "type"
	c, err := New(cfg, pipeline.TaskHotpotQA, Options{Reopen: func() iter.Seq2[pipeline.Episode, error] { return episodetest.Seq(eps) }})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.Run(b.Context(), episodetest.Seq(eps), nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(eps)*b.N)/b.Elapsed().Seconds(), "episodes/s")
}
