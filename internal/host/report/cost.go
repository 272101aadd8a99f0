package report

import (
	"fmt"
	"math"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/cost"
)

// costChart is one kernel's cost rows of one seed as a forest plot: a lane
// per row, the change of B against A as a point on its 95 % interval, the
// claim as a diamond, the line a regression crosses (the claim moved by the
// A/A floor) dashed, and the floor itself as a band around 0.
type costChart struct {
	ID, Title string
	W, H      float64
	// The plot spans X0..X1; ZeroX is 0 %.
	X0, X1, ZeroX, Top, Base float64
	Ticks                    []costTick
	Lanes                    []costLane
}

type costTick struct {
	X     float64
	Label string
}

type costLane struct {
	Y, LabelY              float64
	Label, Judgment, Class string
	Tip                    string
	// Measured is false where no change could be made (the lane says why).
	Measured                      bool
	LoX, HiX, PX, ClaimX, LineX   float64
	FloorX0, FloorW, BandY, BandH float64
}

// BandEnd is the bottom of the lane's band.
func (l costLane) BandEnd() float64 { return l.BandY + l.BandH }

// The forest plot's layout, in CSS pixels.
const (
	costLabelW = 400.0
	costPlotW  = 360.0
	costLaneH  = 30.0
	costTop    = 8.0
	costBottom = 28.0
	costRight  = 110.0
	// costReach is how far, in percentage points, a chart's scale goes
	// past its intervals and claims to show lines and floors.
	costReach = 50.0
)

// costCharts lays out a chart per kernel and seed with cost rows.
func costCharts(ks []kernel) []costChart {
	var out []costChart
	for _, k := range ks {
		var seeds []feature.Seed
		bySeed := map[feature.Seed][]cost.Row{}
		for _, r := range k.Costs {
			if _, ok := bySeed[r.Seed]; !ok {
				seeds = append(seeds, r.Seed)
			}
			bySeed[r.Seed] = append(bySeed[r.Seed], r)
		}
		for _, s := range seeds {
			out = append(out, costLayout(len(out), k.Short+": "+string(s), bySeed[s]))
		}
	}
	return out
}

func costLayout(i int, title string, rows []cost.Row) costChart {
	c := costChart{ID: fmt.Sprintf("cost-%d", i+1), Title: title, X0: costLabelW, X1: costLabelW + costPlotW,
		Top: costTop}
	c.Base = costTop + float64(len(rows))*costLaneH
	c.W, c.H = c.X1+costRight, c.Base+costBottom
	// The scale takes in every interval and claim, and 0; then the lines
	// and floors, but no further than costReach beyond those: a floor as
	// wide as a loss rate's can be (±2000 %) would squeeze every interval
	// into a few pixels. A band or line past the edge is drawn to it.
	lo, hi := 0.0, 0.0
	for _, r := range rows {
		m := r.JudgedMeasure()
		if m.Err != "" {
			continue
		}
		for _, v := range []float64{m.Change.Lo, m.Change.Hi, m.Claim} {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	dataLo, dataHi := lo, hi
	for _, r := range rows {
		m := r.JudgedMeasure()
		if m.Err != "" {
			continue
		}
		f := m.Floor()
		for _, v := range []float64{m.Claim - f, m.Claim + f, f, -f} {
			v = math.Max(math.Min(v, dataHi+costReach), dataLo-costReach)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	lo, hi = math.Max(-niceCeil(-lo+1e-9), -100), niceCeil(hi+1e-9)
	x := func(v float64) float64 {
		return round1(c.X0 + (math.Max(math.Min(v, hi), lo)-lo)/(hi-lo)*costPlotW)
	}
	c.ZeroX = x(0)
	step := niceCeil((hi - lo) / 5)
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e6; v += step {
		label := fmt.Sprintf("%+.0f %%", v)
		if math.Abs(v) < step/1e6 {
			label = "0 %"
		}
		c.Ticks = append(c.Ticks, costTick{X: x(v), Label: label})
	}
	for n, r := range rows {
		m := r.JudgedMeasure()
		y := costTop + (float64(n)+0.5)*costLaneH
		l := costLane{Y: round1(y), LabelY: round1(y), Label: laneLabel(r.Row, m.Unit),
			Judgment: string(r.Judgment), Class: "j-" + judgmentClass(r.Judgment), Tip: r.Line()}
		if m.Err == "" {
			f := m.Floor()
			line := m.Claim - f
			if m.Better == cost.Lower {
				line = m.Claim + f
			}
			l.Measured = true
			l.LoX, l.HiX, l.PX = x(m.Change.Lo), x(m.Change.Hi), x(m.Change.Pct)
			l.ClaimX, l.LineX = x(m.Claim), x(line)
			l.FloorX0, l.FloorW = x(-f), round1(x(f)-x(-f))
			l.BandY, l.BandH = round1(y-costLaneH/2+3), costLaneH-6
		}
		c.Lanes = append(c.Lanes, l)
	}
	return c
}

// laneMaxRunes is how much of a row's name fits left of the plot
// (costLabelW at the page's 12 px font); the lane's tooltip has it all.
const laneMaxRunes = 58

// laneLabel is a row's name and the unit it is judged in, the name cut to
// fit beside its lane.
func laneLabel(row, unit string) string {
	unit = " (" + unit + ")"
	r, keep := []rune(row), laneMaxRunes-len([]rune(unit))
	if len(r) > keep {
		row = string(r[:keep-1]) + "…"
	}
	return row + unit
}

// judgmentClass is the CSS class suffix of a judgment.
func judgmentClass(j cost.Judgment) string {
	switch j {
	case cost.Within:
		return "within"
	case cost.Regressed:
		return "regressed"
	case cost.Noisy:
		return "noisy"
	}
	return "error"
}
