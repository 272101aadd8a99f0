package instrument

import (
	"fmt"

	"github.com/cilium/ebpf"
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

// Probe is a program to attach at a kernel function's entry (a kprobe) or
// return (a kretprobe, with Return).
type Probe struct {
	Func   string
	Prog   *ebpf.Program
	Return bool
}

func (p Probe) String() string {
	if p.Return {
		return "kretprobe " + p.Func
	}
	return "kprobe " + p.Func
}

// AttachProbes attaches every probe and returns the links by Probe.String;
// on an error, it closes those it attached.
func AttachProbes(probes ...Probe) (map[string]link.Link, error) {
	links := map[string]link.Link{}
	for _, p := range probes {
		attach := link.Kprobe
		if p.Return {
			attach = link.Kretprobe
		}
		l, err := attach(p.Func, p.Prog, nil)
		if err != nil {
			for _, l := range links {
				l.Close()
			}
			return nil, fmt.Errorf("attach %v as a %v: %w", p.Prog, p, err)
		}
		links[p.String()] = l
	}
	return links, nil
}
