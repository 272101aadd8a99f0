package results

import (
	"regexp"
	"slices"
	"strings"
)

// benignRace is one data race every kernel has, in code no seed changed,
// which a KCSAN report may still name a seed's function for (a core
// function that reads what a seed's wake writes).
type benignRace struct {
	// readers are the functions whose plain access makes it a data race:
	// the report's first line names one of them at least, and KCSAN may
	// have reordered only their access (its weak-memory model delays any
	// plain read to the end of its function when no barrier follows).
	readers []string
	// others are the functions the other access may be in; a race at
	// unknown origin (the value changed, the writer not seen) names none.
	others []string
	why    string
}

// benignRaces are the KCSAN reports the judge notes and does not judge,
// each with why it is benign. A report matches one when its first line
// names a reader against one of the others (or a reader alone, at unknown
// origin), and every access it reordered is a reader's. Two readers
// racing each other (two CPUs in the qdisc run) are no listed race, and an
// access of a seed's function reordered is what a missing barrier looks
// like: never benign.
var benignRaces = []benignRace{
	// The qdisc run reads a queue's state without a lock or a marked
	// access (netif_xmit_frozen_or_stopped: dev_queue->state &
	// QUEUE_STATE_ANY_XOFF_OR_FROZEN, include/linux/netdevice.h) in
	// sch_direct_xmit (inlined in __qdisc_run or not) and, since 5.14,
	// in qdisc_maybe_clear_missed, while a driver's wake clears the XOFF
	// bit with test_and_clear_bit. Any driver that wakes its queue from
	// another CPU races it; a stale read costs a requeue or a MISSED
	// retry, which qdisc_maybe_clear_missed re-checks after a barrier.
	// Seen on build:7.3.4+kcsan in TestRaceSmallRing (tun and vhost),
	// the wake coming from tun's read() and from vhost-net.
	{readers: []string{"__qdisc_run", "sch_direct_xmit", "qdisc_maybe_clear_missed"},
		others: []string{"netif_tx_wake_queue"},
		why: "the qdisc run's lockless read of a queue's state (netif_xmit_frozen_or_stopped) against a " +
			"driver's wake; every kernel has it"},
	// A qdisc dump (the tests read a qdisc's counters over netlink)
	// clears TCQ_F_OFFLOADED in sch->flags with a plain read-modify-write
	// (qdisc_offload_dump_helper, net/sched/sch_api.c) while the qdisc
	// run reads sch->flags: on a device without offload it writes back
	// the value it read. Every kernel since 5.0 has it; seen on
	// build:no-mb-after-stop+kcsan in TestRaceSmallRing (tun).
	{readers: []string{"__qdisc_run", "sch_direct_xmit", "qdisc_offload_dump_helper"},
		others: []string{"qdisc_offload_dump_helper"},
		why: "a qdisc dump's plain rewrite of sch->flags (TCQ_F_OFFLOADED) against the qdisc run's read; " +
			"every kernel since 5.0 has it"},
	// A transmit picks its queue reading dev->real_num_tx_queues plainly
	// (netdev_core_pick_tx, net/core/dev.c) while a detach of a
	// multiqueue tap lowers it (__tun_detach → netif_set_real_num_tx_queues,
	// a plain write under RTNL, not the transmit's lock): the pick clamps
	// to the count it read, and a queue past the new count drops the frame
	// as a detached queue always has. Every kernel with multiqueue tun
	// (3.8) has it; seen on build:no-mb-before-stopped+kcsan in
	// TestDetachRace (tun).
	{readers: []string{"netdev_core_pick_tx", "netdev_pick_tx"},
		others: []string{"netif_set_real_num_tx_queues"},
		why: "a transmit's plain read of the queue count against a detach lowering it; every kernel with " +
			"multiqueue tun has it"},
}

var (
	// kcsanTitle is the functions of a KCSAN report's first line: "A / B",
	// or "A+0x51/0xa0" for a race at unknown origin.
	kcsanTitle = regexp.MustCompile(`^BUG: KCSAN: data-race in ([\w.]+)(?:\+0x[0-9a-f]+/0x[0-9a-f]+)?` +
		`(?: / ([\w.]+))?\s*$`)
	kcsanReordered = regexp.MustCompile(`reordered to: ([\w.]+)\+0x`)
)

// benign says why report, one KCSAN report, is a listed benign race, or
// "" when it is not.
func benign(report []string) string {
	var title, reordered []string
	for _, l := range report {
		body := strings.TrimSpace(printkTime.ReplaceAllString(l, ""))
		if m := kcsanTitle.FindStringSubmatch(body); m != nil && title == nil {
			title = slices.DeleteFunc(m[1:], func(f string) bool { return f == "" })
		}
		if m := kcsanReordered.FindStringSubmatch(body); m != nil {
			reordered = append(reordered, m[1])
		}
	}
	if title == nil {
		return ""
	}
	for _, b := range benignRaces {
		if b.matches(title, reordered) {
			return b.why
		}
	}
	return ""
}

func (b benignRace) matches(title, reordered []string) bool {
	for _, f := range reordered {
		if !slices.Contains(b.readers, f) {
			return false
		}
	}
	switch len(title) {
	case 1: // a race at unknown origin: the reader alone
		return slices.Contains(b.readers, title[0])
	case 2: // a reader against one of the others, in either order
		x, y := title[0], title[1]
		return slices.Contains(b.readers, x) && slices.Contains(b.others, y) ||
			slices.Contains(b.readers, y) && slices.Contains(b.others, x)
	}
	return false
}
