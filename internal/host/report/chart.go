package report

import (
	"fmt"
	"math"
	"strings"
)

// svgChart is a grouped bar chart laid out for the page's template: a
// group of bars per kernel, a bar per series (the mean of its results,
// with a whisker from the least to the greatest when there are several).
type svgChart struct {
	ID, Title, Unit string
	W, H            float64
	// The plot area: X0..X1 wide, Top..Base high; tick labels end at
	// TickX.
	X0, X1, Top, Base, TickX float64
	Ticks                    []svgTick
	Bars                     []svgBar
	Labels                   []svgLabel
	Legend                   []legendItem
	// Kernels and Rows are the values as a table.
	Kernels []string
	Rows    []valueRow
}

type svgTick struct {
	Y     float64
	Label string
}

type svgBar struct {
	X, Y, W, H float64
	// Series indexes the palette (CSS class s0…s7).
	Series int
	Tip    string
	// Whisker is set when the bar is the mean of several results: a line
	// at WX from the greatest (WY0) to the least (WY1).
	Whisker      bool
	WX, WY0, WY1 float64
}

type legendItem struct {
	Series int
	Name   string
}

type svgLabel struct {
	X, Y       float64
	Text, Full string
}

type valueRow struct {
	Series string
	Cells  []string
}

// The layout, in CSS pixels.
const (
	plotH     = 180.0
	marginL   = 72.0
	marginR   = 16.0
	marginT   = 12.0
	marginB   = 76.0
	barW      = 22.0
	groupPad  = 20.0
	minGroupW = 84.0
	// minBarH keeps a bar of 0 visible: measured 0 is not "no result".
	minBarH    = 2.0
	labelChars = 22
	palette    = 8
)

// layout turns a chart of the snapshots' benchmarks into SVG geometry.
func layout(i int, c *benchChart, ks []kernel) svgChart {
	kernels := c.kernels()
	groupW := max(minGroupW, float64(len(c.Series))*barW+groupPad)
	out := svgChart{ID: fmt.Sprintf("chart-%d", i+1), Title: c.Title, Unit: c.Unit,
		X0: marginL, X1: marginL + float64(len(kernels))*groupW, Top: marginT, Base: marginT + plotH, TickX: marginL - 6}
	out.W, out.H = out.X1+marginR, out.Base+marginB

	top := 0.0
	for n, s := range c.Series {
		out.Legend = append(out.Legend, legendItem{Series: n % palette, Name: s.Name})
		out.Rows = append(out.Rows, valueRow{Series: s.Name})
		for _, vs := range s.Values {
			if len(vs) > 0 {
				_, _, hi := mean(vs)
				top = max(top, hi)
			}
		}
	}
	top = niceCeil(top)
	y := func(v float64) float64 { return round1(out.Base - max(v, 0)/top*plotH) }
	for t := range 6 {
		v := top * float64(t) / 5
		out.Ticks = append(out.Ticks, svgTick{Y: y(v), Label: si(v)})
	}

	for g, k := range kernels {
		name := ks[k].Short
		out.Kernels = append(out.Kernels, name)
		gx := marginL + float64(g)*groupW
		text := name
		if r := []rune(name); len(r) > labelChars {
			text = string(r[:labelChars-1]) + "…"
		}
		out.Labels = append(out.Labels, svgLabel{X: round1(gx + groupW/2), Y: out.Base + 14, Text: text, Full: ks[k].Kernel})
		x := gx + (groupW-float64(len(c.Series))*barW)/2
		for n, s := range c.Series {
			vs := s.Values[k]
			if len(vs) == 0 {
				out.Rows[n].Cells = append(out.Rows[n].Cells, "—")
				continue
			}
			avg, lo, hi := mean(vs)
			b := svgBar{
				X:      round1(x + float64(n)*barW + 1),
				W:      barW - 2,
				Series: n % palette,
				Tip:    tip(ks[k].Short, s.Name, c.Unit, vs),
			}
			b.Y = min(y(avg), out.Base-minBarH)
			b.H = round1(out.Base - b.Y)
			if len(vs) > 1 {
				b.Whisker, b.WX, b.WY0, b.WY1 = true, round1(b.X+b.W/2), y(hi), y(lo)
			}
			out.Bars = append(out.Bars, b)
			out.Rows[n].Cells = append(out.Rows[n].Cells, value(vs))
		}
	}
	return out
}

// value is a cell of the values table: the mean, and how many results
// and their range when there are several.
func value(vs []float64) string {
	avg, lo, hi := mean(vs)
	if len(vs) == 1 {
		return si(avg)
	}
	return fmt.Sprintf("%s (n=%d, %s–%s)", si(avg), len(vs), si(lo), si(hi))
}

// tip is a bar's tooltip.
func tip(kernel, series, unit string, vs []float64) string {
	var all []string
	for _, v := range vs {
		all = append(all, si(v))
	}
	return fmt.Sprintf("%s, %s: %s %s (%s)", kernel, series, value(vs), unit, strings.Join(all, ", "))
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten, so the five
// ticks below it are round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*e >= v*(1-1e-9) {
			return m * e
		}
	}
	return 10 * e
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
