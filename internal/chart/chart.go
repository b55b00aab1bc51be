// Package chart draws reactgen's charts as SVG text: horizontal bars with intervals,
// vertical bars of counts, lines over a numeric axis, and grouped histograms. It consumes
// plain numbers and labels and produces standalone <svg class="chart" data-chart="NAME">
// documents that need no script, font or file from elsewhere, so the compare report
// (report) inlines them and the dataset card (export) links them as files.
package chart

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Palette is the marks' colours, a colour-blind-safe set (Okabe and Ito); a Bar's Colour
// and a series' position index it.
var Palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"}

// Bar is one bar of a horizontal bar chart, with an optional interval.
type Bar struct {
	Label  string
	Value  float64
	Lo, Hi float64 // the interval; ignored unless HasCI
	HasCI  bool
	Note   string // printed after the bar (e.g. "n 500")
	Colour int    // Palette index
}

// Chart is one chart's SVG with the name it is referred to by and its size in pixels.
type Chart struct {
	Name, Title   string
	SVG           string
	Width, Height int
}

const (
	// Width is every chart's width in pixels.
	Width      = 720
	chartWidth = Width
	labelWidth = 230
	rowHeight  = 26
	margin     = 36
)

func esc(s string) string { return html.EscapeString(s) }

// legendWidth is the room right of a line chart or histogram for its legend.
const legendWidth = 250

// textWidth is a generous estimate of the pixels s takes at the charts' 12 px sans-serif
// (7 px a character), so that no label is cut: a chart widens to its longest label.
func textWidth(s string) int { return 7 * len([]rune(s)) }

// room is the width labels need: at least least, else the longest label and pad.
func room(least, pad int, labels ...string) int {
	w := least
	for _, l := range labels {
		w = max(w, textWidth(l)+pad)
	}
	return w
}

// Colour is mark i's colour: the palette's, then further hues that repeat none of them,
// so that every run of a comparison keeps a colour of its own.
func Colour(i int) string {
	if i < len(Palette) {
		return Palette[i]
	}
	k := i - len(Palette)
	hue := math.Mod(17+float64(k)*137.508, 360) // the golden angle spreads any number of hues
	light := []int{38, 55, 30}[k%3]
	return fmt.Sprintf("hsl(%.0f, 70%%, %d%%)", hue, light)
}

func svgOpen(b *strings.Builder, name, title string, w, h int) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="%s" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12" role="img">`,
		esc(name), w, h, w, h)
	fmt.Fprintf(b, `<title>%s</title><rect width="100%%" height="100%%" fill="#ffffff"/>`, esc(title))
	fmt.Fprintf(b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`, 8, esc(title))
}

// NiceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
func NiceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// Bars draws horizontal bars scaled to max (0 = the largest value, rounded up), with
// ticks formatted by tick. Each bar's <title> is "label: tick(value)".
func Bars(name, title string, bars []Bar, max float64, tick func(float64) string) Chart {
	if max <= 0 {
		for _, b := range bars {
			max = math.Max(max, math.Max(b.Value, b.Hi))
		}
		max = NiceMax(max)
	}
	h := margin + len(bars)*rowHeight + 30
	labels := make([]string, len(bars))
	for i, bar := range bars {
		labels[i] = bar.Label
	}
	labelWidth := room(labelWidth, 16, labels...)
	width := chartWidth - 230 + labelWidth
	var b strings.Builder
	svgOpen(&b, name, title, width, h)
	plotW := float64(width - labelWidth - 90)
	x := func(v float64) float64 { return float64(labelWidth) + plotW*math.Max(0, math.Min(v, max))/max }
	// grid and ticks
	for i := 0; i <= 4; i++ {
		v := max * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>`, x(v), margin-4, x(v), h-26)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555555">%s</text>`, x(v), h-10, esc(tick(v)))
	}
	for i, bar := range bars {
		y := margin + i*rowHeight
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, labelWidth-8, y+16, esc(bar.Label))
		fmt.Fprintf(&b, `<rect class="bar" x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`,
			labelWidth, y+4, x(bar.Value)-float64(labelWidth), rowHeight-8, Colour(bar.Colour), esc(bar.Label), esc(tick(bar.Value)))
		end := x(bar.Value)
		if bar.HasCI {
			cy := float64(y) + float64(rowHeight)/2
			fmt.Fprintf(&b, `<line class="ci" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222222" stroke-width="1.5"/>`, x(bar.Lo), cy, x(bar.Hi), cy)
			for _, v := range []float64{bar.Lo, bar.Hi} {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222222" stroke-width="1.5"/>`, x(v), cy-5, x(v), cy+5)
			}
			end = math.Max(end, x(bar.Hi))
		}
		label := tick(bar.Value)
		if bar.Note != "" {
			label += " · " + bar.Note
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#333333">%s</text>`, end+6, y+16, esc(label))
	}
	b.WriteString(`</svg>`)
	return Chart{Name: name, Title: title, SVG: b.String(), Width: width, Height: h}
}

// Series is one line of a line chart.
type Series struct {
	Name   string
	Points []Point
}

// Point is one point of a series, with an optional interval.
type Point struct {
	X, Y, Lo, Hi float64
	Label        string
}

// Lines draws series over a numeric x axis (log-scaled when logX), y in [0, 1] as
// percent, with intervals as whiskers.
func Lines(name, title, xLabel string, series []Series, logX bool) Chart {
	const h = 340
	names := make([]string, len(series))
	for i, s := range series {
		names[i] = s.Name
	}
	width := chartWidth - legendWidth + room(legendWidth, 40, names...)
	left, right, top, bottom := 60.0, float64(chartWidth-legendWidth), 40.0, float64(h-50)
	minX, maxX := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s.Points {
			minX, maxX = math.Min(minX, p.X), math.Max(maxX, p.X)
		}
	}
	tx := func(v float64) float64 { return v }
	if logX {
		tx = func(v float64) float64 { return math.Log10(math.Max(v, 1)) }
	}
	lo, hi := tx(minX), tx(maxX)
	if hi-lo < 1e-9 {
		lo, hi = lo-1, hi+1
	}
	x := func(v float64) float64 { return left + (right-left)*(tx(v)-lo)/(hi-lo) }
	y := func(v float64) float64 { return bottom - (bottom-top)*v }
	var b strings.Builder
	svgOpen(&b, name, title, width, h)
	for i := 0; i <= 4; i++ {
		v := float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`, left, y(v), right, y(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555555">%.0f%%</text>`, left-6, y(v)+4, 100*v)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333333">%s</text>`, (left+right)/2, h-8, esc(xLabel))
	ticks := map[float64]bool{}
	for _, s := range series {
		for _, p := range s.Points {
			if !ticks[p.X] {
				ticks[p.X] = true
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555555">%s</text>`, x(p.X), bottom+16, esc(fmt.Sprint(p.X)))
			}
		}
	}
	for si, s := range series {
		c := Colour(si)
		var path strings.Builder
		for i, p := range s.Points {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x(p.X), y(p.Y))
		}
		fmt.Fprintf(&b, `<path class="series" d="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.TrimSpace(path.String()), c)
		for _, p := range s.Points {
			fmt.Fprintf(&b, `<line class="ci" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x(p.X), y(p.Lo), x(p.X), y(p.Hi), c)
			fmt.Fprintf(&b, `<circle class="point" cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s: %.1f%% at %v</title></circle>`, x(p.X), y(p.Y), c, esc(s.Name), 100*p.Y, p.X)
		}
		ly := top + float64(si)*18
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`, right+16, ly, c, right+32, ly+10, esc(s.Name))
	}
	b.WriteString(`</svg>`)
	return Chart{Name: name, Title: title, SVG: b.String(), Width: width, Height: h}
}

// Histogram draws one small bar series per group over the same integer bins (steps), as
// vertical bars side by side.
func Histogram(name, title string, groups []string, bins []int, counts [][]int) Chart {
	h := max(300, 40+18*len(groups)+20)
	width := chartWidth - legendWidth + room(legendWidth, 40, groups...)
	left, right, top, bottom := 50.0, float64(chartWidth-legendWidth), 40.0, float64(h-40)
	max := 0.0
	fracs := make([][]float64, len(groups))
	for g := range groups {
		total := 0
		for _, c := range counts[g] {
			total += c
		}
		fracs[g] = make([]float64, len(bins))
		for i, c := range counts[g] {
			if total > 0 {
				fracs[g][i] = float64(c) / float64(total)
			}
			max = math.Max(max, fracs[g][i])
		}
	}
	max = NiceMax(max)
	var b strings.Builder
	svgOpen(&b, name, title, width, h)
	binW := (right - left) / float64(max1(len(bins)))
	barW := (binW - 6) / float64(max1(len(groups)))
	y := func(v float64) float64 { return bottom - (bottom-top)*v/max }
	for i := 0; i <= 4; i++ {
		v := max * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`, left, y(v), right, y(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555555">%.0f%%</text>`, left-6, y(v)+4, 100*v)
	}
	for i, bin := range bins {
		bx := left + float64(i)*binW
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555555">%d</text>`, bx+binW/2, bottom+16, bin)
		for g := range groups {
			v := fracs[g][i]
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %d steps: %.1f%%</title></rect>`,
				bx+3+float64(g)*barW, y(v), math.Max(barW-1, 1), bottom-y(v), Colour(g), esc(groups[g]), bin, 100*v)
		}
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333333">steps to the answer</text>`, (left+right)/2, h-6)
	for g, name := range groups {
		ly := top + float64(g)*18
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`, right+16, ly, Colour(g), right+32, ly+10, esc(name))
	}
	b.WriteString(`</svg>`)
	return Chart{Name: name, Title: title, SVG: b.String(), Width: width, Height: h}
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// Columns draws vertical bars of counts: a y axis of counts with gridlines, one labelled
// bar per entry (labels turned when there are many), "none" when there are no bars. Each
// bar's <title> is "label: count".
func Columns(name, title, xLabel, yLabel string, bars []Bar) Chart {
	const (
		h                    = 360
		left, right, top, bt = 64, 16, 40, 96
	)
	pw, ph := float64(chartWidth-left-right), float64(h-top-bt)
	maxV := 1
	for _, b := range bars {
		maxV = max(maxV, int(math.Ceil(b.Value)))
	}
	step := niceStep(maxV)
	ceil := ((maxV + step - 1) / step) * step
	var b strings.Builder
	svgOpen(&b, name, title, chartWidth, h)
	for v := 0; v <= ceil; v += step {
		y := float64(top) + ph - ph*float64(v)/float64(ceil)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/>`, left, y, chartWidth-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555555">%d</text>`, left-6, y+4, v)
	}
	if len(bars) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">none</text>`, left+int(pw)/2, top+int(ph)/2)
	}
	slot := pw / float64(max1(len(bars)))
	turn := len(bars) > 12
	for i, br := range bars {
		bh := ph * br.Value / float64(ceil)
		x := float64(left) + float64(i)*slot
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`,
			x+slot*0.1, float64(top)+ph-bh, slot*0.8, bh, Colour(br.Colour), esc(br.Label), strconv.FormatFloat(br.Value, 'f', -1, 64))
		lx, ly := x+slot/2, float64(top)+ph+16
		if turn {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" transform="rotate(-45 %.1f %.1f)">%s</text>`, lx, ly, lx, ly, esc(br.Label))
		} else {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, lx, ly, esc(br.Label))
		}
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#000000"/>`, left, top+int(ph), chartWidth-right, top+int(ph))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333333">%s</text>`, left+int(pw)/2, h-8, esc(xLabel))
	fmt.Fprintf(&b, `<text x="14" y="%d" text-anchor="middle" transform="rotate(-90 14 %d)">%s</text>`, top+int(ph)/2, top+int(ph)/2, esc(yLabel))
	b.WriteString(`</svg>`)
	return Chart{Name: name, Title: title, SVG: b.String(), Width: chartWidth, Height: h}
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

// Buckets counts values into bars for Columns: one bar per value when they span at most
// maxBuckets, else at most maxBuckets equal ranges labelled "lo–hi", their width rounded
// up to 1, 2 or 5 times a power of ten. No values give no bars.
func Buckets(values []int, maxBuckets int) []Bar {
	if len(values) == 0 {
		return nil
	}
	lo, hi := slices.Min(values), slices.Max(values)
	width := 1
	if hi-lo+1 > maxBuckets {
		width = int(NiceMax(float64((hi - lo + maxBuckets) / maxBuckets)))
		lo -= lo % width
	}
	bars := make([]Bar, (hi-lo)/width+1)
	for i := range bars {
		bars[i].Label = strconv.Itoa(lo + i*width)
		if width > 1 {
			bars[i].Label += "–" + strconv.Itoa(lo+(i+1)*width-1)
		}
	}
	for _, v := range values {
		bars[(v-lo)/width].Value++
	}
	return bars
}
