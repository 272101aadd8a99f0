package tun

import (
	"context"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// fate is where frames sent to a tap with an idle reader end up.
type fate struct {
	ring, backlog, qdiscDrops, tunDrops int
}

// held is what the tap holds for the reader: its ring and the qdisc's
// backlog.
func (f fate) held() int { return f.ring + f.backlog }

// idleFate models both behaviours: with backpressure (flag on and a qdisc)
// the R-th frame fills the ring and stops the queue, the qdisc holds the
// next P and drops the rest; otherwise the ring takes R and tun drops the
// rest (tail-drop, FULL_RING).
func idleFate(o tapOpts, n int) fate {
	f := fate{ring: min(n, o.ring)}
	rest := n - f.ring
	if o.backpressure() && o.limit > 0 {
		f.backlog = min(rest, int(o.limit))
		f.qdiscDrops = rest - f.backlog
		return f
	}
	f.tunDrops = rest
	return f
}

// seen is the fate the counters show for n frames sent since base, the
// ring being what the qdisc and the drops leave of n.
func seen(base, now state, n int) fate {
	f := fate{
		backlog:    int(now.Q.Qlen) - int(base.Q.Qlen),
		qdiscDrops: int(now.Q.Drops - base.Q.Drops),
		tunDrops:   int(now.Link.TxDropped - base.Link.TxDropped),
	}
	f.ring = n - f.backlog - f.qdiscDrops - f.tunDrops
	return f
}

// account builds the ledger from what was sent, read, and the counters.
func account(sent uint64, read int, s state, inRing int) counters.Accounting {
	return counters.Accounting{
		Sent:         sent,
		Received:     uint64(read),
		DeviceDrops:  s.Link.TxDropped,
		QdiscDrops:   s.Q.Drops,
		QdiscBacklog: s.Q.Qlen,
		InDevice:     uint64(inRing),
	}
}

// reached waits until the n frames sent since base to an idle reader
// reach their fate (idleFate) and returns the state that showed it. Where
// the flag makes a difference (kept, with a qdisc), a kernel that leaves
// the frames exactly where stock tail-drop does has no seed 000: Absent.
// Any other end fails the wait.
func (rig *tapRig) reached(t testing.TB, base state, n int) state {
	t.Helper()
	want, stock := idleFate(rig.opts, n), idleFate(rig.opts.stock(), n)
	st, err := counters.WaitFor(context.Background(), waitLimit, rig.state, func(now state) bool {
		got := seen(base, now, n)
		return got == want || got == stock
	})
	assert.NilError(t, err, "waiting for %d frames to an idle reader to reach %+v", n, want)
	if got := seen(base, st, n); got != want {
		observe.Absent(t, feature.Seed000Tun, fmt.Sprintf(
			"IFF_BACKPRESSURE kept with a %s root qdisc, yet the queue never stopped: "+
				"of %d frames to an idle reader the ring took %d and tun dropped %d (tail-drop), "+
				"the qdisc held and dropped none",
			st.Q.Kind, n, got.ring, got.tunDrops))
	}
	return st
}

// stopped is reached, then, with a backlog, checks that the queue stays
// stopped: the backlog does not move for holdFor.
func (rig *tapRig) stopped(t testing.TB, base state, n int) state {
	t.Helper()
	st := rig.reached(t, base, n)
	want := idleFate(rig.opts, n)
	if want.backlog == 0 {
		return st
	}
	return rig.holdState(t, "stopped queue", func(now state) bool { return seen(base, now, n) == want })
}

// filled is where most tests start: a tap to which sender s sent n frames
// while nobody read, at their fate.
type filled struct {
	*tapRig
	s    *traffic.Sender
	n    int
	res  traffic.Result
	fate fate
	st   state // the state that showed the fate
}

// fill makes a tap with o and fills it with n frames from sender 1.
func fill(t testing.TB, o tapOpts, n int) *filled {
	t.Helper()
	rig := newTap(t, o)
	s := rig.sender(t, 1)
	return rig.waitFill(t, s, send(t, s, n), n)
}

// waitFill waits for the n frames s sent (res) to reach their fate.
func (rig *tapRig) waitFill(t testing.TB, s *traffic.Sender, res traffic.Result, n int) *filled {
	t.Helper()
	return &filled{tapRig: rig, s: s, n: n, res: res, fate: idleFate(rig.opts, n), st: rig.stopped(t, state{}, n)}
}

// ledger is the accounting at the fate, before any read.
func (fx *filled) ledger() counters.Accounting {
	return account(fx.res.Handed(), 0, fx.st, fx.fate.ring)
}

// readBack reads, through q (whose frames r follows), every frame the tap
// holds beyond the done already read, checks that no more come, waits for
// the qdisc to empty and checks the ledger: everything held was read, the
// first frames sent, in order, and tun dropped exactly the fate's.
func (fx *filled) readBack(t testing.TB, q queueReader, r *traffic.Reader, done int) (counters.Accounting, state) {
	t.Helper()
	held := fx.fate.held()
	readExactly(t, q, held-done)
	got := held + fx.drain(t, q)
	st := fx.waitState(t, "empty qdisc", func(now state) bool { return now.Q.Qlen == 0 })
	l := account(fx.res.Handed(), got, st, 0)
	assert.Assert(t, l.Balanced(), "%v", l)
	assert.Check(t, is.Equal(got, held), "every frame held is read, no more; %v", l)
	assert.Check(t, is.Equal(st.Link.TxDropped, uint64(fx.fate.tunDrops)), "tun drops; %v", l)
	checkStreams(t, l, sentBy(fx.s), r)
	checkFirst(t, r, 1, held)
	return l, st
}
