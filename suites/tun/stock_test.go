package tun

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
)

// TestProbe checks the IFF_BACKPRESSURE probe against the kernel's own
// answer: TUNGETFEATURES offers 0x80 exactly when TUNSETIFF keeps it (read
// back with TUNGETIFF), and a kernel expected to have it does.
func TestProbe(t *testing.T) {
	feature.Of(t, feature.Seed000Tun)
	features, err := tuntap.Features()
	assert.NilError(t, err)
	probe := tuntap.ProbeBackpressure()
	t.Logf("TUNGETFEATURES=%#x, IFF_BACKPRESSURE probe: %v", features, probe)

	te := newTap(t, tapOpts{ring: 16, limit: 16, flags: tuntap.IFFBackpressure, loose: true})
	flags, err := te.dev.Flags()
	assert.NilError(t, err)
	kept := flags&tuntap.IFFBackpressure != 0
	assert.Check(t, is.Equal(kept, probe == nil), "TUNGETFEATURES %#x, TUNGETIFF flags after TUNSETIFF with 0x80: %#x", features, flags)
	if e := feature.Expected(); e.WantFeature(feature.IFFBackpressure) {
		assert.Check(t, probe, "this kernel is expected to offer IFF_BACKPRESSURE ($%s=%s)", feature.ExpectEnv, e)
	}
}

// TestClassify reports, for flag on/off x qdisc pfifo/noqueue, whether a
// tap whose reader is idle holds the frames beyond its ring in the qdisc
// ("backpressure") or drops them in tun ("taildrop"). It asks for the flag
// without requiring it, so a kernel that stops the queue without offering
// the flag (seed 000 as first merged, seed 002) is seen, and fails:
// backpressure is expected only with the flag, offered, and a qdisc.
func TestClassify(t *testing.T) {
	feature.Of(t, feature.Seed000Tun)
	const ring, extra = 16, 32
	offered := tuntap.ProbeBackpressure() == nil
	for _, flag := range []bool{false, true} {
		for _, qdisc := range []string{"pfifo", "noqueue"} {
			name := "flag=off/qdisc=" + qdisc
			if flag {
				name = "flag=on/qdisc=" + qdisc
			}
			t.Run(name, func(t *testing.T) {
				o := tapOpts{ring: ring, loose: true}
				if qdisc == "pfifo" {
					o.limit = 2 * extra
				}
				if flag {
					o.flags = tuntap.IFFBackpressure
				}
				te := newTap(t, o)
				s := te.sender(t, 1)
				n := ring + extra
				var res traffic.Result
				enetdown := 0
				for range n {
					r, err := s.Send(1)
					if isENETDOWN(err) {
						enetdown++
						continue
					}
					assert.NilError(t, err)
					res.Sent += r.Sent
					res.Refused += r.Refused
				}
				// Settled: every frame passed the qdisc, sits in it or was
				// dropped by it (a frame requeued at the stop counts twice,
				// hence >=), and two samples in a row agree.
				var prev state
				settled := te.waitState(t, "frames settled", func(st state) bool {
					ok := st == prev && (o.limit == 0 || st.Q.Packets+st.Q.Qlen+st.Q.Drops >= uint64(n))
					prev = st
					return ok
				})
				st := te.holdState(t, "settled counters", func(st state) bool { return st == settled })
				var got string
				switch {
				case st.Link.TxDropped > 0 && st.Q.Qlen == 0:
					got = "taildrop"
				case st.Link.TxDropped == 0 && st.Q.Qlen > 0:
					got = "backpressure"
				default:
					got = "mixed"
				}
				want := "taildrop"
				if flag && offered && o.limit > 0 {
					want = "backpressure"
				}
				t.Logf("behaviour: %s (sent %d, refused %d, ENETDOWN %d; %v)", got, res.Sent, res.Refused, enetdown, st)
				assert.Check(t, is.Equal(got, want), "flag asked %v, offered %v, qdisc %s", flag, offered, qdisc)
				assert.Check(t, is.Equal(enetdown, 0), "sendto ENETDOWN: the queue was stopped with no qdisc to hold frames")
			})
		}
	}
}

// TestTailDrop is invariant 1, the stock behaviour every kernel has with the
// flag off: an idle reader and N > R frames leave exactly R readable, N-R
// in tx_dropped (each a kfree_skb with reason FULL_RING where the kernel has
// drop reasons) and nothing in the qdisc.
func TestTailDrop(t *testing.T) {
	feature.Of(t, feature.Seed000Tun)
	for _, tc := range []struct {
		name string
		opts tapOpts
	}{
		{"qdisc=pfifo", tapOpts{ring: 16, limit: 64}},
		{"qdisc=noqueue", tapOpts{ring: 16}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkTailDrop(t, tc.opts) })
	}
}

// checkTailDrop sends R+40 frames to an idle reader and checks the tail-drop
// ledger exactly, then the drop reasons.
func checkTailDrop(t *testing.T, o tapOpts) {
	const extra = 40
	te := newTap(t, o)
	reason, reasonErr := fullRingReason()
	var w *dropmon.Monitor
	if reasonErr == nil {
		w = te.watchDrops(t)
	}
	n := o.ring + extra
	res := send(t, te.sender(t, 1), n)
	te.waitState(t, "tail-drop of the frames beyond the ring", func(st state) bool {
		return st.Link.TxDropped >= extra && st.Q.Qlen == 0
	})
	got := drain(t, traffic.NewReader(te.dev.File))
	st, err := te.state()
	assert.NilError(t, err)
	l := account(res.Sent+res.Refused, got, st, 0)
	assert.Assert(t, l.Balanced(), "%v", l)
	assert.Check(t, is.Equal(got, o.ring), "frames readable; %v", l)
	assert.Check(t, is.Equal(st.Link.TxDropped, uint64(extra)), "tun tx_dropped; %v", l)
	assert.Check(t, is.Equal(st.Q.Qlen, uint64(0)), "qdisc backlog; %v", l)
	assert.Check(t, is.Equal(st.Link.TxPackets, uint64(got)), "tun counts tx_packets when a frame is read; %v", l)
	if o.limit == 0 {
		assert.Check(t, is.Equal(res.Refused, uint64(extra)), "with noqueue sendto reports each tun drop as ENOBUFS; %v", l)
	} else {
		assert.Check(t, is.Equal(res.Refused, uint64(0)), "a qdisc hides tun drops from sendto; %v", l)
	}

	t.Run("DropReason", func(t *testing.T) {
		feature.Require(t, reasonErr)
		c, err := w.Count(reason)
		assert.NilError(t, err)
		seen, err := w.All()
		assert.NilError(t, err)
		assert.Check(t, is.Equal(c, uint64(extra)), "kfree_skb drops with reason FULL_RING (%d) on %s; every reason seen there: %v; %v", reason, tapName, seen, l)
	})
}
