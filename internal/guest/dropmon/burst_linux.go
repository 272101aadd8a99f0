package dropmon

import (
	"errors"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// WatchBurst counts, from now until tb ends, the frames of ethertype proto
// that __dev_xmit_skb() frees with QDISC_BURST_DROP. It counts with a
// trace-event histogram on the whole machine (one device at a time
// carries a suite's frames), which misses none, and only where the kernel
// has no hist triggers with a BPF program on the device ifindex of ns,
// which a preemptible kernel can make skip some (tb's log says so). A
// kernel without the reason has no defer_list and no such drop: WatchBurst
// returns the feature.Unsupported error that says so.
func WatchBurst(tb testing.TB, ns netns.NsHandle, ifindex int, proto uint16) (func() (uint64, error), error) {
	tb.Helper()
	reason, err := Reason(feature.DropReasonQdiscBurst)
	switch {
	case errors.Is(err, feature.ErrNotSupported):
		return nil, err
	case err != nil:
		observe.Fault(tb, feature.Environment, "dropmon: %v", err)
	}
	h, err := WatchHist(tb, proto)
	if err == nil {
		return func() (uint64, error) { return h.Count(reason) }, nil
	}
	tb.Logf("burst drops counted by a BPF program on kfree_skb, which may miss some on a preemptible kernel: %v", err)
	return Watch(tb, ns, ifindex, feature.DropReasonQdiscBurst)
}
