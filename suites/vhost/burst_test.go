package vhost

import (
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// watchBurstDrops counts, from now until the test ends, the frames the
// kernel frees with QDISC_BURST_DROP (dropmon.WatchBurst). A kernel whose enum
// skb_drop_reason lacks it cannot drop that way, and the count stays 0.
func (r *rig) watchBurstDrops() func() uint64 {
	tb := r.tb
	tb.Helper()
	count, err := dropmon.WatchBurst(tb, r.e.NS, r.link.Attrs().Index, traffic.EtherType)
	if err != nil {
		return func() uint64 { return 0 }
	}
	return func() uint64 {
		n, err := count()
		assert.NilError(tb, err)
		return n
	}
}
