package jsonenc

import (
	"strings"
	"testing"

	"github.com/reactgen/reactgen/internal/benchmeter"
)

// BenchmarkAppendString escapes a 12 KB few-shot text of ReAct steps (quotes, line
// breaks, an en dash, '&') without and with HTML escaping (b.SetBytes: the text's bytes;
// cpu-ns/op: the process's CPU time per string; load: the one-minute load average).
func BenchmarkAppendString(b *testing.B) {
	text := strings.Repeat("Question: Which magazine was started first, Arthur's Magazine or First for Women?\n"+
		"Thought 1: I need to search \"Arthur's Magazine\" and First for Women, and find which was started first.\n"+
		"Action 1: Search[Arthur's Magazine]\n"+
		"Observation 1: Arthur's Magazine (1844–1846) was an American literary periodical published in Philadelphia & New York.\n", 30)
	for _, bc := range []struct {
		name   string
		append func([]byte, string) []byte
	}{{"json", AppendString}, {"html", AppendStringHTML}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := bc.append(nil, text)
			b.SetBytes(int64(len(text)))
			cpu0 := benchmeter.CPUSeconds()
			for b.Loop() {
				buf = bc.append(buf[:0], text)
			}
			b.ReportMetric((benchmeter.CPUSeconds()-cpu0)*1e9/float64(b.N), "cpu-ns/op")
			b.ReportMetric(benchmeter.LoadAverage(), "load")
		})
	}
}
