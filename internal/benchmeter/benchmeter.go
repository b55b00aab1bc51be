// Package benchmeter holds what the project's benchmarks share: the process's CPU time
// and the machine's load average, which they report beside wall time because the machine
// is shared and wall time alone says little, and the benchmark sizes that a person sets
// through the environment. Only tests and benchmarks import it.
package benchmeter

import (
	"os"
	"strconv"
	"testing"
)

// Size is the positive integer in the environment variable name, or def where it is
// unset; anything else fails the benchmark with a message naming the variable.
func Size(b testing.TB, name string, def int) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}
