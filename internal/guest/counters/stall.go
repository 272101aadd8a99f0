package counters

import (
	"context"
	"time"
)

// Progress is what a stall watch reads of one look: frames delivered to
// the consumer, frames the qdisc holds, and the times the consumer found
// nothing to take (its empty reads or polls).
type Progress struct{ Delivered, Held, Idle uint64 }

// Stall is a stall WatchStall saw: nothing delivered since Since (the last
// window that delivered), seen at Seen; From is the look that raised the
// suspicion, Obs the last one.
type Stall[T any] struct {
	Since, Seen time.Time
	From, Obs   T
}

// WatchStall looks every window until ctx ends. A window in which nothing
// was delivered, while the consumer kept finding nothing and the qdisc
// held frames, must deliver again within bound, or it is a stall if the
// consumer kept finding nothing meanwhile and the qdisc still holds
// frames: WatchStall returns it at once. A stall is for good, anything else
// moves within milliseconds. suspects counts the windows that moved again
// and those in which the consumer did not run (starved of CPU); logf says
// why each of the latter was not a stall.
func WatchStall[T any](ctx context.Context, start time.Time, window, bound time.Duration, look func() (T, error),
	of func(T) Progress, logf func(format string, args ...any)) (st *Stall[T], suspects int, err error) {
	tick := time.NewTicker(window)
	defer tick.Stop()
	last, err := look()
	if err != nil {
		return nil, 0, err
	}
	since := start
	for {
		select {
		case <-ctx.Done():
			return nil, suspects, nil
		case <-tick.C:
		}
		now, err := look()
		if err != nil {
			return nil, suspects, err
		}
		p, q := of(now), of(last)
		if p.Delivered != q.Delivered || p.Held == 0 || p.Idle == q.Idle {
			last, since = now, time.Now()
			continue
		}
		delivered := func(l T) bool { return of(l).Delivered > p.Delivered }
		got, werr := WaitFor(context.Background(), bound, look, delivered)
		if g := of(got); werr != nil && g.Held > 0 && g.Idle > p.Idle {
			return &Stall[T]{Since: since, Seen: time.Now(), From: now, Obs: got}, suspects, nil
		} else if werr != nil {
			logf("not a stall: %v (the consumer found nothing %d times)", werr, g.Idle-p.Idle)
		}
		suspects++
		last, since = got, time.Now()
	}
}
