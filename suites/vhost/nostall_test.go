package vhost

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	guest "github.com/xmitcheck/xmitcheck/internal/vhost"
)

// stoppedWithBatch brings a backpressure rig to the state the no-stall
// tests start from: the tap's ring full and its queue stopped, the rest of
// n frames in the qdisc, then vhost attached with one guest buffer. vhost
// takes a whole batch out of the full ring (too few to wake the queue),
// fills the one buffer with seq 0 and holds the rest of its batch.
func stoppedWithBatch(t *testing.T, n int) (*rig, uint64, *receiver) {
	t.Helper()
	r := newRig(t, setup{backpressure: true, qdisc: qdiscPfifo, lateBackend: true})
	sent := sendAll(t, r.sender(0), n)
	st := r.waitState("a full ring and a stopped queue", func(s state) bool { return s.Qdisc.Qlen+ring >= sent })
	a := account(sent, 0, st)
	a.InDevice = ring
	assert.Assert(t, a.Balanced(), "the ring holds %d, the qdisc the rest: %v", ring, a)
	r.attach(0)
	rv := newReceiver(true)
	r.receive(r.guests[0], rv, 1, func(rv *receiver) bool { return rv.got == 1 })
	assert.Check(t, is.DeepEqual(rv.seqs, []uint64{0}))
	return r, sent, rv
}

// TestNoStall is invariant 4: no way of taking vhost away from a stopped
// queue loses frames or leaves the queue stopped for good.
func TestNoStall(t *testing.T) {
	feature.Of(t, feature.Seed000Vhost)
	const n = ring + 300

	// Detach the backend while the queue is stopped: vhost gives its batch
	// back to the head of the ring (ptr_ring_unconsume), read() on the tap
	// then consumes, which wakes the queue, and a re-attached guest gets
	// the rest: every frame exactly once, in order.
	t.Run("DetachWhileStopped", func(t *testing.T) {
		r, sent, rv := stoppedWithBatch(t, n)
		g := r.guests[0]
		assert.NilError(t, g.DetachBackend())
		before := r.mustState()

		read := readTap(t, r.taps[0].File, ring/2, 2*time.Second)
		want := seqRange(1, 1+ring/2)
		assert.Check(t, is.DeepEqual(read, want), "read() after the detach starts with what vhost held")
		st := r.waitState("read() to wake the queue", func(s state) bool { return s.Qdisc.Qlen < before.Qdisc.Qlen })
		t.Logf("backlog %d before the reads, %d after", before.Qdisc.Qlen, st.Qdisc.Qlen)

		r.attach(0)
		r.collect(g, rv, func(rv *receiver) bool { return rv.got+uint64(len(read)) >= sent })
		st = r.waitState("a drained qdisc", func(s state) bool { return s.Qdisc.Qlen == 0 })
		a := account(sent, rv.got+uint64(len(read)), st)
		assert.Assert(t, a.Balanced(), "%v", a)
		assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", a)
		got := append(append([]uint64{}, rv.seqs[:1]...), read...)
		got = append(got, rv.seqs[1:]...)
		assert.Check(t, is.DeepEqual(got, seqRange(0, sent)), "every frame once, in order (guest, then read(), then guest)")
	})

	// Close the vhost device while the queue is stopped: its batch goes back
	// to the ring, read() drains everything and wakes the queue, and the
	// tap keeps working afterwards.
	t.Run("CloseWhileStopped", func(t *testing.T) {
		r, sent, rv := stoppedWithBatch(t, n)
		assert.NilError(t, r.guests[0].Close())
		read := readTap(t, r.taps[0].File, int(sent), 2*time.Second)
		st := r.waitState("a drained qdisc", func(s state) bool { return s.Qdisc.Qlen == 0 })
		a := account(sent, rv.got+uint64(len(read)), st)
		assert.Assert(t, a.Balanced(), "%v", a)
		assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", a)
		assert.Check(t, is.DeepEqual(read, seqRange(1, sent)), "read() gets vhost's batch back, then the rest, in order")

		more := sendAll(t, r.sender(0), 10)
		read = readTap(t, r.taps[0].File, int(more), 2*time.Second)
		assert.Equal(t, uint64(len(read)), more, "the tap still works after the vhost device closed")
	})

	// Two queue pairs: queue 0's guest posts nothing, so queue 0 stops (or
	// tail-drops without the flag); queue 1's guest still gets every frame
	// of its own stream, and queue 0's backlog does not move meanwhile.
	for _, s := range []setup{
		{qdisc: qdiscDefault, queues: 2},
		{backpressure: true, qdisc: qdiscDefault, queues: 2},
	} {
		t.Run("TwoQueues/"+s.String(), func(t *testing.T) {
			r := newRig(t, s)
			r.steerByStream()
			n0 := ring + guest.Batch + 100
			sent0 := sendAll(t, r.sender(0), n0)
			st0 := r.waitState("queue 0 full", func(st state) bool {
				return st.Qdisc.Qlen+st.Link.TxDropped+ring+guest.Batch >= sent0
			})
			if s.backpressure {
				assert.Equal(t, st0.Link.TxDropped, uint64(0), "%v", st0)
			}

			s1, rv1 := r.sender(1), newReceiver(false)
			var sent1 uint64
			for range 4 {
				sent1 += sendAll(t, s1, ring/2)
				r.collect(r.guests[1], rv1, func(rv *receiver) bool { return rv.got >= sent1 })
			}
			st := r.mustState()
			assert.Equal(t, rv1.got, sent1, "queue 1 delivers everything while queue 0 is stuck; %v", st)
			assert.Equal(t, st.Link.TxDropped, st0.Link.TxDropped, "queue 1 dropped nothing; %v", st)
			assert.Equal(t, st.Qdisc.Qlen, st0.Qdisc.Qlen, "queue 0's backlog did not move; %v", st)

			rv0 := newReceiver(false)
			sent := sent0 + sent1
			r.collect(r.guests[0], rv0, func(rv *receiver) bool {
				s := r.mustState()
				return rv.got+rv1.got+s.Link.TxDropped+s.Qdisc.Drops >= sent && s.Qdisc.Qlen == 0
			})
			st = r.mustState()
			a := account(sent, rv0.got+rv1.got, st)
			assert.Assert(t, a.Balanced(), "%v", a)
			assert.Check(t, is.DeepEqual(keys(rv0), []uint32{0}), "guest 0 got only stream 0; %v", a)
			assert.Check(t, is.DeepEqual(keys(rv1), []uint32{1}), "guest 1 got only stream 1; %v", a)
			if s.backpressure {
				assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", a)
			}
		})
	}
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func keys(rv *receiver) []uint32 {
	var k []uint32
	for s := range rv.next {
		k = append(k, s)
	}
	return k
}
