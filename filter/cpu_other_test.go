//go:build !unix

package filter

// cpuSeconds is not read on this platform.
func cpuSeconds() float64 { return 0 }

// loadAverage is not read on this platform.
func loadAverage() float64 { return 0 }
