package vhost

import (
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// noStallFrames is what the detach and close tests send: a full ring and
// a backlog in the qdisc.
const noStallFrames = ring + 300

// stoppedRig is a backpressure rig (pfifo) stopped with a batch in vhost
// (stopWithBatch).
func stoppedRig(t *testing.T) (*rig, batchStop) {
	t.Helper()
	r := newRig(t, setup{backpressure: true, qdisc: qdiscPfifo, lateBackend: true})
	return r, r.stopWithBatch(0, r.sender(0), noStallFrames)
}

// TestDetachWhileStopped: detach the backend while the queue is stopped:
// vhost gives the 63 entries left in its batch back to the head of the ring
// (vhost_net_buf_unproduce → ptr_ring_unconsume, drivers/vhost/net.c:197),
// read() on the tap then consumes, which wakes the queue, and a re-attached
// guest gets the rest: every frame exactly once, in order.
//
// vhost counted its batch of 64 when it took it from the stopped ring
// (tun_wake_queue, tun.c:3899), and giving entries back uncounts nothing,
// so each read() adding 1 (tun_ring_consume, tun.c:2250) wakes the queue
// at exactly ring/2 - 64 = 64 reads (__tun_wake_queue, tun.c:2242); the
// qdisc then fills the ring's 65 free slots: the one whose frame the guest
// got (vhost gives back only the 63 it still holds) and the 64 read
// (ptr_ring frees consumed slots 16 at a time; 64 is a multiple).
func TestDetachWhileStopped(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	r, b := stoppedRig(t)
	g, f := r.guests[0], r.taps[0].File
	assert.NilError(t, g.DetachBackend())
	before := r.steady()
	// tun's wake rule (__tun_wake_queue, see above), for the messages.
	rule := fmt.Sprintf("wake at %d consumed (ring/2) or the ring empty; vhost's batch counted %d, each read() 1",
		ring/2, vhostnet.Batch)
	ledger := func(read []uint64, st state) counters.Accounting {
		return accountInFlight(b.sent, b.rv.got+uint64(len(read)), st)
	}

	read := readTap(t, f, ring/2-vhostnet.Batch-1, 2*time.Second)
	st := r.steady()
	assert.Equal(t, st.Qdisc.Qlen, before.Qdisc.Qlen,
		"%s: want the queue still stopped after %d reads; %v", rule, len(read), ledger(read, st))

	read = append(read, readTap(t, f, 1, 2*time.Second)...)
	free := uint64(ring) - ledger(read, st).InDevice
	refilled := func(s state) bool { return s.Qdisc.Qlen+free <= before.Qdisc.Qlen }
	st, err := counters.WaitFor(r.ctx, wait, r.state, refilled)
	assert.NilError(t, err,
		"%s: want the queue woken by read() number %d and the qdisc to fill the ring's %d free slots; %v",
		rule, len(read), free, ledger(read, st))
	st = r.steady()
	assert.Equal(t, before.Qdisc.Qlen-st.Qdisc.Qlen, free,
		"%s: after read() number %d the qdisc fills the ring's %d free slots and stops again; %v",
		rule, len(read), free, ledger(read, st))
	assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", ledger(read, st))

	read = append(read, readTap(t, f, ring/2-len(read), 2*time.Second)...)
	assert.Check(t, is.DeepEqual(read, seqRange(1, 1+ring/2)), "read() after the detach starts with what vhost held")

	r.attach(0)
	r.collect(g, b.rv, func(rv *receiver) bool { return rv.got+uint64(len(read)) >= b.sent })
	st = r.waitState("a drained qdisc", func(s state) bool { return s.Qdisc.Qlen == 0 })
	a := account(b.sent, b.rv.got+uint64(len(read)), st)
	assert.Assert(t, a.Balanced(), "%v", a)
	assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", a)
	got := append(append([]uint64{}, b.rv.seqs[:1]...), read...)
	got = append(got, b.rv.seqs[1:]...)
	assert.Check(t, is.DeepEqual(got, seqRange(0, b.sent)), "every frame once, in order (guest, then read(), then guest)")
}

// TestCloseWhileStopped: close the vhost device while the queue is
// stopped: its batch goes back to the ring, read() drains everything and
// wakes the queue, and the tap keeps working afterwards.
func TestCloseWhileStopped(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	r, b := stoppedRig(t)
	assert.NilError(t, r.guests[0].Close())
	// What the guest did not get, no more: readTap returns as soon as it
	// has that many, and the last read below finds the ring empty.
	read := readTap(t, r.taps[0].File, int(b.sent-b.rv.got), 2*time.Second)
	st := r.waitState("a drained qdisc", func(s state) bool { return s.Qdisc.Qlen == 0 })
	a := account(b.sent, b.rv.got+uint64(len(read)), st)
	assert.Assert(t, a.Balanced(), "%v", a)
	assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", a)
	assert.Check(t, is.DeepEqual(read, seqRange(1, b.sent)), "read() gets vhost's batch back, then the rest, in order")

	more := sendAll(t, r.sender(0), 10)
	again := readTap(t, r.taps[0].File, int(more), 2*time.Second)
	st = r.mustState()
	a = account(b.sent+more, b.rv.got+uint64(len(read)+len(again)), st)
	assert.Equal(t, uint64(len(again)), more, "the tap still works after the vhost device closed: %v", a)
	assert.Assert(t, a.Balanced(), "%v", a)
	extra := readTap(t, r.taps[0].File, 1, holdFor)
	assert.Check(t, is.Len(extra, 0), "read() found frames beyond the %d sent: %v; %v", b.sent+more, extra, a)
}

// TestLinkDownWhileStopped: take the tap down and up while its queue is
// stopped with a batch in vhost. Down resets the qdisc (its backlog freed,
// counted nowhere) and tun_net_close stops the queues again; the ring and
// vhost's batch stay. Up starts the queue (tun_net_open): the guest gets
// every frame the ring and vhost held, in order, and then new ones.
func TestLinkDownWhileStopped(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	r, b := stoppedRig(t)
	backlog := r.steady().Qdisc.Qlen
	r.e.Down(t, r.link)
	r.waitState("the qdisc reset by link down", func(s state) bool { return s.Qdisc.Qlen == 0 })
	r.e.Up(t, r.link)
	kept := b.sent - backlog
	g := r.guests[0]
	r.collect(g, b.rv, func(rv *receiver) bool { return rv.got >= kept })
	assert.Check(t, is.DeepEqual(b.rv.seqs, seqRange(0, kept)), "the guest gets what the ring and vhost held, in order")

	// The first sender's socket holds ENETDOWN from the down event: a new one.
	more := sendAll(t, r.sender(1), 10)
	r.collect(g, b.rv, func(rv *receiver) bool { return rv.got >= kept+more })
	st := r.waitState("a drained qdisc", func(s state) bool { return s.Qdisc.Qlen == 0 })
	a := account(b.sent+more, b.rv.got, st)
	a.Uncounted, a.UncountedWhy = backlog, "qdisc reset at link down"
	assert.Assert(t, a.Balanced(), "%v", a)
	assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", a)
}
