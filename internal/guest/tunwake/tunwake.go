// Package tunwake counts the wakes of a single-queue tap's stopped txq, and
// those that left a full ring (bpf/wake.c, fexit on
// netif_tx_wake_queue()), whoever the consumer is: a read(2) of the tap or
// vhost-net. With IFF_BACKPRESSURE and a qdisc each tun drop needs such a
// wake (bpf/wake.c says why), so a race test bounds tun's drops by them.
package tunwake

import "fmt"

// Wakes is the tracer's tally summed over CPUs.
type Wakes struct {
	All    uint64 // netif_tx_wake_queue() calls for the tap (a consumer calls it on a stopped queue)
	Full   uint64 // of them, with the ring full at exit
	Unread uint64 // wakes whose ring could not be read (not in Full)
}

func (w Wakes) String() string {
	return fmt.Sprintf("%d wakes, %d of them leaving a full ring, %d unread", w.All, w.Full, w.Unread)
}
