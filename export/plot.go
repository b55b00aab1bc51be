package export

import (
	"bytes"
	"fmt"
	"html"
	"slices"
	"strconv"
)

// The card's plots, written as SVG next to it (plots/*.svg) by code of our own: a bar
// chart with labelled axes, no fonts or scripts from anywhere.

// bar is one bar of a chart.
type bar struct {
	label string
	value int
}

// Plot files, relative to the export directory.
const (
	PlotSteps   = "plots/steps.svg"
	PlotTokens  = "plots/tokens.svg"
	PlotRejects = "plots/rejects.svg"
)

// histogram counts values in buckets: one per value when they span at most maxBuckets,
// else maxBuckets equal ranges labelled by their lower bound.
func histogram(values []int, maxBuckets int) []bar {
	if len(values) == 0 {
		return nil
	}
	lo, hi := slices.Min(values), slices.Max(values)
	width := 1
	if hi-lo+1 > maxBuckets {
		width = (hi - lo + maxBuckets) / maxBuckets
		// Round the width up to 1, 2 or 5 times a power of ten, for readable labels.
		for _, p := range []int{1, 10, 100, 1000, 10000, 100000} {
			if w := niceWidth(width, p); w > 0 {
				width = w
				break
			}
		}
		lo -= lo % width
	}
	n := (hi-lo)/width + 1
	bars := make([]bar, n)
	for i := range bars {
		bars[i].label = strconv.Itoa(lo + i*width)
		if width > 1 {
			bars[i].label += "–" + strconv.Itoa(lo+(i+1)*width-1)
		}
	}
	for _, v := range values {
		bars[(v-lo)/width].value++
	}
	return bars
}

func niceWidth(w, p int) int {
	for _, m := range []int{1, 2, 5} {
		if w <= m*p {
			return m * p
		}
	}
	return 0
}

// barChart renders bars as an SVG bar chart: title, y axis of counts with gridlines,
// one labelled bar per entry (labels turned when there are many).
func barChart(title, xLabel, yLabel string, bars []bar) []byte {
	const (
		w, h                 = 720, 360
		left, right, top, bt = 64, 16, 40, 96
	)
	pw, ph := float64(w-left-right), float64(h-top-bt)
	maxV := 1
	for _, b := range bars {
		maxV = max(maxV, b.value)
	}
	step := niceStep(maxV)
	top5 := ((maxV + step - 1) / step) * step
	var b bytes.Buffer
	esc := html.EscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(title))
	for v := 0; v <= top5; v += step {
		y := float64(top) + ph - ph*float64(v)/float64(top5)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, w-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n", left-6, y+4, v)
	}
	if len(bars) > 0 {
		slot := pw / float64(len(bars))
		turn := len(bars) > 12
		for i, br := range bars {
			bh := ph * float64(br.value) / float64(top5)
			x := float64(left) + float64(i)*slot
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#4e79a7"><title>%s: %d</title></rect>`+"\n",
				x+slot*0.1, float64(top)+ph-bh, slot*0.8, bh, esc(br.label), br.value)
			lx, ly := x+slot/2, float64(top)+ph+16
			if turn {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" transform="rotate(-45 %.1f %.1f)">%s</text>`+"\n", lx, ly, lx, ly, esc(br.label))
			} else {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", lx, ly, esc(br.label))
			}
		}
	} else {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">none</text>`+"\n", left+int(pw)/2, top+int(ph)/2)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top+int(ph), w-right, top+int(ph))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+int(pw)/2, h-8, esc(xLabel))
	fmt.Fprintf(&b, `<text x="14" y="%d" text-anchor="middle" transform="rotate(-90 14 %d)">%s</text>`+"\n", top+int(ph)/2, top+int(ph)/2, esc(yLabel))
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// niceStep is a gridline step of 1, 2 or 5 times a power of ten giving at most 6 lines.
func niceStep(maxV int) int {
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if maxV/(m*p) <= 5 {
				return m * p
			}
		}
	}
}
