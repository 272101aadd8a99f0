package counters

import (
	"context"
	"fmt"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/guest/margin"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// PollInterval is how often WaitFor samples.
const PollInterval = 2 * time.Millisecond

// WaitFor samples get until ok accepts a value or timeout passes. On
// timeout the error carries the last value observed, so a failure shows the
// state the kernel was stuck in. Each wait is noted for its caller in
// package margin.
func WaitFor[T any](ctx context.Context, timeout time.Duration, get func() (T, error), ok func(T) bool) (T, error) {
	return WaitForEvery(ctx, timeout, PollInterval, get, ok)
}

// WaitForEvery is WaitFor sampling every interval, for a get that costs
// what is measured something each time: reading a tracer's BPF maps with
// bpf(2) holds off every kprobe program on that CPU meanwhile
// (bpf_disable_instrumentation), and the kernel skips one that fires.
func WaitForEvery[T any](
	ctx context.Context, timeout, interval time.Duration, get func() (T, error), ok func(T) bool,
) (T, error) {
	return waitFor(ctx, timeout, interval, get, ok, nil)
}

// waitFor is WaitForEvery that also ends, with stuck's error, as soon as
// stuck (when not nil) returns one for a value ok rejected.
func waitFor[T any](ctx context.Context, timeout, interval time.Duration, get func() (T, error), ok func(T) bool,
	stuck func(T) error) (T, error) {
	defer profile.Running(profile.Waits).End()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		v, err := get()
		if err != nil {
			return v, err
		}
		if ok(v) {
			margin.Note(timeout, time.Since(start), false)
			return v, nil
		}
		if stuck != nil {
			if err := stuck(v); err != nil {
				return v, err
			}
		}
		select {
		case <-ctx.Done():
			margin.Note(timeout, time.Since(start), true)
			return v, fmt.Errorf("waited %v, last observed: %v", timeout, v)
		case <-t.C:
		}
	}
}

// WaitSteady samples get until its value has not changed for window, and
// returns that value: a wake-up or a NAPI poll still moving frames must not
// be read half-way. On timeout the error carries the last value observed.
func WaitSteady[T comparable](ctx context.Context, timeout, window time.Duration, get func() (T, error)) (T, error) {
	var last T
	since := time.Time{}
	return WaitFor(ctx, timeout, get, func(v T) bool {
		if since.IsZero() || v != last {
			last, since = v, time.Now()
			return false
		}
		return time.Since(since) >= window
	})
}

// WaitMoving is WaitFor for a wait on something that moves until it is
// done, such as a backlog draining: it also fails as soon as the value has
// not changed for still, since a drain that stands still is stuck, not
// slow, and waiting out timeout would only delay the failure. The longest
// time the value stood still is noted against still in package margin,
// apart from the wait itself, so that a soak shows how close a healthy
// kernel came to it.
func WaitMoving[T comparable](ctx context.Context, timeout, still time.Duration, get func() (T, error),
	ok func(T) bool) (T, error) {
	var last T
	var since time.Time
	longest := time.Duration(0)
	seen := func(v T) {
		now := time.Now()
		if since.IsZero() || v != last {
			if !since.IsZero() {
				longest = max(longest, now.Sub(since))
			}
			last, since = v, now
		}
	}
	v, err := waitFor(ctx, timeout, PollInterval, get, func(v T) bool {
		seen(v)
		return ok(v)
	}, func(v T) error {
		if d := time.Since(since); d >= still {
			margin.NoteStill(still, d, true)
			return fmt.Errorf("nothing moved for %v, last observed: %v", d.Round(time.Millisecond), v)
		}
		return nil
	})
	if err == nil {
		margin.NoteStill(still, max(longest, time.Since(since)), false)
	}
	return v, err
}
