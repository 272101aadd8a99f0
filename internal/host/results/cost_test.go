package results

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/cost"
)

// costRows are three rows, one of each judgment.
func costRows() []cost.Row {
	row := func(name string, j cost.Judgment, pct, lo, hi float64) cost.Row {
		return cost.Row{
			Seed: feature.Seed000Tun, Row: name, Method: "A, A2 and B in one boot, 10 interleaved rounds",
			Judged: "rx-pps", Judgment: j,
			Measures: []cost.Measure{{Unit: "rx-pps", Better: cost.Higher, Claim: -0.8,
				Change: cost.Change{Pct: pct, Lo: lo, Hi: hi, Rounds: 10},
				AA:     cost.Change{Pct: 0, Lo: -4, Hi: 4, Rounds: 10}}},
		}
	}
	return []cost.Row{
		row("tap, 1 sending thread: received", cost.Regressed, -40, -45, -35),
		row("tap, 2 sending threads: received", cost.Noisy, -5, -20, 10),
		row("tap + vhost-net, 1 sending thread: received", cost.Within, 1, -2, 4),
	}
}

// TestCostOutputs: cost rows are a package of their own in KTAP, JSON and
// JUnit, named alike; REGRESSED fails, noisy skips with its figures,
// within passes; a regressed row fails the kernel's KTAP result.
func TestCostOutputs(t *testing.T) {
	runs := recorded(t, "!000 !002 !004", expect73)
	runs[1].Costs = costRows()
	want := []string{"000-tun/tap_1_sending_thread_received", "000-tun/tap_2_sending_threads_received",
		"000-tun/tap_vhost_net_1_sending_thread_received"}

	var k bytes.Buffer
	assert.NilError(t, WriteKTAP(&k, runs))
	checkKTAP(t, k.String())
	assert.Check(t, is.Contains(k.String(), "        # 000-tun tap, 1 sending thread: received: REGRESSED "+
		"(rx-pps -40.0 % [-45.0 %, -35.0 %], A/A floor ±4.0 %, claim -0.8 %, 10 rounds)\n"))
	assert.Check(t, is.Contains(k.String(), "        not ok 1 "+want[0]+"\n"))
	assert.Check(t, is.Contains(k.String(), "        ok 2 "+want[1]+" # SKIP noisy: rx-pps -5.0 %"))
	assert.Check(t, is.Contains(k.String(), "        ok 3 "+want[2]+"\n    not ok 4 cost\n"))
	assert.Check(t, !strings.Contains(strings.Split(k.String(), "# Subtest: debian:7.3")[0], "Subtest: cost"),
		"the kernel without rows has no cost block")

	assert.Check(t, is.DeepEqual(jsonTests(t, runs[1], CostPackage), want))

	var j bytes.Buffer
	assert.NilError(t, WriteJUnit(&j, runs))
	root := parseXML(t, j.Bytes())
	assert.Check(t, checkJenkins(root))
	assert.Check(t, checkAnt(root))
	var got junitSuites
	assert.NilError(t, xml.Unmarshal(j.Bytes(), &got))
	s := got.Suites[len(got.Suites)-1]
	assert.Check(t, is.Equal(s.Name, label(runs[1])+"/cost"))
	assert.Check(t, is.Equal(s.Failures, 1))
	assert.Check(t, is.Equal(s.Skipped, 1))
	assert.Check(t, is.Contains(j.String(), `name="cost.`+want[2]+`" value="within claim: rx-pps +1.0 %`))

	snap := runs[1].Snapshot()
	assert.Check(t, is.Len(snap.Costs, 3))
}
