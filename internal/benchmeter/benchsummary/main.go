// Command benchsummary reads `go test -bench` output on standard input and prints issue
// 25's figures as one table: the client's CPU per model call (BenchmarkCallCPU), the
// filter's and the export's CPU time (BenchmarkExport), each beside its wall time and the
// load average the benchmark measured. `make bench` pipes its output through it; lines it
// does not know are ignored, and a figure whose benchmark did not run is left out.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	rows, err := summarize(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsummary:", err)
		os.Exit(1)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "benchsummary: no BenchmarkCallCPU or BenchmarkExport result in the input")
		os.Exit(1)
	}
	fmt.Println("| work | CPU time (user + sys) | wall | load |")
	fmt.Println("| --- | ---: | ---: | ---: |")
	for _, r := range rows {
		fmt.Println(r)
	}
}

// summarize turns the benchmark lines it knows into table rows, in input order.
func summarize(r io.Reader) ([]string, error) {
	var rows []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, m, ok := parseLine(sc.Text())
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(name, "BenchmarkCallCPU/c"):
			inFlight := strings.TrimPrefix(name, "BenchmarkCallCPU/c")
			rows = append(rows, fmt.Sprintf("| client, per model call, %s in flight | %s µs | %s s | %s |",
				inFlight, m["CPU-µs/call"], m["wall-s"], m["load"]))
		case name == "BenchmarkExport":
			rows = append(rows,
				fmt.Sprintf("| filter, %s episodes | %s s | %s s | %s |",
					m["kept"], m["filter-cpu-s/op"], m["filter-s/op"], m["load"]),
				fmt.Sprintf("| export, %s episodes, %s MB written, peak RSS %s MB | %s s | %s s | %s |",
					m["kept"], m["MB-written"], m["export-peak-RSS-MB"], m["export-cpu-s/op"], m["export-s/op"], m["load"]))
		}
	}
	return rows, sc.Err()
}

// parseLine splits a result line, "BenchmarkName-2  N  value unit  value unit …", into
// the name without its GOMAXPROCS suffix and the values by unit.
func parseLine(line string) (string, map[string]string, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return "", nil, false
	}
	name := f[0]
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		name = name[:i]
	}
	m := make(map[string]string, len(f)/2)
	for i := 2; i+1 < len(f); i += 2 {
		m[f[i+1]] = f[i]
	}
	return name, m, true
}
