package vhost

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// TestStock is the behaviour seed 000 keeps without the flag:
// a guest that posts no buffers lets vhost take one batch (at most 64) out
// of the tap's ring, the ring fills, and tun tail-drops the rest
// (tx_dropped). Once the guest posts buffers it gets exactly what the
// device held, and sent = received + tun drops. The same with each of the
// guest's virtio variants (event indexes, indirect descriptors, mergeable
// buffers): none changes what vhost takes from the ring.
func TestStock(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	setups := []setup{{qdisc: qdiscDefault}}
	for _, v := range virtioVariants {
		setups = append(setups, setup{qdisc: qdiscDefault, virtio: v})
	}
	for _, s := range setups {
		t.Run("NoGuestBuffers/"+s.String(), func(t *testing.T) { noGuestBuffers(t, s) })
	}
}

// noGuestBuffers fills the tap with a guest that posts nothing, then lets
// the guest take what the device held.
func noGuestBuffers(t *testing.T, s setup) {
	const n = ring + vhostnet.Batch + 300
	r := newRig(t, s)
	sent := sendAll(t, r.sender(0), n)
	// Wait until every frame is either dropped or in the device: the
	// qdisc is empty and the device holds at most a ring and a batch.
	r.waitState("tun tail-drop", func(s state) bool {
		return s.Qdisc.Qlen == 0 && inDevice(sent, 0, s) <= ring+vhostnet.Batch
	})
	st := r.steady()
	held := inDevice(sent, 0, st)
	a := account(sent, 0, st)
	a.InDevice = uint64(held)
	t.Logf("before the guest posts: %v", a)
	assert.Assert(t, held >= ring-ringSlack && held <= ring+vhostnet.Batch,
		"the device (ring %d + vhost's batch ≤ %d) holds %d; %v", ring, vhostnet.Batch, held, a)
	assert.Equal(t, st.Qdisc.Drops, uint64(0), "%v", a)
	assert.Equal(t, st.Link.TxPackets, uint64(0), "no guest buffer, nothing delivered; %v", a)

	rv := r.receiver(false)
	r.collect(r.guests[0], rv, func(rv *receiver) bool { return rv.got >= uint64(held) })
	st = r.mustState()
	a = account(sent, rv.got, st)
	assert.Assert(t, a.Balanced(), "%v", a)
	assert.Equal(t, int64(rv.got), held, "the guest gets exactly what the device held; %v", a)
	assert.Equal(t, st.Link.TxDropped, sent-uint64(held), "%v", a)
}
