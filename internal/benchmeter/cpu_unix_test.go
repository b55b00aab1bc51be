//go:build unix

package benchmeter

import "testing"

// TestCPUSecondsCounts checks that CPU time spent in a loop shows in CPUSeconds, which
// would stay 0 if getrusage failed.
func TestCPUSecondsCounts(t *testing.T) {
	x := 0
	for i := range 100_000_000 {
		x ^= i
	}
	if c := CPUSeconds(); c <= 0 {
		t.Errorf("CPUSeconds() = %v after a busy loop (x=%d), want > 0", c, x)
	}
}
