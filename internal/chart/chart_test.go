package chart

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestBuckets(t *testing.T) {
	if got := Buckets([]int{3, 3, 5}, 10); len(got) != 3 || got[0] != (Bar{Label: "3", Value: 2}) || got[2] != (Bar{Label: "5", Value: 1}) {
		t.Errorf("small range: %v", got)
	}
	vals := []int{120, 480, 999, 1500, 2500}
	bars := Buckets(vals, 5)
	total := 0.0
	for _, b := range bars {
		total += b.Value
	}
	if total != float64(len(vals)) || len(bars) > 6 || !strings.Contains(bars[0].Label, "–") {
		t.Errorf("wide range: %v", bars)
	}
	if Buckets(nil, 5) != nil {
		t.Error("no values gave bars")
	}
}

// TestEveryChartIsSVG: each drawer writes one well-formed SVG document named by its
// data-chart attribute, its size in the Chart, with one titled mark per value.
func TestEveryChartIsSVG(t *testing.T) {
	bars := []Bar{{Label: "a <b>", Value: 0.4, Lo: 0.3, Hi: 0.5, HasCI: true}, {Label: "c & d", Value: 0.9}}
	counts := []Bar{{Label: "1", Value: 4}, {Label: "2", Value: 7}}
	series := []Series{{Name: "s", Points: []Point{{X: 100, Y: 0.5, Lo: 0.4, Hi: 0.6}, {X: 1000, Y: 0.7, Lo: 0.6, Hi: 0.8}}}}
	for _, tc := range []struct {
		c     Chart
		marks int
	}{
		{Bars("bars", "Bars", bars, 1, func(v float64) string { return "x" }), 2},
		{Columns("columns", "Columns", "x", "y", counts), 2},
		{Columns("empty", "Empty", "x", "y", nil), 0},
		{Lines("lines", "Lines", "x", series, true), 2},
		{Histogram("hist", "Histogram", []string{"g1", "g2"}, []int{1, 2, 3}, [][]int{{1, 2, 3}, {3, 2, 1}}), 6},
	} {
		var doc struct {
			XMLName xml.Name `xml:"svg"`
			Name    string   `xml:"data-chart,attr"`
			Width   int      `xml:"width,attr"`
			Height  int      `xml:"height,attr"`
			Rects   []struct {
				Title string `xml:"title"`
			} `xml:"rect"`
			Circles []struct {
				Title string `xml:"title"`
			} `xml:"circle"`
		}
		if err := xml.Unmarshal([]byte(tc.c.SVG), &doc); err != nil {
			t.Fatalf("%s: not SVG: %v", tc.c.Name, err)
		}
		marks := len(doc.Circles)
		for _, r := range doc.Rects {
			if r.Title != "" {
				marks++
			}
		}
		if doc.Name != tc.c.Name || doc.Width != tc.c.Width || doc.Height != tc.c.Height || marks != tc.marks {
			t.Errorf("%s: data-chart %q, %dx%d (chart says %dx%d), %d marks, want %d",
				tc.c.Name, doc.Name, doc.Width, doc.Height, tc.c.Width, tc.c.Height, marks, tc.marks)
		}
	}
	if c := Columns("c", "C", "x", "y", counts); !strings.Contains(c.SVG, "<title>2: 7</title>") {
		t.Errorf("a column's title is not label: count:\n%s", c.SVG)
	}
}
