// Package taprace runs seed 000's races on a tap once for every consumer:
// the suites give the rig (a tap, its senders and counters) and the
// consumer (a read(2) poller, a vhost-net guest), the race and its checks
// are the same. Detach races the owner check with queue files detached and
// re-attached under traffic, and holds every frame to the freed-frame
// ledger; SmallRing races the stop's second look on the smallest rings and
// watches for a stall.
package taprace

import (
	"fmt"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
)

// Consumer takes a queue's frames in a loop of its own until Stop.
type Consumer interface {
	// Got is how many frames it took so far.
	Got() uint64
	// Stop stops it and returns every frame it took, and its error.
	Stop() (uint64, error)
}

// Poller is a Consumer that counts the times it found nothing to take.
type Poller interface {
	Consumer
	// Idle is how many reads or polls found nothing so far.
	Idle() uint64
}

// Counted is what a suite reads of its tap's and qdisc's counters.
type Counted struct {
	// Ledger holds the drops and the backlog; its Sent and Received are
	// the race's to fill.
	Ledger counters.Accounting
	// Delivered is tx_packets: the frames tun handed to the consumer.
	Delivered uint64
	// State is the counters as the suite prints them.
	State fmt.Stringer
}
