package tun

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// TestTailDrop: where no queue stops (the flag off, or no qdisc to hold
// frames), an idle reader and N > R frames leave exactly R readable, N-R
// in tun's tx_dropped (each a kfree_skb with reason FULL_RING where the
// kernel has drop reasons) and nothing in the qdisc. With noqueue the flag
// must change nothing.
func TestTailDrop(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, tc := range []struct {
		name string
		opts tapOpts
	}{
		{"flag=off/qdisc=pfifo", tapOpts{ring: 16, limit: 64}},
		{"flag=off/qdisc=noqueue", tapOpts{ring: 16}},
		{"flag=on/qdisc=noqueue", tapOpts{ring: 16, flags: tuntap.IFFBackpressure}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkTailDrop(t, tc.opts) })
	}
}

// checkTailDrop sends R+40 frames to an idle reader and checks the
// tail-drop ledger exactly, then the drop reasons.
func checkTailDrop(t *testing.T, o tapOpts) {
	const extra = 40
	rig := newTap(t, o)
	reason, reasonErr := fullRingReason()
	var w *dropmon.Monitor
	if reasonErr == nil {
		w = rig.watchDrops(t)
	}
	s := rig.sender(t, 1)
	fx := rig.waitFill(t, s, send(t, s, o.ring+extra), o.ring+extra)
	r := traffic.NewReader(fx.dev.File)
	l, st := fx.readBack(t, r, r, 0)
	assert.Check(t, is.Equal(l.Received, uint64(o.ring)), "frames readable; %v", l)
	assert.Check(t, is.Equal(st.Link.TxDropped, uint64(extra)), "tun tx_dropped; %v", l)
	assert.Check(t, is.Equal(st.Link.TxPackets, l.Received), "tun counts tx_packets when a frame is read; %v", l)
	if o.limit == 0 {
		assert.Check(t, is.Equal(fx.res.Refused, uint64(extra)),
			"with noqueue sendto reports each tun drop as ENOBUFS; %v", l)
	} else {
		assert.Check(t, is.Equal(fx.res.Refused, uint64(0)), "a qdisc hides tun drops from sendto; %v", l)
	}

	t.Run("DropReason", func(t *testing.T) {
		observe.Require(t, reasonErr)
		c, err := w.Count(reason)
		assert.NilError(t, err)
		seen, err := w.All()
		assert.NilError(t, err)
		assert.Check(t, is.Equal(c, uint64(extra)),
			"kfree_skb drops with reason FULL_RING (%d) on %s; every reason seen there: %v; %v", reason, tapName, seen, l)
	})
}
