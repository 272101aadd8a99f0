package tun

import (
	"context"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// TestModes runs one sequence through the device kinds and modes a VPN or
// a VMM opens: R+40 frames to an idle reader, the ring full and the rest
// held by the qdisc (backpressure) or dropped by tun (stock), then every
// frame read, each stream in order, with the exact ledger at both points.
// Each mode runs stock (every kernel) and with the flag (skipping, with the
// probe's reason, where TUNGETFEATURES lacks it).
//
//   - tun/pi, tun/no_pi: an L3 device; its reads carry struct tun_pi (flags
//     0, the frame's protocol) before the packet, or nothing.
//   - tap/napi, tap/napi_frags: IFF_NAPI (and IFF_NAPI_FRAGS) change how
//     written packets enter the stack, not the transmit path: the sequence
//     must be that of a plain tap.
//   - tap/vnet_hdr: each read starts with a virtio_net_hdr, all zero for a
//     frame sent without checksum offload or segmentation.
//   - tap/vnet_hdr/gso/tso, tap/vnet_hdr/gso/segmented: TCP packets over the
//     MTU from a sender that leaves their segmentation to the device, which
//     takes them whole (TSO offered) or gets their segments (see
//     gsoThrough).
func TestModes(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, m := range []struct {
		name        string
		kind, flags uint16
		unwrap      unwrapFunc
	}{
		{"tun/pi", tuntap.IFFTun, 0, unwrapPI},
		{"tun/no_pi", tuntap.IFFTun | tuntap.IFFNoPI, 0, nil},
		{"tap/napi", 0, tuntap.IFFNapi, nil},
		{"tap/napi_frags", 0, tuntap.IFFNapi | tuntap.IFFNapiFrags, nil},
		{"tap/vnet_hdr", 0, tuntap.IFFVnetHdr, unwrapVnetHdr},
	} {
		for _, v := range variants {
			t.Run(m.name+"/"+v.name, func(t *testing.T) {
				o := tapOpts{ring: 16, limit: 1000, kind: m.kind, flags: m.flags | v.flags}
				fx := fill(t, o, o.ring+40)
				l := fx.ledger()
				assert.Assert(t, l.Balanced(), "%v", l)
				q, r := fx.reader(t, m.unwrap)
				fx.readBack(t, q, r, 0)
			})
		}
	}
	for _, tso := range []bool{true, false} {
		for _, v := range variants {
			name := "tap/vnet_hdr/gso/segmented/" + v.name
			if tso {
				name = "tap/vnet_hdr/gso/tso/" + v.name
			}
			t.Run(name, func(t *testing.T) { gsoThrough(t, tso, v.flags) })
		}
	}
}

// reader reads rig.dev: plainly, or through an entryReader that unwraps
// each read. The traffic.Reader follows the streams either way.
func (rig *tapRig) reader(t testing.TB, unwrap unwrapFunc) (queueReader, *traffic.Reader) {
	t.Helper()
	if unwrap == nil {
		r := traffic.NewReader(rig.dev.File)
		return r, r
	}
	er := newEntryReader(rig.dev.File, unwrap)
	return er, er.r
}

// unwrapPI takes a read of a tun device without IFF_NO_PI.
func unwrapPI(entry []byte) ([][]byte, error) {
	pi, pkt, err := tuntap.ParsePI(entry)
	if err != nil {
		return nil, err
	}
	if pi != (tuntap.PI{Proto: traffic.EtherType}) {
		return nil, fmt.Errorf("tun_pi flags %#x proto %#x, want flags 0 and the frame's protocol %#x",
			pi.Flags, pi.Proto, traffic.EtherType)
	}
	return [][]byte{pkt}, nil
}

// unwrapVnetHdr takes a read of a tap with IFF_VNET_HDR that carries a
// frame sent as it is (no checksum to complete, nothing to segment).
func unwrapVnetHdr(entry []byte) ([][]byte, error) {
	h, pkt, err := tuntap.ParseVnetHdr(entry, tuntap.VnetHdrLen)
	if err != nil {
		return nil, err
	}
	if h != (tuntap.VnetHdr{}) {
		return nil, fmt.Errorf("virtio_net_hdr %v, want all zero for a frame sent without offloads", h)
	}
	return [][]byte{pkt}, nil
}

// gsoFate is where the frames of packets of k frames each end up with an
// idle reader (see gsoThrough): the fate of the frames, and the qdisc's
// qlen and requeues.
type gsoFate struct {
	fate
	qlen, requeues int
}

// newGSOFate models it. A device that takes the packets whole (tso) puts
// each in one ring entry: idleFate in packets, k frames each. A device
// that does not gets their segments, one frame each, from the stack (after
// the qdisc, in validate_xmit_skb); stock, each segment meets the ring on
// its own: R fit, tun drops the rest. With backpressure the R-th segment
// fills the ring and stops the queue in the middle of its packet's list:
// dev_hard_start_xmit hands the rest back and dev_requeue_skb parks each
// remaining segment in the qdisc's gso_skb (one qlen and one requeue
// each), and the packets after it wait whole in the fifo (one qlen each).
// The pfifo limit must hold them all (the model has no qdisc drops).
//
// Whole packets (and plain frames alike) see one requeue too: the first
// after the stop finds the qdisc empty and takes the bypass, and
// sch_direct_xmit, finding the queue stopped, requeues it.
func newGSOFate(o tapOpts, packets, k int, tso bool) gsoFate {
	if tso {
		f := idleFate(o, packets)
		g := gsoFate{
			fate: fate{ring: f.ring * k, backlog: f.backlog * k, qdiscDrops: f.qdiscDrops * k, tunDrops: f.tunDrops * k},
			qlen: f.backlog,
		}
		if f.backlog > 0 {
			g.requeues = 1
		}
		return g
	}
	n := packets * k
	var g gsoFate
	g.ring = min(n, o.ring)
	if !o.backpressure() {
		g.tunDrops = n - g.ring
		return g
	}
	if n == g.ring {
		return g
	}
	g.requeues = (k - o.ring%k) % k
	waiting := packets - (o.ring+g.requeues)/k
	g.qlen = g.requeues + waiting
	g.backlog = g.requeues + waiting*k
	return g
}

// gsoThrough sends TCP/IPv4 packets of k = 25 frames each (1,554 bytes,
// over the tap's MTU of 1,500) from a gsoSender to a tap with IFF_VNET_HDR
// and R = 16, with an idle reader, then reads every frame; the ledger
// counts frames.
//
// With tso the tap offers TCP segmentation (TUNSETOFFLOAD CSUM|TSO4, as a
// VMM sets it) and takes each packet whole, SKB_GSO_DODGY or not
// (tcp_gso_segment only checks it): a ring entry is a packet, its
// virtio_net_hdr says TCPV4 with gso_size 60. 20 packets: stock, 16 in the
// ring and 4 tun drops (100 frames); backpressure, 16 in the ring and 4 in
// the qdisc, the first of them requeued.
//
// Without, the stack segments each packet after the qdisc and a ring entry
// is one segment (gso_type NONE). 4 packets: stock, 16 segments in the
// ring and 84 tun drops; backpressure, 16 in the ring, the first packet's
// other 9 segments requeued and 3 packets (75 frames) in the fifo. The
// reader then gets every frame in order through each stop and wake, the
// requeued segments before the packets behind them.
func gsoThrough(t *testing.T, tso bool, flags uint16) {
	const k = 25
	packets, offload := 4, 0
	if tso {
		packets, offload = 20, tuntap.TunFCsum|tuntap.TunFTSO4
	}
	o := tapOpts{ring: 16, limit: 1000, flags: tuntap.IFFVnetHdr | flags}
	g := newGSOFate(o, packets, k, tso)
	assert.Assert(t, g.qlen <= int(o.limit), "model: %+v", g)
	rig := newTap(t, o)
	assert.NilError(t, rig.dev.SetOffload(offload))
	s := rig.gsoSender(t, 1, k)
	res, err := s.Send(packets)
	assert.NilError(t, err, "after %d packets sent, %d refused", res.Sent, res.Refused)
	sent := res.Handed() * k

	st := rig.gsoReached(t, g, newGSOFate(o.stock(), packets, k, tso), gsoSkbs(tso, k))
	l := account(sent, 0, st, g.ring)
	// In frames, as the model says the counters' skbs carry them.
	l.DeviceDrops, l.QdiscBacklog = uint64(g.tunDrops), uint64(g.backlog)
	assert.Assert(t, l.Balanced(), "%v; %v", l, st)
	assert.Check(t, is.Equal(res.Refused, uint64(0)), "%v", l)
	assert.Check(t, is.Equal(st.Q.Drops, uint64(0)), "qdisc drops; %v", l)

	entries := g.held() / gsoSkbs(tso, k)
	q, r := rig.reader(t, unwrapTCP(tso))
	readExactly(t, q, entries)
	extra := rig.drain(t, q)
	got := int(r.Total())
	st = rig.waitState(t, "empty qdisc", func(now state) bool { return now.Q.Qlen == 0 })
	l = account(sent, got, st, 0)
	l.DeviceDrops = uint64(g.tunDrops)
	assert.Assert(t, l.Balanced(), "%v; %v", l, st)
	assert.Check(t, is.Equal(extra, 0), "ring entries beyond the model's %d; %v", entries, l)
	assert.Check(t, is.Equal(got, g.held()), "%v", l)
	assert.Check(t, is.Equal(st.Link.TxDropped, uint64(g.tunDrops/gsoSkbs(tso, k))), "tun drops; %v", l)
	checkStreams(t, l, sentBy(s), r)
	checkFirst(t, r, 1, got)
	t.Logf("%d packets of %d frames: %+v; after reading %v; %v", packets, k, g, st, l)
}

// gsoSkbs is how many frames one skb carries past the qdisc: a whole
// packet of k where the tap takes TSO, one segment's where it does not.
func gsoSkbs(tso bool, k int) int {
	if tso {
		return k
	}
	return 1
}

// gsoReached waits for the counters of want (tun counts a drop per skb,
// of per frames each) and, with a backlog, checks the queue stays stopped.
// A kernel that kept the flag but shows exactly stock's counters has no
// seed 000.
func (rig *tapRig) gsoReached(t *testing.T, want, stock gsoFate, per int) state {
	t.Helper()
	counts := func(g gsoFate) func(state) bool {
		return func(now state) bool {
			return now.Q.Qlen == uint64(g.qlen) && now.Q.Requeues == uint64(g.requeues) &&
				now.Link.TxDropped == uint64(g.tunDrops/per)
		}
	}
	either := func(now state) bool { return counts(want)(now) || counts(stock)(now) }
	st, err := counters.WaitFor(context.Background(), waitLimit, rig.state, either)
	assert.NilError(t, err, "waiting for the ring full: qdisc qlen %d (requeued segments %d), tun drops %d",
		want.qlen, want.requeues, want.tunDrops/per)
	if !counts(want)(st) {
		observe.Absent(t, feature.Seed000Tun, fmt.Sprintf(
			"IFF_BACKPRESSURE kept with a %s root qdisc, yet the queue never stopped: "+
				"of GSO packets to an idle reader tun dropped %d skbs (tail-drop), the qdisc held none",
			st.Q.Kind, st.Link.TxDropped))
	}
	if want.qlen > 0 {
		st = rig.holdState(t, "stopped queue", counts(want))
	}
	return st
}
