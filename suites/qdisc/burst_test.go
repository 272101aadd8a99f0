package qdisc

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// maxBurstSysctl bounds q->defer_list: __dev_xmit_skb() frees a frame with
// SKB_DROP_REASON_QDISC_BURST_DROP when more than this many wait on it.
// It is global (net_hotdata), in the initial namespace's /proc/sys.
const maxBurstSysctl = "/proc/sys/net/core/qdisc_max_burst"

// burstLoadFor is how long each load of TestBurstDropsCounted runs: whether
// one burst-drops a frame depends on two CPUs meeting in __dev_xmit_skb().
const burstLoadFor = 2 * time.Second

// TestBurstDropsCounted: a frame the kernel drops on its way into a qdisc
// shows in a counter an administrator reads (tc -s qdisc's drops, ip -s
// link's tx_dropped). With net.core.qdisc_max_burst at 1 and 2×vCPUs
// senders, __dev_xmit_skb() frees frames with QDISC_BURST_DROP (7.2+); the
// test counts them on kfree_skb (internal/guest/dropmon) and asks whether the
// counters have them: sent == received + qdisc drops + device drops. Where
// the frames missing from that sum are exactly the burst drops, the kernel
// counts them nowhere: the known issue qdisc-burst-uncounted
// (docs/findings/qdisc-burst-drop.md), an XFAIL where the expectation
// allows it. Any other shortfall fails.
func TestBurstDropsCounted(t *testing.T) {
	observe.Of(t, feature.Seed003)
	observe.Probe(t, feature.QdiscDeferList, probeDeferList())
	_, err := dropmon.Reason(feature.DropReasonQdiscBurst)
	observe.Probe(t, feature.DropReasonQdiscBurst, err)
	setSysctl(t, maxBurstSysctl, 1)
	r := vethPath.rig(t, "pfifo")
	assert.Assert(t, r.burst != nil, "the rig counts no burst drops although the kernel has the reason")

	var s ledger
	for attempt := 1; ; attempt++ {
		base, err := r.state()
		assert.NilError(t, err)
		l := startLoad(t, r, loadOpts{senders: 2 * runtime.NumCPU(), stream: uint32(attempt-1) * 8, duration: burstLoadFor})
		handed, err := l.wait()
		assert.NilError(t, err)
		// Settled: the burst drops in a counter (a kernel that counts
		// them) or only on kfree_skb (one that does not).
		s, err = r.settle(testContext(t), handed, l.lo, l.hi, base)
		assert.NilError(t, err)
		if s.a.Uncounted > 0 {
			break
		}
		if attempt == 3 {
			// Two frames on defer_list need two CPUs in __dev_xmit_skb()
			// at once: not enough concurrency, not a kernel fault. Without
			// a burst drop no counter can be asked for one.
			t.Skipf("not enough load to decide: no frame was burst-dropped in 3 loads of %v with qdisc_max_burst 1 (%v)",
				burstLoadFor, s)
		}
	}
	a := s.a
	counted := a.Received + a.QdiscDrops + a.DeviceDrops + a.QdiscBacklog + a.InDevice
	switch missing := a.Sent - counted; {
	case missing == 0:
		t.Logf("every burst drop is in a counter: %v", s)
	case missing == a.Uncounted:
		observed := fmt.Sprintf("%d of %d frames freed with QDISC_BURST_DROP are in no qdisc or device counter (%v)",
			missing, a.Sent, s)
		observe.Known(t, feature.IssueQdiscBurstUncounted, observed)
	default:
		t.Fatalf("the counters miss %d frames, the burst drops are %d: %v", missing, a.Uncounted, s)
	}
}
