package devmap

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// tapRing is the tap's txqueuelen, the size of its ptr_ring: not a multiple
// of bulkSize, so a flush can meet the full ring half-way.
const tapRing = 40

const (
	// readWait bounds the wait for each frame the tap should hold.
	readWait = 2 * time.Second
	// readExtra is how long the reader looks for a frame beyond those.
	readExtra = 20 * time.Millisecond
)

// TestRedirectToTap/RingFull: XDP redirects 64 frames through a devmap entry
// into a tap opened with IFF_BACKPRESSURE, with a pfifo qdisc, whose ring
// holds 40 and which nobody reads yet. IFF_BACKPRESSURE (seed 000) stops the
// queue only on the qdisc path, tun_net_xmit; what the tap does with frames
// beyond its ring, and where it counts them, depends on the path:
//
//   - native: each flush hands its frames to tun_xdp_xmit, which tail-drops
//     what the ring has no room for and never stops the queue.
//     xdp_devmap_xmit reports every dropped frame; tx_dropped grows by one
//     per tun_xdp_xmit call that met the full ring, not per frame.
//   - generic: generic_xdp_tx hands each frame to tun_net_xmit, which stops
//     the queue when the 40th frame fills the ring; generic_xdp_tx then
//     drops every later frame itself (tx_dropped, one per frame).
//
// A frame then sent through the qdisc shows the queue state: dropped by
// tun_net_xmit (FULL_RING, tx_dropped) when the queue is awake, kept in the
// qdisc when it is stopped, and delivered once the reader has consumed half
// the ring and woken it. The reader gets frames 0 to 39 in order.
func TestRedirectToTap(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	t.Run("RingFull", func(t *testing.T) {
		eachDriver(t, testRingFull)
	})
}

func testRingFull(t *testing.T, r *rig, d driver) {
	observe.Probe(t, feature.IFFBackpressure, tuntap.ProbeBackpressure())
	ctx := withDeadline(t)
	const frames = 64
	tp := openTap(t, r)
	m := r.devmap(t, false)
	r.setEntry(t, m, 0, tp.link, nil)
	r.route(t, 0)
	r.watch(t, tp.link)
	tp.before = r.linkStats(t, tp.link)

	assert.NilError(t, d.push(ctx, frames, frames))
	xdp := tp.xdpIntoFullRing(ctx, t, r, d, frames)
	q0, err := counters.ReadRootQdisc(r.env, tp.link.Attrs().Name)
	assert.NilError(t, err)
	txDropped := tp.stats(t, r).TxDropped
	probe := sendOn(t, r, tp.link)
	tp.queueState(t, r, d, q0, txDropped)

	// The reader drains the ring (and, where the frame waited in the
	// qdisc, wakes the queue and gets it too).
	wantProbes := uint64(0)
	if d.when() == atOnce {
		wantProbes = 1
	}
	numbers, probes := readTap(t, tp.dev, tapRing+int(wantProbes))
	want := make([]uint32, tapRing)
	for i := range want {
		want[i] = uint32(i)
	}
	assert.Check(t, is.DeepEqual(numbers, want), "XDP frames read from the tap, by number")
	q, err := counters.ReadRootQdisc(r.env, tp.link.Attrs().Name)
	assert.NilError(t, err)
	stats := tp.stats(t, r)
	xdp.InDevice, xdp.Received = 0, uint64(len(numbers))
	assert.Check(t, xdp.Balanced(), "XDP frames: %v (device drops: native xdp_devmap_xmit, generic tap tx_dropped)", xdp)
	skb := counters.Accounting{
		Sent:         probe,
		Received:     probes,
		DeviceDrops:  stats.TxDropped - txDropped,
		QdiscDrops:   q.Drops - q0.Drops,
		QdiscBacklog: q.Qlen,
	}
	assert.Check(t, skb.Balanced(), "frame through the qdisc: %v; %v", skb, q)
	assert.Check(t, is.Equal(probes, wantProbes), "frame through the qdisc read from the tap: %v", skb)
	assert.Check(t, is.Equal(stats.TxPackets, uint64(len(numbers))+probes),
		"tap tx_packets counts what the reader got; tap %v", stats)
}

// tap is the rig's tap0 and its stats64 before the test.
type tap struct {
	dev    *tuntap.Device
	link   netlink.Link
	before counters.Link
}

// stats reads the tap's stats64 since the test began.
func (tp tap) stats(t *testing.T, r *rig) counters.Link {
	t.Helper()
	return r.linkStats(t, tp.link).Sub(tp.before)
}

// xdpIntoFullRing checks what the XDP frames did to the tap: the ring
// full, the rest dropped, counted by xdp_devmap_xmit and once per
// tun_xdp_xmit call in tx_dropped (native) or per frame in tx_dropped
// (generic). It returns their ledger, with the ring's frames in the device.
func (tp tap) xdpIntoFullRing(ctx context.Context, t *testing.T, r *rig, d driver, frames uint64) counters.Accounting {
	t.Helper()
	var stats counters.Link
	dropped := func() (uint64, error) {
		stats = tp.stats(t, r)
		if d.when() == atFlush {
			return r.totals(t).drops, nil
		}
		return stats.TxDropped, nil
	}
	drops, err := counters.WaitFor(ctx, 5*time.Second, dropped, func(n uint64) bool { return n >= frames-tapRing })
	assert.Check(t, err, "XDP frames dropped at the tap; tap %v", stats)
	xdp := counters.Accounting{Sent: frames, DeviceDrops: drops, InDevice: frames - min(drops, frames)}
	f := tp.flushes(t, r, d, int(frames))
	assert.Check(t, is.DeepEqual(f.got, f.want), "xdp_devmap_xmit events to the tap; %v", xdp)
	assert.Check(t, is.Equal(stats.TxDropped, f.txDropped), "tap tx_dropped after the XDP frames; %v; tap %v", xdp, stats)
	assert.Check(t, is.Equal(stats.TxPackets, uint64(0)), "tap tx_packets before the reader; tap %v", stats)
	return xdp
}

// tapFlushes are the xdp_devmap_xmit events to the tap as logged and as
// the kernel's rule wants them, and the tx_dropped that rule wants.
type tapFlushes struct {
	got, want []string
	txDropped uint64
}

// flushes reads the xdp_devmap_xmit events to the tap and derives what the
// kernel's rule wants of them for the polls the events show: each flush
// sends what the ring still has room for and drops the rest; tx_dropped
// counts the flushes that met the full ring. The generic path flushes
// nothing and drops every frame beyond the ring in tx_dropped.
func (tp tap) flushes(t *testing.T, r *rig, d driver, frames int) tapFlushes {
	t.Helper()
	var f tapFlushes
	for _, fl := range r.flushes(t) {
		f.got = append(f.got, fmt.Sprintf("sent=%d drops=%d", fl.Sent, fl.Drops))
	}
	if d.when() == atOnce {
		f.txDropped = uint64(frames - tapRing)
		return f
	}
	tr := load{frames: frames, keys: []uint32{0}}
	polls, err := explain(r.events(t), tr, map[uint32]entry{0: {ifindex(tp.link), 0}}, atFlush)
	assert.Check(t, err, "runs and flushes to the tap in polls of %v", polls)
	room := tapRing
	for _, e := range simulate(tr, map[uint32]entry{0: {ifindex(tp.link), 0}}, atFlush, polls) {
		if e.kind != 'F' {
			continue
		}
		sent := min(room, int(e.size))
		room -= sent
		f.want = append(f.want, fmt.Sprintf("sent=%d drops=%d", sent, int(e.size)-sent))
		if sent < int(e.size) {
			f.txDropped++
		}
	}
	return f
}

// queueState checks, by the frame just sent through the qdisc, whether the
// XDP frames left the queue awake (native: the qdisc hands it on and
// tun_net_xmit drops it, FULL_RING) or stopped (generic: it waits in the
// qdisc, seed 000's behaviour).
func (tp tap) queueState(t *testing.T, r *rig, d driver, q0 counters.Qdisc, txDropped uint64) {
	t.Helper()
	q, err := counters.ReadRootQdisc(r.env, tp.link.Attrs().Name)
	assert.NilError(t, err)
	stats := tp.stats(t, r)
	if d.when() == atFlush {
		assert.Check(t, is.Equal(q.Packets-q0.Packets, uint64(1)),
			"queue awake after the XDP frames: the qdisc hands the frame on; %v", q)
		assert.Check(t, is.Equal(stats.TxDropped-txDropped, uint64(1)), "tun_net_xmit drops it (FULL_RING); tap %v", stats)
		return
	}
	assert.Check(t, is.Equal(q.Qlen, uint64(1)), "queue stopped by the XDP frames: the frame waits in the qdisc; %v", q)
	assert.Check(t, is.Equal(stats.TxDropped-txDropped, uint64(0)), "tap %v", stats)
	if q.Qlen == 1 && stats.TxDropped == txDropped {
		observe.Shows(t, feature.Seed000Tun,
			"the ring the generic XDP frames filled stopped the queue: the next frame waited in the qdisc")
	}
}

// openTap creates tap0 in the rig's namespace with IFF_BACKPRESSURE, a ring
// of tapRing, a pfifo qdisc, up.
func openTap(t *testing.T, r *rig) tap {
	t.Helper()
	var dev *tuntap.Device
	assert.NilError(t, r.env.Do(func() (err error) {
		dev, err = tuntap.Open("tap0", tuntap.IFFTap|tuntap.IFFNoPI|tuntap.IFFBackpressure)
		return err
	}))
	t.Cleanup(func() { dev.Close() })
	flags, err := dev.Flags()
	assert.NilError(t, err)
	assert.Assert(t, flags&tuntap.IFFBackpressure != 0, "TUNGETIFF %#x: the kernel did not keep IFF_BACKPRESSURE", flags)
	link := r.env.Link(t, dev.Name)
	assert.NilError(t, r.env.Handle.LinkSetTxQLen(link, tapRing))
	r.env.Pfifo(t, link, 100)
	r.env.Up(t, link)
	return tap{dev: dev, link: r.env.Link(t, dev.Name)}
}

// sendOn sends one frame (stream 2) on l through its qdisc and returns
// how many the kernel took.
func sendOn(t *testing.T, r *rig, l netlink.Link) uint64 {
	t.Helper()
	var res traffic.Result
	assert.NilError(t, r.env.Do(func() error {
		s, err := traffic.NewSender(l.Attrs().Index, 2)
		if err != nil {
			return err
		}
		defer s.Close()
		res, err = s.Send(1)
		return err
	}))
	return res.Sent + res.Refused
}

// readTap reads want frames from the tap, each within readWait, then any
// more that come within readExtra, and returns the numbers of the XDP
// frames (stream 1, numbered by the main program) in the order read, and
// how many frames of stream 2 it read. Frames beyond want are more than
// the ring held; one that came later still shows in the ledgers.
func readTap(t *testing.T, tap *tuntap.Device, want int) ([]uint32, uint64) {
	t.Helper()
	var numbers []uint32
	var others uint64
	buf := make([]byte, 2048)
	for {
		wait := readExtra
		if len(numbers)+int(others) < want {
			wait = readWait
		}
		assert.NilError(t, tap.SetReadDeadline(time.Now().Add(wait)))
		n, err := tap.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return numbers, others
		}
		assert.NilError(t, err)
		stream, _, err := traffic.Parse(buf[:n])
		assert.NilError(t, err, "frame %d read from the tap", len(numbers)+int(others))
		if stream == 2 {
			others++
			continue
		}
		numbers = append(numbers, binary.LittleEndian.Uint32(buf[numberAt:]))
	}
}

// numberAt is where the main program writes the frame number (NUMBER_AT
// in bpf/devmap.c), in host (little-endian) byte order.
const numberAt = 30
