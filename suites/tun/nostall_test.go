package tun

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
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
// te.opts, reads them all back and checks the counters moved exactly so.
// It proves the tap is not stalled after whatever the test did before.
func (te *tapRig) refill(t *testing.T, s *traffic.Sender, r *traffic.Reader, n int) (sent uint64, f fate) {
	t.Helper()
	base, err := te.state()
	assert.NilError(t, err)
	f = idleFate(te.opts, n)
	res := send(t, s, n)
	te.stopped(t, base, f)
	readExactly(t, r, f.ring+f.backlog)
	extra := drain(t, r)
	st := te.waitState(t, "empty qdisc", func(s state) bool { return s.Q.Qlen == 0 })
	assert.Check(t, is.Equal(extra, 0), "frames beyond the model's %d; %v", f.ring+f.backlog, st)
	assert.Check(t, is.Equal(st.Link.TxDropped-base.Link.TxDropped, uint64(f.tunDrops)), "tun drops of %d frames after the event; %v", n, st)
	return res.Sent + res.Refused, f
}

// TestNoStall: whatever happens to a tap whose ring is
// full (and, with the flag, whose queue is stopped), the queue comes back,
// each step bounded by a deadline. Frames the kernel frees without a counter
// are named in the ledger's "uncounted".
func TestNoStall(t *testing.T) {
	feature.Of(t, feature.Seed000Tun)
	for _, v := range variants {
		t.Run("DrainFlushesBacklog/"+v.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: v.flags}
			n := o.ring + 200
			te, s, res, f, _ := fill(t, o, n)
			r := traffic.NewReader(te.dev.File)
			readExactly(t, r, f.ring+f.backlog)
			got := f.ring + f.backlog + drain(t, r)
			st := te.waitState(t, "empty qdisc", func(s state) bool { return s.Q.Qlen == 0 })
			l := account(res.Sent+res.Refused, got, st, 0)
			assert.Assert(t, l.Balanced(), "%v", l)
			assert.Check(t, is.Equal(got, f.ring+f.backlog), "%v", l)
			assert.Check(t, is.Equal(st.Link.TxDropped, uint64(f.tunDrops)), "%v", l)
			checkStreams(t, l, sentBy(s), r)
			checkFirst(t, r, 1, f.ring+f.backlog)
		})
	}

	for _, v := range variants {
		for _, newRing := range []int{32, 8} {
			name := "TxqlenGrow"
			if newRing < 16 {
				name = "TxqlenShrink"
			}
			t.Run(name+"/"+v.name, func(t *testing.T) { txqlenChange(t, v.flags, newRing) })
		}
	}

	for _, v := range variants {
		t.Run("LinkDownUp/"+v.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: v.flags}
			n := o.ring + 40
			te, s1, res, f, _ := fill(t, o, n)

			// Down resets the qdisc (its backlog is freed uncounted) and
			// stops the queues; the ring keeps its frames.
			te.e.Down(t, te.link(t))
			te.waitState(t, "qdisc reset by link down", func(s state) bool { return s.Q.Qlen == 0 })
			te.e.Up(t, te.link(t))
			r := traffic.NewReader(te.dev.File)
			readExactly(t, r, f.ring)
			// The old socket holds ENETDOWN from the down event: a new one.
			s2 := te.sender(t, 2)
			sent2, f2 := te.refill(t, s2, r, n)

			st, err := te.state()
			assert.NilError(t, err)
			l := account(res.Sent+res.Refused+sent2, f.ring+f2.ring+f2.backlog, st, 0)
			l.Uncounted, l.UncountedWhy = uint64(f.backlog), "qdisc reset at link down"
			assert.Assert(t, l.Balanced(), "%v", l)
			checkStreams(t, l, sentBy(s1, s2), r)
		})
	}

	reattach := []struct {
		name         string
		first, again uint16
	}{
		{"stock", 0, 0},
		{"backpressure/reopen_with_flag", tuntap.IFFBackpressure, tuntap.IFFBackpressure},
		{"backpressure/reopen_without_flag", tuntap.IFFBackpressure, 0},
	}
	for _, tc := range reattach {
		t.Run("PersistReattach/"+tc.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: tc.first}
			n := o.ring + 40
			f := idleFate(o, n)
			te := newTap(t, o)
			assert.NilError(t, te.dev.SetPersist(true))
			s := te.sender(t, 1)
			res := send(t, s, n)
			te.stopped(t, state{}, f)

			// Closing the only queue purges its ring (uncounted) and wakes
			// the queue; the backlog then meets a device with no queue
			// attached and is dropped by tun (DEV_READY).
			assert.NilError(t, te.dev.Close())
			dropped := f.tunDrops + f.backlog
			te.waitState(t, "backlog dropped with no queue attached", func(s state) bool {
				return s.Q.Qlen == 0 && s.Link.TxDropped == uint64(dropped)
			})

			te.dev = te.open(t, tc.again, true)
			t.Cleanup(func() { te.dev.SetPersist(false) })
			te.opts.flags = tc.again
			r := traffic.NewReader(te.dev.File)
			sent2, f2 := te.refill(t, s, r, n)

			st, err := te.state()
			assert.NilError(t, err)
			l := account(res.Sent+res.Refused+sent2, f2.ring+f2.backlog, st, 0)
			l.Uncounted, l.UncountedWhy = uint64(f.ring), "ring purged when its last file closed"
			assert.Assert(t, l.Balanced(), "%v", l)
			assert.Check(t, is.Equal(st.Link.TxDropped, uint64(dropped+f2.tunDrops)), "%v", l)
			checkStreams(t, l, sentBy(s), r)
		})
	}
}

// txqlenChange fills the ring (stopping the queue with the flag), then
// changes txqueuelen to newRing. tun resizes the ring keeping its oldest
// min(R, newRing) frames (the rest are freed uncounted) and force-wakes the
// queue: the backlog fills the free slots and stops again; with no free slot
// the first frame dequeued finds the ring full and is dropped (FULL_RING)
// as it stops the queue.
func txqlenChange(t *testing.T, flags uint16, newRing int) {
	o := tapOpts{ring: 16, limit: 1000, flags: flags}
	n := 4 * o.ring
	te, s, res, f, _ := fill(t, o, n)

	kept := min(f.ring, newRing)
	free := newRing - kept
	moved, drop := 0, 0
	if f.backlog > 0 {
		if free > 0 {
			moved = min(f.backlog, free)
		} else {
			drop = 1
		}
	}
	backlog := f.backlog - moved - drop
	assert.NilError(t, te.e.Handle.LinkSetTxQLen(te.link(t), newRing))
	te.opts.ring = newRing
	what := fmt.Sprintf("ring resized to %d: %d kept, %d moved in, %d dropped, backlog %d", newRing, kept, moved, drop, backlog)
	st := te.waitState(t, what, func(s state) bool {
		return s.Q.Qlen == uint64(backlog) && s.Link.TxDropped == uint64(f.tunDrops+drop)
	})
	l := account(res.Sent+res.Refused, 0, st, kept+moved)
	l.Uncounted, l.UncountedWhy = uint64(f.ring-kept), "ring shrunk by txqueuelen"
	assert.Assert(t, l.Balanced(), "%v", l)

	r := traffic.NewReader(te.dev.File)
	readExactly(t, r, kept+moved+backlog)
	got := kept + moved + backlog + drain(t, r)
	sent2, f2 := te.refill(t, s, r, n)

	st, err := te.state()
	assert.NilError(t, err)
	l = account(res.Sent+res.Refused+sent2, got+f2.ring+f2.backlog, st, 0)
	l.Uncounted, l.UncountedWhy = uint64(f.ring-kept), "ring shrunk by txqueuelen"
	assert.Assert(t, l.Balanced(), "%v", l)
	assert.Check(t, is.Equal(got, kept+moved+backlog), "%v", l)
	checkStreams(t, l, sentBy(s), r)
}
