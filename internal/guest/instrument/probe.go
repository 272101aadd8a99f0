package instrument

import (
	"fmt"

	"github.com/cilium/ebpf/link"
)

// ProbeMisses returns how many hits of l's kprobe or kretprobe the kernel
// missed: the probe hit on a CPU where another kprobe was running (an
// interrupt inside one), or the function was entered with no kretprobe
// instance free. A kprobe program runs with preemption disabled, so on
// PREEMPT_RT, unlike fentry and fexit, it cannot be preempted by a task
// that then finds it busy.
//
// The kernel reports the count from 6.7 on; before, ProbeMisses returns an
// error saying so, since a count that cannot be read cannot be called 0.
func ProbeMisses(l link.Link) (uint64, error) {
	info, err := l.Info()
	if err != nil {
		return 0, fmt.Errorf("read the misses of %v (the kernel reports kprobe misses from 6.7 on): %w", l, err)
	}
	pe := info.PerfEvent()
	if pe == nil || pe.Kprobe() == nil {
		return 0, fmt.Errorf("read the misses of %v: the kernel says it is no kprobe (link type %v; "+
			"it reports kprobe misses from 6.7 on)", l, info.Type)
	}
	return pe.Kprobe().Missed, nil
}
