package vhost

import (
	"errors"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// burstDropReason is the drop reason of frames that __dev_xmit_skb() frees
// before they reach a locked qdisc, when more than net.core.qdisc_max_burst
// wait on its defer_list (Linux 7.2+). sendto() gets ENOBUFS for them but
// no qdisc counts them, so the ledger needs them from the kfree_skb
// tracepoint.
const burstDropReason = "SKB_DROP_REASON_QDISC_BURST_DROP"

// burstWhy names the frames a ledger's Uncounted holds after a load.
const burstWhy = "QDISC_BURST_DROP before the qdisc (net.core.qdisc_max_burst), refused with ENOBUFS, counted on kfree_skb"

// watchBurstDrops counts, from now until the test ends, the frames the
// kernel frees with burstDropReason on the rig's tap. A kernel whose enum
// skb_drop_reason lacks it cannot drop that way, and the count stays 0.
func (r *rig) watchBurstDrops() func() uint64 {
	tb := r.tb
	tb.Helper()
	reason, err := dropmon.Reason(burstDropReason)
	if errors.Is(err, feature.ErrNotSupported) {
		return func() uint64 { return 0 }
	}
	assert.NilError(tb, err, "look up %s", burstDropReason)
	ino, err := dropmon.NetnsInode(int(r.e.NS))
	assert.NilError(tb, err, "the rig's namespace")
	m, err := dropmon.Attach(dropmon.Filter{Ifindex: r.link.Attrs().Index, NetnsInode: ino})
	assert.NilError(tb, err, "count %s on %s", burstDropReason, tapName)
	tb.Cleanup(func() { m.Close() })
	return func() uint64 {
		n, err := m.Count(reason)
		assert.NilError(tb, err)
		return n
	}
}
