package report

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/cost"
)

// costFixture is fixture(t) with two cost rows on its second kernel: one
// regressed, one within its claim.
func costRowsFixture() []cost.Row {
	m := func(pct, lo, hi float64) cost.Measure {
		return cost.Measure{Unit: "rx-pps", Better: cost.Higher, Claim: -3,
			Change: cost.Change{Pct: pct, Lo: lo, Hi: hi, Rounds: 10}, AA: cost.Change{Lo: -5, Hi: 5, Rounds: 10}}
	}
	return []cost.Row{
		{Seed: feature.Seed000Tun, Row: "TCP, 8 streams", Judged: "rx-pps", Judgment: cost.Regressed,
			Measures: []cost.Measure{m(-32, -38, -26)}, Method: "A, A2 and B in one boot", A: "flag off", B: "flag on"},
		{Seed: feature.Seed000Tun, Row: "TCP, 1 stream", Judged: "rx-pps", Judgment: cost.Within,
			Measures: []cost.Measure{m(-1, -4, 2)}, Method: "A, A2 and B in one boot", A: "flag off", B: "flag on"},
	}
}

// TestCostChart: a lane per row, its point inside its interval, the claim
// and the regression line where the scale puts them, left of 0.
func TestCostChart(t *testing.T) {
	c := costLayout(0, "debian:7.3: 000-tun", costRowsFixture())
	assert.Assert(t, is.Len(c.Lanes, 2))
	for _, l := range c.Lanes {
		assert.Check(t, l.Measured)
		assert.Check(t, l.LoX <= l.PX && l.PX <= l.HiX, "%+v", l)
		assert.Check(t, l.LineX < l.ClaimX && l.ClaimX < c.ZeroX,
			"the line (-8 %%) left of the claim (-3 %%), left of 0: %+v", l)
		assert.Check(t, c.X0 <= l.LoX && l.HiX <= c.X1)
	}
	assert.Check(t, c.Lanes[0].HiX < c.Lanes[0].LineX, "the regressed interval lies wholly beyond the line")
}

// TestCostChartWideFloor: a loss row's floor of ±1957 % (debian:7.3's
// matrix) does not set the scale (it ends 50 points past the highest
// interval, rounded up): the other rows keep their width, and
// the band runs to the chart's edge.
func TestCostChartWideFloor(t *testing.T) {
	rows := costRowsFixture()
	rows[1].Measures[0].AA = cost.Change{Lo: -1957, Hi: 1957, Rounds: 6}
	c := costLayout(0, "debian:7.3: 000-tun", rows)
	last := c.Ticks[len(c.Ticks)-1].Label
	assert.Check(t, is.Equal(last, "+100 %"), "the scale ends %s, not +2000 %%: 50 points past +2 %% rounded up", last)
	assert.Check(t, c.Lanes[0].HiX-c.Lanes[0].LoX > 20, "the regressed interval keeps its width: %+v", c.Lanes[0])
	assert.Check(t, is.Equal(c.Lanes[1].FloorX0+c.Lanes[1].FloorW, c.X1), "the wide band runs to the edge")
}

func TestHTMLCost(t *testing.T) {
	snaps := fixture(t)
	snaps[1].Costs = costRowsFixture()
	var b bytes.Buffer
	assert.NilError(t, WriteHTML(&b, snaps))
	page := b.String()
	assert.Check(t, is.Contains(page, `<h2 id="cost-h">Cost</h2>`))
	assert.Check(t, is.Equal(strings.Count(page, `<g class="lane">`), 2))
	assert.Check(t, is.Contains(page, `<td class="j-regressed">REGRESSED</td>`))

	var md bytes.Buffer
	assert.NilError(t, WriteMarkdown(&md, snaps))
	assert.Check(t, is.Contains(md.String(), "| 000-tun | TCP, 8 streams |  | rx-pps (claim -3.0 %) | "+
		"-32.0 % [-38.0 %, -26.0 %] | ±5.0 % | **REGRESSED** |"))
}
