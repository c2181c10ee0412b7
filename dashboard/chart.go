package dashboard

import "github.com/toolsift/toolsift/stats"

// chart is the tokens saved per day as SVG bars, drawn on the server so that the page
// needs no script for it.
type chart struct {
	Width, Height int
	Bars          []bar
	Max           int64
}

type bar struct {
	X, Y, W, H int
	Label      string // the day and its figure, for the bar's tooltip
	Day        string // shown under the first, middle and last bars
}

const (
	chartHeight = 160
	barWidth    = 18
	barGap      = 4
)

func newChart(days []stats.Row) *chart {
	c := &chart{Height: chartHeight, Width: len(days)*(barWidth+barGap) + 30} // room for the last label
	for _, d := range days {
		c.Max = max(c.Max, d.Saved)
	}
	for i, d := range days {
		h := 0
		if c.Max > 0 && d.Saved > 0 {
			h = max(1, int(d.Saved*int64(chartHeight-20)/c.Max))
		}
		b := bar{X: i * (barWidth + barGap), W: barWidth, H: h, Y: chartHeight - 20 - h,
			Label: d.Name + ": " + stats.Short(d.Saved) + " tokens saved"}
		if i == 0 || i == len(days)-1 || i == len(days)/2 {
			b.Day = d.Name[5:]
		}
		c.Bars = append(c.Bars, b)
	}
	return c
}
