package devmap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
)

// tapRing is the tap's txqueuelen, the size of its ptr_ring: not a multiple
// of BulkSize, so one flush meets the full ring half-way.
const tapRing = 40

// TestRedirectToTap/RingFull: XDP redirects 64 frames through a devmap entry
// into a tap opened with IFF_BACKPRESSURE, with a pfifo qdisc, whose ring
// holds 40 and which nobody reads yet. IFF_BACKPRESSURE (seed 000) stops the
// queue only on the qdisc path, tun_net_xmit; what the tap does with frames
// beyond its ring, and where it counts them, depends on the path:
//
//   - native: bq_xmit_all hands each bulk of 16 to tun_xdp_xmit, which
//     tail-drops what the ring has no room for and never stops the queue.
//     xdp_devmap_xmit reports every dropped frame; tx_dropped grows by one
//     per tun_xdp_xmit call that met the full ring, not per frame.
//   - generic: generic_xdp_tx hands each frame to tun_net_xmit, which stops
//     the queue when the 40th frame fills the ring; generic_xdp_tx then
//     drops every later frame itself (tx_dropped and xdp:xdp_exception, one
//     per frame).
//
// A frame then sent through the qdisc shows the queue state: dropped by
// tun_net_xmit (FULL_RING, tx_dropped) when the queue is awake, kept in the
// qdisc when it is stopped, and delivered once the reader has consumed half
// the ring and woken it. The reader gets frames 0 to 39 in order.
func TestRedirectToTap(t *testing.T) {
	feature.Of(t, feature.Seed000Tun)
	t.Run("RingFull", func(t *testing.T) {
		eachDriver(t, true, func(t *testing.T, r *Rig, d Driver) {
			feature.Require(t, tuntap.ProbeBackpressure())
			ctx := withDeadline(t)
			const frames = 64
			tap, link := openTap(t, r)
			m := r.Map(t, false)
			r.SetEntry(t, m, 0, link, nil)
			r.Route(t, 0)
			r.Watch(t, link)
			before := r.LinkStats(t, link)

			assert.NilError(t, d.Push(ctx, frames, frames))
			// What the XDP frames did to the tap: the ring full, the rest
			// dropped, counted by xdp_devmap_xmit and once per call in
			// tx_dropped (native) or per frame in tx_dropped (generic).
			var stats counters.Link
			dropped := func() (uint64, error) {
				stats = r.LinkStats(t, link).Sub(before)
				if d.Path() == Native {
					return r.Totals(t).Drops, nil
				}
				return stats.TxDropped, nil
			}
			xdpDrops, err := counters.WaitFor(ctx, 5*time.Second, dropped, func(n uint64) bool { return n >= frames-tapRing })
			assert.Check(t, err, "XDP frames dropped at the tap; tap %v", stats)
			// The ledger is whole once the reader has drained the ring;
			// until then the ring holds what was not dropped.
			xdp := counters.Accounting{Sent: frames, DeviceDrops: xdpDrops, InDevice: frames - min(xdpDrops, frames)}
			var flushes, wantFlushes []string
			for _, f := range r.Flushes(t) {
				flushes = append(flushes, fmt.Sprintf("sent=%d drops=%d", f.Sent, f.Drops))
			}
			wantTxDropped := uint64(frames - tapRing)
			if d.Path() == Native {
				wantTxDropped = 0
				for room, i := tapRing, 0; i < frames/BulkSize; i++ {
					sent := min(room, BulkSize)
					room -= sent
					wantFlushes = append(wantFlushes, fmt.Sprintf("sent=%d drops=%d", sent, BulkSize-sent))
					if sent < BulkSize {
						wantTxDropped++
					}
				}
			}
			assert.Check(t, is.DeepEqual(flushes, wantFlushes), "xdp_devmap_xmit events to the tap; %v", xdp)
			assert.Check(t, is.Equal(stats.TxDropped, wantTxDropped), "tap tx_dropped after the XDP frames; %v; tap %v", xdp, stats)
			assert.Check(t, is.Equal(stats.TxPackets, uint64(0)), "tap tx_packets before the reader; tap %v", stats)

			// One frame through the qdisc tells whether the queue is
			// stopped.
			q0, err := counters.ReadRootQdisc(r.Env, link.Attrs().Name)
			assert.NilError(t, err)
			txDropped := stats.TxDropped
			probe := sendOn(t, r, link)
			q, err := counters.ReadRootQdisc(r.Env, link.Attrs().Name)
			assert.NilError(t, err)
			stats = r.LinkStats(t, link).Sub(before)
			if d.Path() == Native {
				assert.Check(t, is.Equal(q.Packets-q0.Packets, uint64(1)), "queue awake after the XDP frames: the qdisc hands the frame on; %v", q)
				assert.Check(t, is.Equal(stats.TxDropped-txDropped, uint64(1)), "tun_net_xmit drops it (FULL_RING); tap %v", stats)
			} else {
				assert.Check(t, is.Equal(q.Qlen, uint64(1)), "queue stopped by the XDP frames: the frame waits in the qdisc; %v", q)
				assert.Check(t, is.Equal(stats.TxDropped-txDropped, uint64(0)), "tap %v", stats)
				if q.Qlen == 1 && stats.TxDropped == txDropped {
					feature.Shows(t, feature.Seed000Tun, "the ring the generic XDP frames filled stopped the queue: the next frame waited in the qdisc")
				}
			}

			// The reader drains the ring (and, where the frame waited in
			// the qdisc, wakes the queue and gets it too).
			numbers, probes := readTap(t, tap)
			want := make([]uint32, tapRing)
			for i := range want {
				want[i] = uint32(i)
			}
			assert.Check(t, is.DeepEqual(numbers, want), "XDP frames read from the tap, by number")
			q, err = counters.ReadRootQdisc(r.Env, link.Attrs().Name)
			assert.NilError(t, err)
			stats = r.LinkStats(t, link).Sub(before)
			xdp.InDevice, xdp.Received = 0, uint64(len(numbers))
			assert.Check(t, xdp.Balanced(), "XDP frames: %v (device drops: native xdp_devmap_xmit, generic tap tx_dropped)", xdp)
			skb := counters.Accounting{Sent: probe, Received: probes, DeviceDrops: stats.TxDropped - txDropped, QdiscDrops: q.Drops - q0.Drops, QdiscBacklog: q.Qlen}
			assert.Check(t, skb.Balanced(), "frame through the qdisc: %v; %v", skb, q)
			wantProbes := uint64(0)
			if d.Path() == Generic {
				wantProbes = 1
			}
			assert.Check(t, is.Equal(probes, wantProbes), "frame through the qdisc read from the tap: %v", skb)
			assert.Check(t, is.Equal(stats.TxPackets, uint64(len(numbers))+probes), "tap tx_packets counts what the reader got; tap %v", stats)
		})
	})
}

// openTap creates tap0 in the rig's namespace with IFF_BACKPRESSURE, a ring
// of tapRing, a pfifo qdisc, up.
func openTap(t *testing.T, r *Rig) (*tuntap.Device, netlink.Link) {
	t.Helper()
	var tap *tuntap.Device
	assert.NilError(t, r.Env.Do(func() (err error) {
		tap, err = tuntap.Open("tap0", tuntap.IFFTap|tuntap.IFFNoPI|tuntap.IFFBackpressure)
		return err
	}))
	t.Cleanup(func() { tap.Close() })
	flags, err := tap.Flags()
	assert.NilError(t, err)
	assert.Assert(t, flags&tuntap.IFFBackpressure != 0, "TUNGETIFF %#x: the kernel did not keep IFF_BACKPRESSURE", flags)
	link := r.Env.Link(t, tap.Name)
	assert.NilError(t, r.Env.Handle.LinkSetTxQLen(link, tapRing))
	r.Env.Pfifo(t, link, 100)
	r.Env.Up(t, link)
	return tap, r.Env.Link(t, tap.Name)
}

// sendOn sends one frame (stream 2) on l through its qdisc and returns
// how many the kernel took.
func sendOn(t *testing.T, r *Rig, l netlink.Link) uint64 {
	t.Helper()
	var res traffic.Result
	assert.NilError(t, r.Env.Do(func() error {
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

// readTap reads the tap until it stays empty for a while and returns the
// numbers of the XDP frames (stream 1, numbered by the main program) in
// the order read, and how many frames of stream 2 it read.
func readTap(t *testing.T, tap *tuntap.Device) ([]uint32, uint64) {
	t.Helper()
	var numbers []uint32
	var others uint64
	buf := make([]byte, 2048)
	for {
		assert.NilError(t, tap.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
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
