//go:build !unix

package benchmeter

// CPUSeconds is not measured on this platform.
func CPUSeconds() float64 { return 0 }

// LoadAverage is not read on this platform.
func LoadAverage() float64 { return 0 }
