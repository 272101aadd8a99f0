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

// TestBackpressure: with IFF_BACKPRESSURE and a qdisc, the produce that
// fills the ring stops the queue and the qdisc holds what follows (seed
// 000; and seed 002's "stop at the limit instead of dropping", the limit
// being R = txqueuelen): tun drops nothing, the qdisc drops only beyond
// its limit, and the reader gets every frame held, in order.
func TestBackpressure(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, tc := range []struct {
		name  string
		n     int
		limit uint32
		want  fate
	}{
		// N <= R+P: tun drops nothing, the qdisc holds N-R.
		{"within_qdisc_limit", 16 + 40, 64, fate{ring: 16, backlog: 40}},
		// N > R+P: the qdisc holds P and drops N-R-P, tun still drops nothing.
		{"over_qdisc_limit", 16 + 16 + 24, 16, fate{ring: 16, backlog: 16, qdiscDrops: 24}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: tc.limit, flags: tuntap.IFFBackpressure}
			assert.Equal(t, idleFate(o, tc.n), tc.want, "model")
			fx := fill(t, o, tc.n)
			l := fx.ledger()
			assert.Assert(t, l.Balanced(), "%v", l)
			assert.Check(t, is.Equal(fx.st.Link.TxDropped, uint64(0)), "tun drops; %v", l)
			assert.Check(t, is.Equal(fx.st.Q.Drops, uint64(tc.want.qdiscDrops)), "qdisc drops; %v", l)
			assert.Check(t, is.Equal(fx.res.Refused, uint64(tc.want.qdiscDrops)), "sendto ENOBUFS are the qdisc's drops; %v", l)
			observe.Shows(t, feature.Seed000Tun, fmt.Sprintf(
				"the full ring of %d stopped the queue: the qdisc held %d, tun dropped none", o.ring, fx.st.Q.Qlen))

			r := traffic.NewReader(fx.dev.File)
			l, st := fx.readBack(t, r, r, 0)
			assert.Check(t, is.Equal(st.Link.TxPackets, l.Received), "tun counts tx_packets when a frame is read; %v", l)
		})
	}
}

// TestWakeHysteresis: the reader wakes a stopped queue once it has
// consumed R/2 frames, not one before (__tun_wake_queue), and the woken
// queue refills the R/2 free slots and stops again.
//
// ptr_ring frees consumed slots in batches of 2*SMP_CACHE_BYTES/8 = 16 (1
// when that exceeds R/2); both ring sizes here make R/2 a multiple of the
// batch, so the R/2-th read frees exactly R/2 slots. The other wake rule,
// "the ring is empty", cannot fire first for a reader that takes one frame
// per read() from a ring that was full at the stop; it matters to
// vhost-net's batches (suites/vhost).
func TestWakeHysteresis(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, ring := range []int{16, 64} {
		t.Run(fmt.Sprintf("ring=%d", ring), func(t *testing.T) {
			fx := fill(t, tapOpts{ring: ring, limit: 1000, flags: tuntap.IFFBackpressure}, 2*ring)
			r := traffic.NewReader(fx.dev.File)
			half := ring / 2
			backlog := func(want int) func(state) bool {
				return func(now state) bool { return now.Q.Qlen == uint64(want) && now.Link.TxDropped == 0 }
			}

			readExactly(t, r, half-1)
			fx.holdState(t, fmt.Sprintf("no wake after %d reads (< R/2)", half-1), backlog(fx.fate.backlog))
			readExactly(t, r, 1)
			woke := fmt.Sprintf("the R/2-th read wakes the queue and %d frames move into the ring", half)
			fx.waitState(t, woke, backlog(fx.fate.backlog-half))
			st := fx.holdState(t, "the refilled ring stops the queue again", backlog(fx.fate.backlog-half))
			l := account(fx.res.Handed(), half, st, ring)
			assert.Assert(t, l.Balanced(), "%v", l)
			observe.Shows(t, feature.Seed000Tun,
				fmt.Sprintf("ring %d: the %d-th read woke the queue, not one before", ring, half))

			// The rest through repeated stops and wakes.
			fx.readBack(t, r, r, half)
		})
	}
}
