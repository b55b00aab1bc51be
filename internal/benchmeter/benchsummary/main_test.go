package main

import (
	"strings"
	"testing"
)

// The lines are `go test -bench` output as BenchmarkCallCPU and BenchmarkExport print it.
const sample = `goos: linux
BenchmarkCallCPU/c16-2         	       2	9757021346 ns/op	         1.381 CPU-s	       460.3 CPU-µs/call	         0.6350 load	         9.756 wall-s
BenchmarkCallCPU/c64-2         	       2	2529613795 ns/op	         1.023 CPU-s	       341.1 CPU-µs/call	         1.020 load	         2.529 wall-s
BenchmarkExport-2   	       1	17392261927 ns/op	      4767 MB-written	        27.58 cpu-s/op	      2135 episode-bytes	      5750 episodes/s	        25.76 export-cpu-s/op	       243.0 export-peak-RSS-MB	        16.28 export-s/op	         1.826 filter-cpu-s/op	       145.9 filter-peak-RSS-MB	         1.113 filter-s/op	    100000 kept	         0.7800 load	       243.0 peak-RSS-MB
PASS
`

func TestSummarize(t *testing.T) {
	rows, err := summarize(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| client, per model call, 16 in flight | 460.3 µs | 9.756 s | 0.6350 |",
		"| client, per model call, 64 in flight | 341.1 µs | 2.529 s | 1.020 |",
		"| filter, 100000 episodes | 1.826 s | 1.113 s | 0.7800 |",
		"| export, 100000 episodes, 4767 MB written, peak RSS 243.0 MB | 25.76 s | 16.28 s | 0.7800 |",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseLineSkipsOtherLines(t *testing.T) {
	for _, line := range []string{"goos: linux", "PASS", "ok  	github.com/x	1.2s", "BenchmarkX-2 --- FAIL"} {
		if name, _, ok := parseLine(line); ok {
			t.Errorf("parseLine(%q) = %q, want no result", line, name)
		}
	}
}
