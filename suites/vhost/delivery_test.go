package vhost

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestDelivery is invariant 1: frames sent into the tap arrive in the guest's
// buffers intact, in order, none lost, on every kernel with vhost-net, with
// the flag off and on.
func TestDelivery(t *testing.T) {
	for _, s := range []setup{
		{qdisc: qdiscDefault},
		{backpressure: true, qdisc: qdiscPfifo},
	} {
		t.Run(s.String(), func(t *testing.T) {
			const n = 200 // fewer than the guest's buffers: nothing may drop
			r := newRig(t, s)
			g := r.guests[0]
			posted, err := g.Post(ring)
			assert.NilError(t, err)
			assert.Equal(t, posted, ring)

			sent := sendAll(t, r.sender(0), n)
			rv := newReceiver(true)
			r.collect(g, rv, func(rv *receiver) bool { return rv.got >= sent })
			st := r.waitState("an idle qdisc", func(s state) bool { return s.Qdisc.Qlen == 0 })
			a := account(sent, rv.got, st)
			assert.Assert(t, a.Balanced(), "%v", a)
			assert.Equal(t, a.Received, uint64(n), "%v", a)
			want := make([]uint64, n)
			for i := range want {
				want[i] = uint64(i)
			}
			assert.Check(t, is.DeepEqual(rv.seqs, want), "sequence numbers received, in order; %v", a)
			assert.Equal(t, st.Link.TxPackets, uint64(n), "tun counts a frame as sent when vhost copies it to the guest; %v", fmt.Sprint(st))
		})
	}
}
