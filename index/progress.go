package index

import (
	"fmt"
	"io"
	"time"
)

// ProgressLines is a BuildOptions.Progress that writes a line to w at most every five
// seconds: the pages indexed so far and the rate since it was made.
func ProgressLines(w io.Writer) func(pages int) {
	start, last := time.Now(), time.Now()
	return func(pages int) {
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			fmt.Fprintf(w, "indexed %d pages (%.0f pages/s)\n", pages, float64(pages)/time.Since(start).Seconds())
		}
	}
}
