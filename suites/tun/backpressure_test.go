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

// TestBackpressure: with IFF_BACKPRESSURE and a qdisc,
// the produce that fills the ring stops the queue and the qdisc holds what
// follows (seed 000; and seed 002's "stop at the limit instead of
// dropping", with the limit R = txqueuelen); with noqueue the flag changes
// nothing; and the queue wakes after R/2 reads, not before. Every subtest
// skips with the probe's reason on a kernel without the flag.
func TestBackpressure(t *testing.T) {
	feature.Of(t, feature.Seed000Tun)
	for _, tc := range []struct {
		name       string
		ring, n    int
		limit      uint32
		wantBklog  int
		wantQDrops int
	}{
		// N <= R+P: tun drops nothing, the qdisc holds N-R.
		{"StopAtLimit/within_qdisc_limit", 16, 16 + 40, 64, 40, 0},
		// N > R+P: the qdisc holds P and drops N-R-P, tun still drops nothing.
		{"StopAtLimit/over_qdisc_limit", 16, 16 + 16 + 24, 16, 16, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tapOpts{ring: tc.ring, limit: tc.limit, flags: tuntap.IFFBackpressure}
			assert.Equal(t, idleFate(o, tc.n), fate{ring: tc.ring, backlog: tc.wantBklog, qdiscDrops: tc.wantQDrops}, "model")
			te, s, res, f, st := fill(t, o, tc.n)
			l := account(res.Sent+res.Refused, 0, st, f.ring)
			assert.Assert(t, l.Balanced(), "%v", l)
			assert.Check(t, is.Equal(st.Link.TxDropped, uint64(0)), "tun drops; %v", l)
			assert.Check(t, is.Equal(st.Q.Drops, uint64(f.qdiscDrops)), "qdisc drops; %v", l)
			assert.Check(t, is.Equal(res.Refused, uint64(f.qdiscDrops)), "sendto ENOBUFS are the qdisc's drops; %v", l)
			feature.Shows(t, feature.Seed000Tun, fmt.Sprintf("the full ring of %d stopped the queue: the qdisc held %d, tun dropped none", tc.ring, st.Q.Qlen))

			r := traffic.NewReader(te.dev.File)
			readExactly(t, r, f.ring+f.backlog)
			got := f.ring + f.backlog + drain(t, r)
			st = te.waitState(t, "empty qdisc", func(s state) bool { return s.Q.Qlen == 0 })
			l = account(res.Sent+res.Refused, got, st, 0)
			assert.Assert(t, l.Balanced(), "%v", l)
			assert.Check(t, is.Equal(got, f.ring+f.backlog), "every frame held is read; %v", l)
			assert.Check(t, is.Equal(st.Link.TxDropped, uint64(0)), "tun drops; %v", l)
			assert.Check(t, is.Equal(st.Link.TxPackets, uint64(got)), "tun tx_packets; %v", l)
			checkStreams(t, l, sentBy(s), r)
			checkFirst(t, r, 1, f.ring+f.backlog)
		})
	}

	// NoqueueKeepsTailDrop: without a qdisc there is nothing to hold
	// frames, so the flag must leave tail-drop exactly as it was.
	t.Run("NoqueueKeepsTailDrop", func(t *testing.T) {
		checkTailDrop(t, tapOpts{ring: 16, flags: tuntap.IFFBackpressure})
	})

	// WakeHysteresis: ptr_ring frees consumed slots in batches of
	// 2*SMP_CACHE_BYTES/8 = 16 (1 when that exceeds R/2); both ring sizes
	// here make R/2 a multiple of the batch, so the R/2-th read frees
	// exactly R/2 slots and exactly R/2 frames move from the qdisc. The
	// other wake rule, "the ring is empty", cannot fire first for a reader
	// that takes one frame per read() from a ring that was full at the
	// stop; it matters to vhost-net's batches (suites/vhost). Here the
	// final drain reads every frame through repeated stops and wakes.
	for _, ring := range []int{16, 64} {
		t.Run(fmt.Sprintf("WakeHysteresis/ring=%d", ring), func(t *testing.T) {
			o := tapOpts{ring: ring, limit: 1000, flags: tuntap.IFFBackpressure}
			n := 2 * ring
			te, s, res, f, _ := fill(t, o, n)
			r := traffic.NewReader(te.dev.File)

			readExactly(t, r, ring/2-1)
			te.holdState(t, fmt.Sprintf("no wake after %d reads (< R/2)", ring/2-1), func(s state) bool {
				return s.Q.Qlen == uint64(f.backlog) && s.Link.TxDropped == 0
			})
			readExactly(t, r, 1)
			moved := ring / 2
			te.waitState(t, fmt.Sprintf("the R/2-th read wakes the queue and %d frames move into the ring", moved), func(s state) bool {
				return s.Q.Qlen == uint64(f.backlog-moved)
			})
			st := te.holdState(t, "the refilled ring stops the queue again", func(s state) bool {
				return s.Q.Qlen == uint64(f.backlog-moved) && s.Link.TxDropped == 0
			})
			l := account(res.Sent+res.Refused, ring/2, st, ring)
			assert.Assert(t, l.Balanced(), "%v", l)
			feature.Shows(t, feature.Seed000Tun, fmt.Sprintf("ring %d: the %d-th read woke the queue, not one before", ring, ring/2))

			readExactly(t, r, n-ring/2)
			got := n + drain(t, r)
			st = te.waitState(t, "empty qdisc", func(s state) bool { return s.Q.Qlen == 0 })
			l = account(res.Sent+res.Refused, got, st, 0)
			assert.Assert(t, l.Balanced(), "%v", l)
			assert.Check(t, is.Equal(got, n), "%v", l)
			assert.Check(t, is.Equal(st.Link.TxDropped, uint64(0)), "tun drops; %v", l)
			checkStreams(t, l, sentBy(s), r)
			checkFirst(t, r, 1, n)
		})
	}
}
