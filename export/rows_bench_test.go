package export

import (
	"maps"
	"slices"
	"testing"

	"github.com/reactgen/reactgen/internal/benchmeter"
	"github.com/reactgen/reactgen/internal/episodetest"
)

// countWriter counts what it is given and keeps nothing.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// benchExamples renders n of BenchmarkExport's episodes in the react view, as the
// export's producer hands them to the writers.
func benchExamples(b *testing.B, n int) []Example {
	b.Helper()
	exs := make([]Example, n)
	for i := range exs {
		ex, err := Render(episodetest.Distinct(i, 18), ViewReAct, RenderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ex.Split = "train"
		ex.interchange = interchangeSteps(&ex)
		exs[i] = ex
	}
	return exs
}

// BenchmarkJSONLRows encodes 1,000 rendered examples into each JSONL format, nothing
// written to a file: the rows' own cost in the export (b.SetBytes: the rows' bytes;
// cpu-ms/op: the process's CPU time per pass).
func BenchmarkJSONLRows(b *testing.B) {
	exs := benchExamples(b, 1000)
	o := lineOptions{Weights: true}
	formats := slices.Sorted(func(yield func(string) bool) {
		for f := range jsonlFormats {
			if f != ChatTextFormat && !yield(f) {
				return
			}
		}
	})
	for _, format := range formats {
		b.Run(format, func(b *testing.B) {
			var w countWriter
			e, err := newJSONLEncoder(&w, "none", jsonlFormats[format], rowAppenders[format], o)
			if err != nil {
				b.Fatal(err)
			}
			for i := range exs {
				if _, _, err := e.write(&exs[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(w.n)
			b.ResetTimer()
			cpu0 := benchmeter.CPUSeconds()
			for b.Loop() {
				for i := range exs {
					if _, _, err := e.write(&exs[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric((benchmeter.CPUSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkJSONLRowsAll encodes 1,000 rendered examples into every JSONL format, as an
// export of every format does: "appenders" through the row appenders, "goccy" through
// goccy's encoder of the row structs, as the export did before them (cpu-ms/op: the
// process's CPU time per pass, garbage collection included).
func BenchmarkJSONLRowsAll(b *testing.B) {
	exs := benchExamples(b, 1000)
	o := lineOptions{Weights: true}
	for _, appenders := range []bool{true, false} {
		b.Run(map[bool]string{true: "appenders", false: "goccy"}[appenders], func(b *testing.B) {
			var encs []*jsonlEncoder
			var w countWriter
			for _, format := range slices.Sorted(maps.Keys(rowAppenders)) {
				rows := rowAppenders[format]
				if !appenders {
					rows = nil
				}
				e, err := newJSONLEncoder(&w, "none", jsonlFormats[format], rows, o)
				if err != nil {
					b.Fatal(err)
				}
				encs = append(encs, e)
			}
			pass := func() {
				for _, e := range encs {
					for i := range exs {
						if _, _, err := e.write(&exs[i]); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			pass()
			b.SetBytes(w.n)
			b.ResetTimer()
			cpu0 := benchmeter.CPUSeconds()
			for b.Loop() {
				pass()
			}
			b.ReportMetric((benchmeter.CPUSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
		})
	}
}
