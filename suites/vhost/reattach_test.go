package vhost

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// reattachSetup is a tap of two queues, A (index 0) and B (index 1), each
// the backend of a guest of its own, IFF_BACKPRESSURE, an mq with a pfifo
// per txq; the test attaches the guests.
var reattachSetup = setup{backpressure: true, qdisc: qdiscMqPfifo, queues: 2, lateBackend: true}

// reattachFrames is what the tests send through txq 1 after the re-attach:
// fewer than a ring, so the ring behind txq 1 takes them all.
const reattachFrames = ring / 2

// TestReattach: a queue file that takes over a stopped txq wakes it. B's
// guest posts no buffers, so B's ring fills and tun stops txq 1 with a
// backlog in its qdisc (stop, on queue 1; stream 1 is steered to txq 1).
// Then one file is detached and re-attached (TUNSETQUEUE), and the frames
// sent through txq 1 must reach the guest of the file now at index 1 once
// it posts buffers; a txq 1 left stopped keeps them in its qdisc for good.
//
// The kernel's rules (drivers/net/tun.c, net/core/dev.c in 7.3.4): vhost
// does not stop a detach; tun_set_queue does not look at it, and vhost is
// not told: it keeps the file, its poll on it and the entries of its batch.
// __tun_detach moves the last queue into the freed index, purges the
// detached file's ring (tun.c:620, freed uncounted) and wakes that index's
// txq only if its new owner's ring is empty (tun.c:626). The device then
// has one queue, and shrinking real_num_tx_queues resets the qdiscs above
// it (qdisc_reset_all_tx_gt, dev.c:3266): their frames are freed, counted
// by no qdisc. The re-attached file takes index numqueues (tun.c:773), and
// tun_attach force-wakes that index's txq (tun_force_wake_queue, tun.c:776).
// Every frame the kernel frees is counted on kfree_skb (dropmon.Freed).
func TestReattach(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	t.Run("DetachOther", detachOther)
	t.Run("DetachStopped", detachStopped)
}

// reattach is the rig of a TestReattach case with txq 1 stopped, and the
// sender of stream 1.
type reattach struct {
	*stopped
	snd *traffic.Sender
}

// stopTxq1 attaches A's guest to its empty ring and stops txq 1 with a
// batch in the vhost of B (stop): B's ring full but for vhost's batch,
// stoppedBacklog frames waiting in txq 1's qdisc.
func stopTxq1(t *testing.T) reattach {
	r := newRig(t, reattachSetup)
	r.steerByStream()
	r.attach(0)
	snd := r.sender(1)
	s := stop(t, r, 1, snd)
	q1, err := r.txq(1)
	assert.NilError(t, err)
	assert.Equal(t, q1.Qlen, uint64(stoppedBacklog), "txq 1's qdisc holds the backlog: %v; %v", q1, s.queued())
	return reattach{stopped: s, snd: snd}
}

// detachOther detaches A: B moves to index 0 with its ring as it was (not
// empty, so nothing is woken), txq 1 stays stopped and its qdisc is reset.
// A, re-attached, takes index 1, and the attach must wake txq 1.
func detachOther(t *testing.T) {
	x := stopTxq1(t)
	r, m := x.r, x.m
	assert.NilError(t, r.taps[0].Detach())
	reset := counters.Accounting{
		Sent: x.sent, Received: x.rv.got, InDevice: uint64(m.ring + m.held),
		Uncounted: uint64(m.backlog), UncountedWhy: "txq 1's qdisc, reset as the detach left the tap one queue",
	}
	x.freed.WaitFor(t, reset.Uncounted, wait, reset)
	x.freed.Hold(t, reset.Uncounted, holdFor, "B's ring and vhost's batch stay as they were", reset)

	assert.NilError(t, r.taps[0].Attach())
	more := x.throughTxq1(t, "A", reset)
	observe.Shows(t, feature.Seed000Vhost, fmt.Sprintf("txq 1, stopped by B's full ring, "+
		"ran again once A's file took index 1 (detached, re-attached): %d frames of stream 1 went through it", more))

	rvA := r.receiver(true)
	r.receive(r.guests[0], rvA, reattachFrames, func(rv *receiver) bool { return rv.got >= more })
	r.collect(r.guests[1], x.rv, func(rv *receiver) bool { return rv.got >= uint64(r.ring) })
	st := r.waitState("an idle qdisc", func(s state) bool { return s.Qdisc.Qlen == 0 })
	a := account(x.sent+more, rvA.got+x.rv.got, st)
	a.Uncounted, a.UncountedWhy = reset.Uncounted, reset.UncountedWhy
	assert.Assert(t, a.Balanced(), "%v", a)
	assert.Equal(t, a.Received, uint64(r.ring)+more, "the guests got B's ring and the frames of txq 1; %v", a)
	assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", a)
	assert.Check(t, is.DeepEqual(x.rv.seqs, seqRange(0, uint64(r.ring))), "B's guest gets its ring, in order; %v", a)
	assert.Check(t, is.DeepEqual(rvA.seqs, seqRange(x.sent, x.sent+more)),
		"A's guest gets what went through txq 1, in order; %v", a)
}

// detachStopped detaches B, the last index: its ring is purged, which
// leaves its slot's owner (B itself) with an empty ring, so the detach
// wakes txq 1. The qdisc of txq 1 may hand its backlog to tun before it is
// reset, and tun drops those frames (no queue at index 1: DEV_READY,
// tx_dropped). B, re-attached, takes index 1 again, and its guest gets
// vhost's batch and what went through txq 1. The detach's wake is enough
// here: a kernel whose attach does not wake still passes this case, and
// fails detachOther.
func detachStopped(t *testing.T) {
	x := stopTxq1(t)
	r, m := x.r, x.m
	assert.NilError(t, r.taps[1].Detach())
	gone := counters.Accounting{
		Sent: x.sent, Received: x.rv.got, InDevice: uint64(m.held),
		Uncounted:    uint64(m.ring + m.backlog),
		UncountedWhy: "B's ring purged at the detach, and txq 1's qdisc: dropped by tun or reset",
	}
	x.freed.WaitFor(t, gone.Uncounted, wait, gone)
	st := r.steady()
	assert.Assert(t, st.Link.TxDropped <= uint64(m.backlog), "tun dropped only txq 1's backlog: %v; %v", st, gone)
	gone.DeviceDrops, gone.Uncounted = st.Link.TxDropped, gone.Uncounted-st.Link.TxDropped

	assert.NilError(t, r.taps[1].Attach())
	more := x.throughTxq1(t, "B", gone)
	observe.Shows(t, feature.Seed000Vhost, fmt.Sprintf("txq 1, stopped by B's full ring, "+
		"ran again once B's file was detached and re-attached: %d frames of stream 1 went through it", more))

	want := x.rv.got + uint64(m.held) + more
	r.collect(r.guests[1], x.rv, func(rv *receiver) bool { return rv.got >= want })
	st = r.waitState("an idle qdisc", func(s state) bool { return s.Qdisc.Qlen == 0 })
	a := account(x.sent+more, x.rv.got, st)
	a.Uncounted, a.UncountedWhy = gone.Uncounted, gone.UncountedWhy
	assert.Assert(t, a.Balanced(), "%v", a)
	assert.Equal(t, a.Received, want, "B's guest got vhost's batch and the frames of txq 1; %v", a)
	assert.Equal(t, st.Link.TxDropped, gone.DeviceDrops, "%v", a)
	wantSeqs := append(seqRange(0, uint64(1+m.held)), seqRange(x.sent, x.sent+more)...)
	assert.Check(t, is.DeepEqual(x.rv.seqs, wantSeqs),
		"B's guest gets vhost's batch, then what went through txq 1, in order; %v", a)
}

// throughTxq1 sends reattachFrames on stream 1 once who's file took index 1,
// and waits until txq 1 handed them all to that file's ring: a txq 1 left
// stopped keeps them in its qdisc, and the test fails naming it (the attach
// did not wake the txq it took over: tun_attach → tun_force_wake_queue).
// ledger is the test's accounting before the send.
func (x reattach) throughTxq1(t *testing.T, who string, ledger counters.Accounting) uint64 {
	t.Helper()
	r := x.r
	more := sendAll(t, x.snd, reattachFrames)
	ledger.Sent += more
	txq1 := func() (counters.Qdisc, error) { return r.txq(1) }
	last, err := counters.WaitFor(r.ctx, wait, txq1, func(q counters.Qdisc) bool { return q.Qlen == 0 })
	if err != nil {
		ledger.QdiscBacklog += last.Qlen
		ledger.InDevice += more - last.Qlen
		t.Fatalf("txq 1 stalled, not woken by the attach: %d of %d frames sent after %s's file took index 1 "+
			"still in its qdisc after %v (%v); %v", last.Qlen, more, who, wait, last, ledger)
	}
	return more
}
