package tun

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// placement is where BenchmarkTap's threads run: the reader on a CPU of its
// own and the senders round the others, as the seed's measurement isolated
// its threads, so that no run depends on where the scheduler puts them. A
// CPU of -1 leaves the thread anywhere: with one CPU allowed, everything
// shares it.
type placement struct {
	reader  int
	senders []int
}

// place puts the reader on the last CPU the process may use and the
// senders on the others in turn.
func place(senders int) (placement, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return placement{}, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	p := placement{reader: -1, senders: make([]int, senders)}
	for i := range p.senders {
		p.senders[i] = -1
		if len(cpus) > 1 {
			p.reader, p.senders[i] = cpus[len(cpus)-1], cpus[i%(len(cpus)-1)]
		}
	}
	return p, nil
}

// pin locks the calling goroutine to its thread and binds the thread to cpu
// (-1: anywhere). The goroutine must return without unlocking it, so that
// the runtime ends the thread rather than give its binding to another
// goroutine.
func pin(cpu int) error {
	runtime.LockOSThread()
	if cpu < 0 {
		return nil
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("bind a thread to CPU %d: %w", cpu, err)
	}
	return nil
}
