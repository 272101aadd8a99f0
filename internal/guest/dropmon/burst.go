package dropmon

import "github.com/xmitcheck/xmitcheck/internal/guest/counters"

// BurstWhy names, in a ledger, the frames freed with QDISC_BURST_DROP.
const BurstWhy = "QDISC_BURST_DROP before the qdisc (net.core.qdisc_max_burst), refused with ENOBUFS, " +
	"counted on kfree_skb"

// BookBurst books into a's Uncounted the n frames __dev_xmit_skb() freed
// with QDISC_BURST_DROP (7.2+: more than net.core.qdisc_max_burst waiting
// on a locked qdisc's defer_list), as counted on kfree_skb. 7.2 and 7.3
// count them in no link or qdisc counter; a kernel with the fix in
// docs/findings/qdisc-burst-drop.md counts them in tx_dropped, so the
// ledger may balance with them there (counters.Accounting.MaybeCounted).
func BookBurst(a counters.Accounting, n uint64) counters.Accounting {
	a.Uncounted, a.UncountedWhy, a.MaybeCounted = n, BurstWhy, true
	return a
}
