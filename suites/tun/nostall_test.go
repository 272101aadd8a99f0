package tun

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// variants run each no-stall sequence twice: stock (flag off, every kernel:
// the ring is full and tail-drops) and backpressure (flag on: the queue is
// stopped with a backlog; skips where TUNGETFEATURES lacks the flag).
var variants = []struct {
	name  string
	flags uint16
}{
	{"stock", 0},
	{"backpressure", tuntap.IFFBackpressure},
}

// refill sends n frames on s to an idle reader, waits for their fate under
// rig.opts, reads them all back and checks the counters moved exactly so:
// the tap is not stalled after whatever the test did before. It returns
// the frames handed and read.
func (rig *tapRig) refill(t *testing.T, s *traffic.Sender, r *traffic.Reader, n int) (handed uint64, read int) {
	t.Helper()
	base, err := rig.state()
	assert.NilError(t, err)
	f := idleFate(rig.opts, n)
	res := send(t, s, n)
	rig.stopped(t, base, n)
	readExactly(t, r, f.held())
	extra := rig.drain(t, r)
	st := rig.waitState(t, "empty qdisc", func(now state) bool { return now.Q.Qlen == 0 })
	assert.Check(t, is.Equal(extra, 0), "frames beyond the model's %d; %v", f.held(), st)
	assert.Check(t, is.Equal(st.Link.TxDropped-base.Link.TxDropped, uint64(f.tunDrops)),
		"tun drops of %d frames after the event; %v", n, st)
	return res.Handed(), f.held()
}

// TestDrainFlushesBacklog: a reader that keeps reading a tap filled far
// beyond its ring gets every frame held, through every stop and wake.
func TestDrainFlushesBacklog(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: v.flags}
			fx := fill(t, o, o.ring+200)
			r := traffic.NewReader(fx.dev.File)
			fx.readBack(t, r, r, 0)
		})
	}
}

// TestTxqlenChange: a txqueuelen change on a full ring (a stopped queue,
// with the flag) resizes the ring and leaves nothing stalled. tun keeps
// the oldest min(R, R') frames (the rest are freed uncounted) and
// force-wakes the queue (tun_queue_resize): the backlog fills the free
// slots and stops again; with no free slot the first frame dequeued finds
// the ring full and is dropped (FULL_RING) as it stops the queue.
func TestTxqlenChange(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, v := range variants {
		for _, newRing := range []int{32, 8} {
			name := "grow/" + v.name
			if newRing < 16 {
				name = "shrink/" + v.name
			}
			t.Run(name, func(t *testing.T) { txqlenChange(t, v.flags, newRing) })
		}
	}
}

func txqlenChange(t *testing.T, flags uint16, newRing int) {
	o := tapOpts{ring: 16, limit: 1000, flags: flags}
	fx := fill(t, o, 4*o.ring)
	kept := min(fx.fate.ring, newRing)
	moved, drop := 0, 0
	if fx.fate.backlog > 0 && newRing > kept {
		moved = min(fx.fate.backlog, newRing-kept)
	} else if fx.fate.backlog > 0 {
		drop = 1
	}
	backlog := fx.fate.backlog - moved - drop
	assert.NilError(t, fx.e.Handle.LinkSetTxQLen(fx.link(t), newRing))
	fx.opts.ring = newRing
	what := fmt.Sprintf("ring resized to %d: %d kept, %d moved in, %d dropped, backlog %d",
		newRing, kept, moved, drop, backlog)
	st := fx.waitState(t, what, func(now state) bool {
		return now.Q.Qlen == uint64(backlog) && now.Link.TxDropped == uint64(fx.fate.tunDrops+drop)
	})
	l := account(fx.res.Handed(), 0, st, kept+moved)
	l.Uncounted, l.UncountedWhy = uint64(fx.fate.ring-kept), "ring shrunk by txqueuelen"
	assert.Assert(t, l.Balanced(), "%v", l)

	r := traffic.NewReader(fx.dev.File)
	readExactly(t, r, kept+moved+backlog)
	got := kept + moved + backlog + fx.drain(t, r)
	assert.Check(t, is.Equal(got, kept+moved+backlog), "frames read after the resize; %v", l)
	handed, read := fx.refill(t, fx.s, r, fx.n)

	st, err := fx.state()
	assert.NilError(t, err)
	l = account(fx.res.Handed()+handed, got+read, st, 0)
	l.Uncounted, l.UncountedWhy = uint64(fx.fate.ring-kept), "ring shrunk by txqueuelen"
	assert.Assert(t, l.Balanced(), "%v", l)
	checkStreams(t, l, sentBy(fx.s), r)
}

// TestLinkDownUp: a link taken down and up while the ring is full leaves
// nothing stalled. Down resets the qdisc (its backlog is freed uncounted)
// and stops the queues; the ring keeps its frames; up starts them again.
func TestLinkDownUp(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: v.flags}
			fx := fill(t, o, o.ring+40)
			fx.e.Down(t, fx.link(t))
			fx.waitState(t, "qdisc reset by link down", func(now state) bool { return now.Q.Qlen == 0 })
			fx.e.Up(t, fx.link(t))
			r := traffic.NewReader(fx.dev.File)
			readExactly(t, r, fx.fate.ring)
			// The old socket holds ENETDOWN from the down event: a new one.
			s2 := fx.sender(t, 2)
			handed, read := fx.refill(t, s2, r, fx.n)

			st, err := fx.state()
			assert.NilError(t, err)
			l := account(fx.res.Handed()+handed, fx.fate.ring+read, st, 0)
			l.Uncounted, l.UncountedWhy = uint64(fx.fate.backlog), "qdisc reset at link down"
			assert.Assert(t, l.Balanced(), "%v", l)
			checkStreams(t, l, sentBy(fx.s, s2), r)
		})
	}
}

// TestPersistReattach: the only queue file of a persistent tap closed
// while its ring is full, and a file opened again (TUNSETIFF, with the
// flag or without), leaves nothing stalled. Closing the only queue purges
// its ring (uncounted) and wakes the queue (__tun_detach: the index it
// leaves has an empty ring); the backlog then meets a device with no queue
// attached and tun drops it (DEV_READY).
func TestPersistReattach(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, tc := range []struct {
		name         string
		first, again uint16
	}{
		{"stock", 0, 0},
		{"backpressure/reopen_with_flag", tuntap.IFFBackpressure, tuntap.IFFBackpressure},
		{"backpressure/reopen_without_flag", tuntap.IFFBackpressure, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: tc.first}
			rig := newTap(t, o)
			assert.NilError(t, rig.dev.SetPersist(true))
			s := rig.sender(t, 1)
			fx := rig.waitFill(t, s, send(t, s, o.ring+40), o.ring+40)

			assert.NilError(t, fx.dev.Close())
			dropped := fx.fate.tunDrops + fx.fate.backlog
			fx.waitState(t, "backlog dropped with no queue attached", func(now state) bool {
				return now.Q.Qlen == 0 && now.Link.TxDropped == uint64(dropped)
			})
			fx.dev = fx.open(t, tc.again, true)
			t.Cleanup(func() { fx.dev.SetPersist(false) })
			fx.opts.flags = tc.again
			fx.waitOperUp(t)
			r := traffic.NewReader(fx.dev.File)
			handed, read := fx.refill(t, s, r, fx.n)

			st, err := fx.state()
			assert.NilError(t, err)
			l := account(fx.res.Handed()+handed, read, st, 0)
			l.Uncounted, l.UncountedWhy = uint64(fx.fate.ring), "ring purged when its last file closed"
			assert.Assert(t, l.Balanced(), "%v", l)
			assert.Check(t, is.Equal(st.Link.TxDropped, uint64(dropped+idleFate(fx.opts, fx.n).tunDrops)), "%v", l)
			checkStreams(t, l, sentBy(s), r)
		})
	}
}
