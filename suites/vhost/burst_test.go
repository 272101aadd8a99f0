package vhost

import (
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// burstDropReason is the drop reason of frames that __dev_xmit_skb() frees
// before they reach a locked qdisc, when more than net.core.qdisc_max_burst
// wait on its defer_list (Linux 7.2+). sendto() gets ENOBUFS for them but
// no qdisc counts them, so the ledger needs them from the kfree_skb
// tracepoint.
const burstDropReason = feature.DropReasonQdiscBurst

// watchBurstDrops counts, from now until the test ends, the frames the
// kernel frees with burstDropReason on the rig's tap. A kernel whose enum
// skb_drop_reason lacks it cannot drop that way, and the count stays 0.
func (r *rig) watchBurstDrops() func() uint64 {
	tb := r.tb
	tb.Helper()
	count, err := dropmon.Watch(tb, r.e.NS, r.link.Attrs().Index, burstDropReason)
	if err != nil {
		return func() uint64 { return 0 }
	}
	return func() uint64 {
		n, err := count()
		assert.NilError(tb, err)
		return n
	}
}
