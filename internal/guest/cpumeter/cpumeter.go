// Package cpumeter measures what a stretch of work cost the guest's CPUs,
// beside the wall clock an emulator distorts: the time every CPU spent
// busy (/proc/stat, all states but idle and iowait, in USER_HZ ticks) and,
// where the vCPU has a PMU, the instructions retired on every CPU; and the
// NET_TX softirq runs, a kernel event. A benchmark divides them by the
// frames it moved.
package cpumeter

import (
	"time"
)

// Usage is what the CPUs did between Start and Stop.
type Usage struct {
	// Busy is the time every CPU spent not idle, summed over CPUs.
	Busy time.Duration
	// Instructions retired on every CPU, when HasInstructions; NoPMU
	// says why not otherwise.
	Instructions    uint64
	HasInstructions bool
	NoPMU           string
	// NetTx is how many times net_tx_action() ran on every CPU: a kernel
	// event count, which an emulator's clock does not stretch.
	NetTx uint64
}
