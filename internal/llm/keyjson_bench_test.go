package llm

import (
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/benchmeter"
)

// BenchmarkRequestJSON appends the JSON of a chat request of a 12 KB few-shot prompt, as
// a cache key is encoded before it is hashed (b.SetBytes: the JSON's bytes; cpu-ns/op:
// the process's CPU time per request; load: the one-minute load average).
func BenchmarkRequestJSON(b *testing.B) {
	exemplars := strings.Repeat("Question: Which magazine was started first, Arthur's Magazine or First for Women?\n"+
		"Thought 1: I need to search Arthur's Magazine and First for Women, and find which was started first.\n"+
		"Action 1: Search[Arthur's Magazine]\n"+
		"Observation 1: Arthur's Magazine (1844–1846) was an American literary periodical published in Philadelphia & New York.\n", 30)
	req := Request{Model: "fake-chat", MaxTokens: 256, Temperature: 0.7, Stop: []string{"\nObservation"}, Messages: []Message{
		{Role: "system", Content: "Solve a question answering task with interleaving Thought, Action, Observation steps."},
		{Role: "user", Content: exemplars + "Question: benchmark question?\n"},
	}}
	buf, ok := appendRequestJSON(nil, &req)
	if !ok {
		b.Fatal("request not encoded by hand")
	}
	b.SetBytes(int64(len(buf)))
	cpu0 := benchmeter.CPUSeconds()
	for b.Loop() {
		buf, _ = appendRequestJSON(buf[:0], &req)
	}
	b.ReportMetric((benchmeter.CPUSeconds()-cpu0)*1e9/float64(b.N), "cpu-ns/op")
	b.ReportMetric(benchmeter.LoadAverage(), "load")
}
