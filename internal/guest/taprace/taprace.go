// Package taprace runs seed 000's races on a tap once for every consumer:
// the suites give the rig (a tap, its senders and counters) and the
// consumer (a read(2) poller, a vhost-net guest), the race and its checks
// are the same. Detach races the owner check with queue files detached and
// re-attached under traffic, and holds every frame to the freed-frame
// ledger.
package taprace

// Consumer takes a queue's frames in a loop of its own until Stop.
type Consumer interface {
	// Got is how many frames it took so far.
	Got() uint64
	// Stop stops it and returns every frame it took, and its error.
	Stop() (uint64, error)
}
