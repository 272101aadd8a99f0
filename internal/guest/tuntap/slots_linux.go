package tuntap

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MoveSlots detaches the queue file at slot 0 of a two-queue device and
// attaches it again (TUNSETQUEUE), until ctx ends. The kernel moves the last
// queue into a detached file's slot and appends a re-attached file, so each
// cycle moves the other file into slot 0. It returns the cycles done; on
// success both files are attached. q[0] must be at slot 0 at the start.
func MoveSlots(ctx context.Context, q [2]*Device) (int, error) {
	head := 0
	for n := 0; ; n++ {
		if ctx.Err() != nil {
			return n, nil
		}
		if err := q[head].Detach(); err != nil {
			return n, err
		}
		if err := q[head].Attach(); err != nil {
			return n, fmt.Errorf("queue file %d left detached: %w", head, err)
		}
		head ^= 1
	}
}

// RaceSlots runs MoveSlots on q beside each of work (senders, say) until ctx
// ends, and waits for all of them, each within bound once ctx ended. It
// returns MoveSlots' cycles and every error.
func RaceSlots(ctx context.Context, q [2]*Device, bound time.Duration,
	work ...func(context.Context) error) (int, error) {
	done := make(chan error, len(work)+1)
	for _, w := range work {
		go func() { done <- w(ctx) }()
	}
	var cycles int
	go func() {
		var err error
		cycles, err = MoveSlots(ctx, q)
		done <- err
	}()
	var errs []error
	<-ctx.Done()
	for range len(work) + 1 {
		select {
		case err := <-done:
			errs = append(errs, err)
		case <-time.After(bound):
			return 0, fmt.Errorf("a sender or TUNSETQUEUE still running %v after the race ended", bound)
		}
	}
	return cycles, errors.Join(errs...)
}
