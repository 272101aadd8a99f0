package results

import (
	"regexp"
	"strings"
)

// benignRaces are the KCSAN reports the judge notes and does not judge:
// data races that every kernel has, in code no seed changed, which a
// report may still name a seed's function for (a race between the seed's
// caller and a counter every driver bumps). Each is matched by the two
// functions of the report's first line, in the order KCSAN prints them
// (sorted), and says why it is benign. A report with a reordered access
// matches none: that is what a missing barrier looks like.
var benignRaces = []struct {
	pair, why string
}{
	// The qdisc run reads a queue's state without a lock or a marked
	// access (netif_xmit_frozen_or_stopped: dev_queue->state &
	// QUEUE_STATE_ANY_XOFF_OR_FROZEN, include/linux/netdevice.h) while a
	// driver's wake clears its XOFF bit with test_and_clear_bit. Every
	// kernel has the read (sch_direct_xmit's, and
	// qdisc_maybe_clear_missed's since 5.14) and any driver that wakes
	// its queue from another CPU races it; a stale read costs a requeue
	// or a MISSED retry, which qdisc_maybe_clear_missed re-checks after
	// a barrier. Seen on build:7.3.4+kcsan in TestRaceSmallRing (tun),
	// the wake coming from tun's read().
	{"__qdisc_run / netif_tx_wake_queue", "the qdisc run's lockless read of a queue's state (netif_xmit_frozen_or_stopped) " +
		"against a driver's wake; every kernel has it"},
	{"netif_tx_wake_queue / qdisc_maybe_clear_missed", "qdisc_maybe_clear_missed's lockless read of a queue's state " +
		"(netif_xmit_frozen_or_stopped) against a driver's wake; every kernel since 5.14 has it"},
	// A qdisc dump (the tests read a qdisc's counters over netlink)
	// clears TCQ_F_OFFLOADED in sch->flags with a plain read-modify-write
	// (qdisc_offload_dump_helper, net/sched/sch_api.c) while the qdisc
	// run reads sch->flags: on a device without offload it writes back
	// the value it read. Every kernel since 5.0 has it; seen on
	// build:no-mb-after-stop+kcsan in TestRaceSmallRing (tun).
	{"__qdisc_run / qdisc_offload_dump_helper", "a qdisc dump's plain rewrite of sch->flags (TCQ_F_OFFLOADED) " +
		"against the qdisc run's read; every kernel since 5.0 has it"},
}

// kcsanPair is the "A / B" of a KCSAN report's first line.
var kcsanPair = regexp.MustCompile(`^BUG: KCSAN: data-race in ([\w.]+ / [\w.]+)\s*$`)

// benign says why report, one KCSAN report, is a listed benign race, or
// "" when it is not.
func benign(report []string) string {
	pair := ""
	for _, l := range report {
		body := printkTime.ReplaceAllString(l, "")
		if strings.Contains(body, "reordered") {
			return ""
		}
		if m := kcsanPair.FindStringSubmatch(body); m != nil && pair == "" {
			pair = m[1]
		}
	}
	for _, b := range benignRaces {
		if pair != "" && b.pair == pair {
			return b.why
		}
	}
	return ""
}
