package vhost

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	guest "github.com/xmitcheck/xmitcheck/internal/vhost"
)

// TestBackpressure is invariant 3 (Linux 7.3, IFF_BACKPRESSURE with a
// qdisc): a guest that posts nothing makes tun stop the queue instead of
// dropping, so the qdisc's backlog grows and tun drops nothing. As the
// guest posts buffers a batch at a time, vhost's consumption wakes the queue
// (tun_wake_queue once half the ring is consumed, or the ring is empty), the
// backlog drains in steps of batches, never one frame at a time, and in the
// end received = sent - qdisc drops exactly.
func TestBackpressure(t *testing.T) {
	feature.Of(t, feature.Seed000Vhost)
	for _, s := range []setup{
		{backpressure: true, qdisc: qdiscPfifo},
		{backpressure: true, qdisc: qdiscFqCodel},
	} {
		t.Run("SlowGuest/"+s.String(), func(t *testing.T) {
			const n = ring + guest.Batch + 1000
			r := newRig(t, s)
			g := r.guests[0]
			sent := sendAll(t, r.sender(0), n)
			st := r.waitState("a stopped queue", func(s state) bool {
				return s.Qdisc.Qlen+s.Qdisc.Drops+s.Link.TxDropped+ring+guest.Batch >= sent
			})
			held := inDevice(sent, 0, st)
			a := account(sent, 0, st)
			a.InDevice = uint64(held)
			t.Logf("before the guest posts: %v", a)
			assert.Equal(t, st.Link.TxDropped, uint64(0), "a full ring stops the queue instead of dropping; %v", a)
			assert.Assert(t, held >= ring-ringSlack && held <= ring+guest.Batch, "the device holds %d; %v", held, a)
			assert.Assert(t, st.Qdisc.Qlen > 0, "the backlog is in the qdisc; %v", a)

			// The guest posts one batch at a time and waits until vhost has
			// filled it; the backlog may only shrink, in steps.
			rv := newReceiver(false)
			backlog := []uint64{st.Qdisc.Qlen}
			for rv.got+st.Qdisc.Drops < sent {
				want := rv.got + guest.Batch
				r.receive(g, rv, guest.Batch, func(rv *receiver) bool {
					if rv.got >= want {
						return true
					}
					// fq_codel may drop the last frames at dequeue.
					s := r.mustState()
					return rv.got+s.Qdisc.Drops >= sent
				})
				st = r.settled()
				a = account(sent, rv.got, st)
				assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", a)
				last := backlog[len(backlog)-1]
				assert.Assert(t, st.Qdisc.Qlen <= last, "the backlog grew from %d to %d with no sender; %v", last, st.Qdisc.Qlen, a)
				if st.Qdisc.Qlen != last {
					backlog = append(backlog, st.Qdisc.Qlen)
				}
			}
			st = r.waitState("a drained qdisc", func(s state) bool { return s.Qdisc.Qlen == 0 })
			a = account(sent, rv.got, st)
			t.Logf("backlog after each batch the guest took: %v", backlog)
			assert.Assert(t, a.Balanced(), "%v", a)
			assert.Equal(t, rv.got, sent-st.Qdisc.Drops, "%v", a)
			if s.qdisc == qdiscPfifo {
				// pfifo drops nothing here, so every change of the backlog is
				// a wake-up: the queue must have woken in batches, not per frame.
				assert.Equal(t, st.Qdisc.Drops, uint64(0), "%v", a)
				for i := 1; i < len(backlog)-1; i++ {
					step := backlog[i-1] - backlog[i]
					assert.Assert(t, step >= guest.Batch, "the backlog fell by %d, want wake-ups of ≥ %d frames (tun wakes after ring/2 consumed): %v; %v",
						step, guest.Batch, backlog, a)
				}
			}
		})
	}
}
