// Package cpus binds test threads to CPUs, for the stimuli that must come
// from one CPU (or from chosen ones) whatever the scheduler would do.
package cpus

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Allowed lists the CPUs the process may run on, in order.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var out []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Pin locks the calling goroutine to its thread and binds the thread to cpu
// (-1: anywhere). The goroutine must return without unlocking it, so that
// the runtime ends the thread rather than give its binding to another
// goroutine.
func Pin(cpu int) error {
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

// On runs f on a thread bound to cpu, for what the kernel places by the
// calling thread (a vhost-net worker, created by VHOST_SET_OWNER, starts
// with its caller's CPUs). The thread is ended afterwards, its binding
// with it.
func On(cpu int, f func() error) error {
	done := make(chan error, 1)
	go func() {
		// Returns with the thread locked: the runtime ends it.
		if err := Pin(cpu); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}
