// Package tunwake watches the consumer's side of seed 000, whoever the
// consumer is: a read(2) of the tap or vhost-net. bpf/wake.c counts the
// wakes of a single-queue tap's stopped txq, and those that left a full
// ring (a kprobe and kretprobe on netif_tx_wake_queue()): with IFF_BACKPRESSURE and a qdisc
// each tun drop needs such a wake (bpf/wake.c says why), so a race test
// bounds tun's drops by them. bpf/owner.c follows __tun_wake_queue() on a
// tap of any number of queues and counts the wakes made for a queue file
// that no longer owned its slot, which the seed's owner check forbids.
package tunwake

import "fmt"

// Wakes is the tracer's tally summed over CPUs.
type Wakes struct {
	All    uint64 // netif_tx_wake_queue() calls for the tap (a consumer calls it on a stopped queue)
	Full   uint64 // of them, with the ring full at exit
	Unread uint64 // wakes whose ring could not be read (not in Full)
	Unheld uint64 // wakes whose queue could not be kept for the exit (not in All)
}

func (w Wakes) String() string {
	return fmt.Sprintf("%d wakes, %d of them leaving a full ring, %d unread, %d unheld",
		w.All, w.Full, w.Unread, w.Unheld)
}

// OwnerCalls is bpf/owner.c's tally summed over CPUs.
type OwnerCalls struct {
	Calls uint64 // __tun_wake_queue() calls for the tap
	Stale uint64 // of them, for a tun_file that did not own its slot
	Woke  uint64 // subqueue wakes inside a stale call: the owner check missing
	Lost  uint64 // stale calls the tracer could not follow, or fields it could not read
}

func (c OwnerCalls) String() string {
	return fmt.Sprintf("%d calls of __tun_wake_queue(), %d from a queue without its slot, %d woke it, %d lost",
		c.Calls, c.Stale, c.Woke, c.Lost)
}
