package kcidb

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/cost"
)

// TestCostRows: each cost row is a test under xmitcheck.cost, PASS within
// its claim, FAIL regressed, DONE noisy, ERROR unmeasured, with its
// figures in misc; the report still validates.
func TestCostRows(t *testing.T) {
	snaps := recordedRuns(t)
	m := cost.Measure{Unit: "rx-pps", Better: cost.Higher, Claim: -3,
		Change: cost.Change{Pct: -40, Lo: -45, Hi: -35, Rounds: 10}, AA: cost.Change{Lo: -4, Hi: 4, Rounds: 10}}
	row := func(name string, j cost.Judgment, m cost.Measure) cost.Row {
		return cost.Row{Seed: feature.Seed000Tun, Row: name, Judged: m.Unit, Judgment: j, Measures: []cost.Measure{m},
			Method: "A, A2 and B in one boot"}
	}
	snaps[1].Costs = []cost.Row{
		row("tap, 2 sending threads: received", cost.Regressed, m),
		row("tap, 1 sending thread: received", cost.Noisy, m),
		row("tap, 1 sending thread: lost", cost.Unmeasured,
			cost.Measure{Unit: "lost/s", Err: "lost/s: a side has no result"}),
	}
	r := validate(t, schema(t), snaps)
	got := map[string]Test{}
	for _, x := range r.Tests {
		got[x.Path] = x
	}
	regressed := got["xmitcheck.cost.000-tun.tap_2_sending_threads_received"]
	assert.Check(t, is.Equal(regressed.Status, Fail))
	assert.Check(t, is.Equal(regressed.Misc["aa_floor_pct"], 4.0))
	assert.Check(t, is.Equal(got["xmitcheck.cost.000-tun.tap_1_sending_thread_received"].Status, Done))
	assert.Check(t, is.Equal(got["xmitcheck.cost.000-tun.tap_1_sending_thread_lost"].Status, Error))
}
