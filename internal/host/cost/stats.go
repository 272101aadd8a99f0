package cost

import (
	"fmt"
	"math"
)

// Change is a relative change in percent with its 95 % interval: B against
// A over paired rounds, +5 meaning B is 5 % above A.
type Change struct {
	// Pct is the rounds' ratios B/A averaged (paired says how), minus one,
	// in percent; Lo and Hi bound its 95 % Student-t interval.
	Pct, Lo, Hi float64
	// Rounds is how many rounds paired a value of each side.
	Rounds int
	// Geometric says the change is the geometric mean of the ratios
	// (every value above 0), not their mean.
	Geometric bool `json:",omitempty"`
	// Left are the rounds left out where the stock side measured 0 and
	// the other did not, with both values.
	Left []string `json:",omitempty"`
}

// Half is the interval's half-width, in percentage points.
func (c Change) Half() float64 { return (c.Hi - c.Lo) / 2 }

// Contains reports whether pct lies in the interval.
func (c Change) Contains(pct float64) bool { return c.Lo <= pct && pct <= c.Hi }

// paired returns the change of b against a over the rounds where both have
// a value, round by round, with its 95 % interval. Each round's ratio
// b[i]/a[i] keeps its pairing (a drift over the rounds moves both sides of
// it alike). Where every value is above 0 the change is their geometric
// mean, the interval Student's t on their logarithms: an emulator's slow
// round weighs no more than its fast one, and A against itself centres on
// 0. Where b measured 0 in a round (a loss the patch took to nothing) no
// logarithm exists, and the mean of the ratios stands instead. A round
// where a measured 0 (a stock side that lost nothing: its reader kept up)
// has no ratio and is left out, noted in Change.Left when b did not
// measure 0 there. Fewer than two pairs make no interval.
func paired(a, b []float64) (Change, error) {
	var r []float64
	var left []string
	logs := true
	for i := range min(len(a), len(b)) {
		switch {
		case math.IsNaN(a[i]) || math.IsNaN(b[i]):
			continue
		case a[i] == 0:
			if b[i] != 0 {
				left = append(left, fmt.Sprintf("round %d: 0 against %g", i+1, b[i]))
			}
			continue
		}
		r = append(r, b[i]/a[i])
		logs = logs && b[i] > 0
	}
	if len(r) < 2 {
		return Change{}, fmt.Errorf("%d rounds with a ratio (A %d, B %d results), 2 at least make an interval",
			len(r), count(a), count(b))
	}
	t := tQuantile975(len(r) - 1)
	if logs {
		for i := range r {
			r[i] = math.Log(r[i])
		}
		mean, sd := meanSD(r)
		half := t * sd / math.Sqrt(float64(len(r)))
		return Change{Pct: pct(math.Exp(mean)), Lo: pct(math.Exp(mean - half)), Hi: pct(math.Exp(mean + half)),
			Rounds: len(r), Geometric: true, Left: left}, nil
	}
	mean, sd := meanSD(r)
	half := t * sd / math.Sqrt(float64(len(r)))
	// Every measure here is a rate or a cost, never below 0: neither is
	// their ratio.
	return Change{Pct: pct(mean), Lo: pct(math.Max(mean-half, 0)), Hi: pct(mean + half), Rounds: len(r), Left: left}, nil
}

// mean is the mean of the results of v (not NaN); ok is false without any.
func mean(v []float64) (float64, bool) {
	sum, n := 0.0, 0
	for _, x := range v {
		if !math.IsNaN(x) {
			sum += x
			n++
		}
	}
	return sum / float64(n), n > 0
}

// count is how many of v are results (not NaN).
func count(v []float64) int {
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) {
			n++
		}
	}
	return n
}

func pct(ratio float64) float64 { return (ratio - 1) * 100 }

func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)-1))
}

// t975 are the 97.5 % quantiles of Student's t for 1 to 30 degrees of
// freedom: a two-sided 95 % interval.
var t975 = [...]float64{
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
}

// tQuantile975 is Student's t 97.5 % quantile for df degrees of freedom:
// from the table up to 30, beyond it the Cornish-Fisher expansion around
// the normal's 1.95996 (within 0.001 of the exact value there).
func tQuantile975(df int) float64 {
	if df <= len(t975) {
		return t975[df-1]
	}
	z, n := 1.959964, float64(df)
	return z + (z*z*z+z)/(4*n) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*n*n)
}
