package vhost

import (
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
	guest "github.com/xmitcheck/xmitcheck/internal/vhost"
)

// stoppedWithBatch brings a backpressure rig to the state the no-stall
// tests start from (see stopWithBatch).
func stoppedWithBatch(t *testing.T, n int) (*rig, uint64, *receiver) {
	t.Helper()
	r := newRig(t, setup{backpressure: true, qdisc: qdiscPfifo, lateBackend: true})
	sent, rv := r.stopWithBatch(r.sender(0), n)
	return r, sent, rv
}

// stopWithBatch sends n frames with snd to a backpressure rig whose guest is
// not attached yet (setup.lateBackend) and brings it to a stopped queue with
// a batch in vhost: the tap's ring full and its queue stopped, the rest of
// the n frames in the qdisc, then vhost attached with one guest buffer.
// vhost takes a whole batch out of the full ring (too few to wake the
// queue), fills the one buffer with seq 0 and holds the rest of its batch.
// It returns what the kernel took and the guest's receiver.
func (r *rig) stopWithBatch(snd *traffic.Sender, n int) (uint64, *receiver) {
	t := r.tb
	t.Helper()
	sent := sendAll(t, snd, n)
	st := r.waitState("a full ring and a stopped queue", func(s state) bool { return s.Qdisc.Qlen+uint64(r.ring) >= sent })
	a := account(sent, 0, st)
	a.InDevice = uint64(r.ring)
	assert.Assert(t, a.Balanced(), "the ring holds %d, the qdisc the rest: %v", r.ring, a)
	r.attach(0)
	rv := r.receiver(true)
	r.receive(r.guests[0], rv, 1, func(rv *receiver) bool { return rv.got == 1 })
	assert.Check(t, is.DeepEqual(rv.seqs, []uint64{0}))
	return sent, rv
}

// TestNoStall: no way of taking vhost away from a stopped
// queue loses frames or leaves the queue stopped for good.
func TestNoStall(t *testing.T) {
	feature.Of(t, feature.Seed000Vhost)
	const n = ring + 300

	// Detach the backend while the queue is stopped: vhost gives the 63
	// entries left in its batch back to the head of the ring
	// (vhost_net_buf_unproduce → ptr_ring_unconsume, drivers/vhost/net.c:197),
	// read() on the tap then consumes, which wakes the queue, and a
	// re-attached guest gets the rest: every frame exactly once, in order.
	// vhost counted its batch of 64 when it took it from the stopped ring
	// (tun_wake_queue, tun.c:3899), and giving entries back uncounts nothing,
	// so each read() adding 1 (tun_ring_consume, tun.c:2250) wakes the queue
	// at exactly ring/2 - 64 = 64 reads (__tun_wake_queue, tun.c:2242); the
	// qdisc then fills the ring's 65 free slots: the one whose frame the
	// guest got (vhost gives back only the 63 it still holds) and the 64 read
	// (ptr_ring frees consumed slots 16 at a time; 64 is a multiple).
	t.Run("DetachWhileStopped", func(t *testing.T) {
		r, sent, rv := stoppedWithBatch(t, n)
		g := r.guests[0]
		f := r.taps[0].File
		assert.NilError(t, g.DetachBackend())
		before := r.steady()
		wakeAt := ring/2 - guest.Batch
		rule := fmt.Sprintf("tun wakes a stopped queue once %d entries were consumed since the stop (ring/2, __tun_wake_queue, drivers/net/tun.c:2242) or the ring is empty; vhost's batch counted %d and read() counts 1 each", ring/2, guest.Batch)
		ledger := func(read []uint64, st state) counters.Accounting {
			a := account(sent, rv.got+uint64(len(read)), st)
			a.InDevice = uint64(inDevice(sent, a.Received, st))
			return a
		}

		read := readTap(t, f, wakeAt-1, 2*time.Second)
		st := r.steady()
		assert.Equal(t, st.Qdisc.Qlen, before.Qdisc.Qlen, "%s: want the queue still stopped after %d reads; %v", rule, len(read), ledger(read, st))

		read = append(read, readTap(t, f, 1, 2*time.Second)...)
		free := uint64(ring) - ledger(read, st).InDevice
		st, err := counters.WaitFor(r.ctx, wait, r.state, func(s state) bool { return s.Qdisc.Qlen+free <= before.Qdisc.Qlen })
		assert.NilError(t, err, "%s: want the queue woken by read() number %d and the qdisc to fill the ring's %d free slots; %v", rule, len(read), free, ledger(read, st))
		st = r.steady()
		assert.Equal(t, before.Qdisc.Qlen-st.Qdisc.Qlen, free, "%s: after read() number %d the qdisc fills the ring's %d free slots and stops again; %v", rule, len(read), free, ledger(read, st))
		assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", ledger(read, st))

		read = append(read, readTap(t, f, ring/2-len(read), 2*time.Second)...)
		assert.Check(t, is.DeepEqual(read, seqRange(1, 1+ring/2)), "read() after the detach starts with what vhost held")

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
		again := readTap(t, r.taps[0].File, int(more), 2*time.Second)
		st = r.mustState()
		a = account(sent+more, rv.got+uint64(len(read)+len(again)), st)
		assert.Equal(t, uint64(len(again)), more, "the tap still works after the vhost device closed: %v", a)
		assert.Assert(t, a.Balanced(), "%v", a)
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
				a0 := account(sent0, 0, st0)
				a0.InDevice = uint64(inDevice(sent0, 0, st0))
				assert.Equal(t, st0.Link.TxDropped, uint64(0), "%v", a0)
			}

			s1, rv1 := r.sender(1), r.receiver(false)
			var sent1 uint64
			for range 4 {
				sent1 += sendAll(t, s1, ring/2)
				r.collect(r.guests[1], rv1, func(rv *receiver) bool { return rv.got >= sent1 })
			}
			st := r.mustState()
			a := account(sent0+sent1, rv1.got, st)
			a.InDevice = uint64(inDevice(sent0+sent1, rv1.got, st))
			assert.Equal(t, rv1.got, sent1, "queue 1 delivers everything while queue 0 is stuck; %v", a)
			assert.Equal(t, st.Link.TxDropped, st0.Link.TxDropped, "queue 1 dropped nothing; %v", a)
			assert.Equal(t, st.Qdisc.Qlen, st0.Qdisc.Qlen, "queue 0's backlog did not move; %v", a)

			rv0 := r.receiver(false)
			sent := sent0 + sent1
			r.collect(r.guests[0], rv0, func(rv *receiver) bool {
				s := r.mustState()
				return rv.got+rv1.got+s.Link.TxDropped+s.Qdisc.Drops >= sent && s.Qdisc.Qlen == 0
			})
			st = r.mustState()
			a = account(sent, rv0.got+rv1.got, st)
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
