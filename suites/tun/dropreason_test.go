package tun

import (
	"fmt"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// fullRingReason returns the value of SKB_DROP_REASON_FULL_RING, tun's
// reason for a frame that found the ring full.
func fullRingReason() (uint32, error) { return dropmon.Reason(feature.DropReasonFullRing) }

// watchDrops counts kfree_skb drops by reason on the tap, until the test
// ends.
func (rig *tapRig) watchDrops(t testing.TB) *dropmon.Monitor {
	t.Helper()
	ino, err := dropmon.NetnsInode(int(rig.e.NS))
	if err != nil {
		t.Fatalf("tap's namespace: %v", err)
	}
	w, err := dropmon.Attach(dropmon.Filter{Ifindex: rig.ifindex, NetnsInode: ino})
	if err != nil {
		t.Fatalf("count kfree_skb drops on %s: %v", tapName, err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// burstDrops returns a counter of the frames __dev_xmit_skb() freed with
// SKB_DROP_REASON_QDISC_BURST_DROP on the tap since now: with
// q->defer_list (7.2+) it frees a frame before the qdisc when more than
// net.core.qdisc_max_burst wait on the list. The sender gets ENOBUFS but
// neither the qdisc nor the device counts it. On a kernel without that
// reason there is no defer list and no such drop, and the counter stays 0.
func (rig *tapRig) burstDrops(t testing.TB) func() (uint64, error) {
	t.Helper()
	count, err := dropmon.WatchBurst(t, rig.e.NS, rig.ifindex, traffic.EtherType)
	if err != nil {
		t.Logf("no burst drops to count: %v", err)
		return func() (uint64, error) { return 0, nil }
	}
	return count
}

// sample is the tap's counters and the burst drops, read together.
type sample struct {
	state
	burst uint64
}

func (s sample) String() string { return fmt.Sprintf("%v; QDISC_BURST_DROP %d", s.state, s.burst) }

func (rig *tapRig) sampler(burst func() (uint64, error)) func() (sample, error) {
	return func() (sample, error) {
		st, err := rig.state()
		if err != nil {
			return sample{}, err
		}
		b, err := burst()
		return sample{st, b}, err
	}
}
