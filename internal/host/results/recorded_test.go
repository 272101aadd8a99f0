package results

import (
	"os"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// The expectations of kernels/expectations for the recorded kernels, as
// they were when the runs were recorded.
const (
	expect510 = "!000 !002 !003 !004 vhost-net fq_codel clsact cls_bpf" +
		" !IFF_BACKPRESSURE !Qdisc.defer_list !skb_drop_reason !SKB_DROP_REASON_FULL_RING" +
		" !SKB_DROP_REASON_QDISC_BURST_DROP !BPF_F_TEST_XDP_LIVE_FRAMES !BPF_F_BROADCAST !generic-devmap-prog"
	expect73 = "000 !002 003 004 vhost-net fq_codel clsact cls_bpf" +
		" skb_drop_reason SKB_DROP_REASON_FULL_RING BPF_F_TEST_XDP_LIVE_FRAMES BPF_F_BROADCAST" +
		" Qdisc.defer_list SKB_DROP_REASON_QDISC_BURST_DROP IFF_BACKPRESSURE generic-devmap-prog" +
		" xfail:devmap-same-device xfail:qdisc-burst-uncounted"
)

// recorded reads testdata/tun-devmap.events and judges its two kernels
// against specs[0] (5.10) and specs[1] (7.3).
func recorded(t *testing.T, specs ...string) []*Run {
	t.Helper()
	f, err := os.Open("testdata/tun-devmap.events")
	assert.NilError(t, err)
	defer f.Close()
	runs, err := ReadEvents(f)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(runs, 2))
	for i, r := range runs {
		r.Name = []string{"debian:5.10", "debian:7.3"}[i]
		r.Finish(nil)
		e, err := expect.Parse(specs[i])
		assert.NilError(t, err)
		r.Judge(e, "test")
	}
	return runs
}

func states(r *Run) map[feature.Seed]State {
	out := map[feature.Seed]State{}
	for _, v := range r.Verdicts {
		out[v.Seed] = v.State
	}
	return out
}

func TestJudgeRecorded(t *testing.T) {
	runs := recorded(t, expect510, expect73)
	assert.Check(t, is.DeepEqual(states(runs[0]), map[feature.Seed]State{
		feature.Seed000Tun: Absent, feature.Seed000Vhost: Absent, feature.Seed002: Absent, feature.Seed004: Absent,
	}))
	assert.Check(t, is.DeepEqual(states(runs[1]), map[feature.Seed]State{
		feature.Seed000Tun: Present, feature.Seed002: Absent, feature.Seed004: Present,
	}))
	for _, r := range runs {
		assert.Check(t, !r.Failed() && !r.Mismatched(), "%s: %v", r.Kernel, r.Counts())
	}
	assert.Check(t, is.Equal(runs[0].Counts().XFail, 6),
		"5.10: the 5 veth ordering subtests and 002's subtest are expected failures")
}

// TestJudgeRecordedOtherwise replays the runs under the expectations a user
// could give: the verdicts stay, the tests and the mismatches follow.
func TestJudgeRecordedOtherwise(t *testing.T) {
	runs := recorded(t, "004", "!000")
	v, _ := runs[0].verdict(feature.Seed004)
	assert.Check(t, is.Equal(v.State, Absent))
	assert.Check(t, v.Mismatch())
	batch64 := runs[0].byName[key("github.com/xmitcheck/xmitcheck/suites/devmap", "TestOrdering/Veth/OneDest/Batch64")]
	assert.Check(t, is.Equal(batch64.Status, Fail), "an absence where the seed is expected fails the test that saw it")
	tun, _ := runs[1].verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Present))
	assert.Check(t, tun.Mismatch(), "7.3 shows 000, told it must not")
	c := runs[0].Counts()
	assert.Check(t, is.DeepEqual(c, Tally{Pass: 4, Fail: 5, Skip: 14}),
		"an absence nobody judges is a skip (002's subtest)")
	legacy, _ := runs[0].verdict(feature.Seed002)
	assert.Check(t, is.Equal(legacy.State, Absent), "and its verdict says so")
}
