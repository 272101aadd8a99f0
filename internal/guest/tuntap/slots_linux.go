package tuntap

import (
	"context"
	"fmt"
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
