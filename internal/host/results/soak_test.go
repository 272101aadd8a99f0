package results

import (
	"bytes"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

func TestWriteSoak(t *testing.T) {
	round := func(race string) []*Run {
		return []*Run{judged(t, "003", nil,
			[]string{"TestA", "pass", tag(feature.Seed003), shows(feature.Seed003)},
			[]string{"TestRace", race, tag(feature.Seed003), "race_test.go:9: lost 3 frames"},
		)}
	}
	var b bytes.Buffer
	assert.Check(t, WriteSoak(&b, [][]*Run{round("pass"), round("pass")}))
	assert.Check(t, is.Contains(b.String(), "every verdict and every test the same"))

	b.Reset()
	assert.Check(t, !WriteSoak(&b, [][]*Run{round("pass"), round("fail"), round("pass")}))
	assert.Check(t, is.Contains(b.String(), "verdict of 003 changed: "+
		"BROKEN in rounds 2 (suites/tun.TestRace: a_test.go:7: race_test.go:9: lost 3 frames); present in rounds 1 3"))
	assert.Check(t, is.Contains(b.String(),
		"flaky suites/tun.TestRace: fail in rounds 2 (a_test.go:7: race_test.go:9: lost 3 frames); pass in rounds 1 3"))
}

func TestSoakMargins(t *testing.T) {
	round := func(worst string) []*Run {
		line := `xmitcheck:{"margins":[` +
			`{"site":"qdisc/rig_test.go:302","limit":15000000000,"worst":` + worst + `,"n":4},` +
			`{"site":"tun/env_test.go:9","limit":1000000000,"worst":900000000,"n":1}]}`
		return []*Run{judged(t, "003", nil,
			[]string{"TestA", "pass", tag(feature.Seed003), shows(feature.Seed003)},
			[]string{"", "pass", line},
		)}
	}
	rounds := [][]*Run{round("1200000000"), round("3000000000")}
	assert.Check(t, is.DeepEqual(rounds[1][0].Margins()[0].Worst.String(), "3s"))
	var b bytes.Buffer
	assert.Check(t, WriteSoak(&b, rounds))
	want := `soak: k: 2 time-bounded waits, the worst of each over 2 rounds, tightest first:
  tun/env_test.go:9: worst 900ms of 1s (10% left), 2 waits
  qdisc/rig_test.go:302: worst 3s of 15s (80% left), 8 waits
`
	assert.Check(t, is.Contains(b.String(), want))
}

func TestMergeMargins(t *testing.T) {
	a := []feature.Margin{{Site: "q/a.go:1", Limit: time.Second, Worst: 100 * time.Millisecond, N: 2}}
	b := []feature.Margin{
		{Site: "q/a.go:1", Limit: time.Second, Worst: 300 * time.Millisecond, N: 1, Timeouts: 1},
		{Site: "q/b.go:2", Limit: time.Second, N: 1},
	}
	assert.Check(t, is.DeepEqual(mergeMargins(a, b), []feature.Margin{
		{Site: "q/a.go:1", Limit: time.Second, Worst: 300 * time.Millisecond, N: 3, Timeouts: 1},
		{Site: "q/b.go:2", Limit: time.Second, N: 1},
	}))
}

// TestSoakReports: the rounds of a soak share one report file, each under
// its own name, so that a test that failed in one round of ten is there by
// name and round; the events read back as one run per round.
func TestSoakReports(t *testing.T) {
	var runs []*Run
	for i, race := range []string{"pass", "fail"} {
		r := judged(t, "003", nil,
			[]string{"TestA", "pass", tag(feature.Seed003), shows(feature.Seed003)},
			[]string{"TestRace", race, tag(feature.Seed003), "race_test.go:9: lost 3 frames"},
		)
		r.Round = i + 1
		runs = append(runs, r)
	}

	var b bytes.Buffer
	assert.NilError(t, WriteKTAP(&b, runs))
	checkKTAP(t, b.String())
	assert.Check(t, is.Contains(b.String(), "ok 1 k round=1\n"))
	assert.Check(t, is.Contains(b.String(), "not ok 2 k round=2\n"))

	b.Reset()
	assert.NilError(t, WriteJUnit(&b, runs))
	assert.Check(t, is.Contains(b.String(), `classname="k/round=1/suites/tun" name="TestRace"`))
	assert.Check(t, is.Contains(b.String(), `classname="k/round=2/suites/tun" name="TestRace"`))
	assert.Check(t, is.Contains(b.String(), `<property name="round" value="2">`))

	pkgs := map[string]bool{}
	for _, e := range jsonLines(t, runs) {
		pkgs[e["Package"].(string)] = true
	}
	assert.Check(t, pkgs["k/round=1/suites/tun"] && pkgs["k/round=2/suites/tun"], "%v", pkgs)

	b.Reset()
	assert.NilError(t, WriteEvents(&b, runs))
	back, err := ReadEvents(&b)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(back, 2))
	for i, r := range back {
		r.Finish(nil)
		assert.Check(t, is.Equal(r.Round, i+1))
		assert.Check(t, is.Equal(r.Failed(), i == 1), "round %d", r.Round)
	}
}
