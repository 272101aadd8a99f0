// Package cpus binds test threads to CPUs, for the stimuli that must come
// from one CPU (or from chosen ones) whatever the scheduler would do.
package cpus

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

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

// Loop is a goroutine on a thread bound to a CPU that runs until Stop, or
// until it fails.
type Loop struct {
	stop atomic.Bool
	done chan error
	once sync.Once
	err  error
}

// Start runs run on a thread bound to cpu, passing it stopped, which
// reports whether Stop was called: run returns then, or with an error.
// The thread stays locked, so the runtime ends it.
func Start(cpu int, run func(stopped func() bool) error) *Loop {
	l := &Loop{done: make(chan error, 1)}
	go func() {
		if err := Pin(cpu); err != nil {
			l.done <- err
			return
		}
		l.done <- run(l.stop.Load)
	}()
	return l
}

// Stop stops the loop and returns its error; later calls return the same.
func (l *Loop) Stop() error {
	l.once.Do(func() {
		l.stop.Store(true)
		l.err = <-l.done
	})
	return l.err
}
