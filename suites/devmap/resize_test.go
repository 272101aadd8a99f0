package devmap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// Sizes of bpf/devmap.c's frame logs and resizing programs.
const (
	frameBytes = 72    // FRAME_BYTES: bytes of a frame the logs keep
	rxLog      = 128   // RX_LOG: frames each logging sink keeps
	vlanID     = 0x123 // VLAN_ID, the VID xdp_devmap_vlan tags with
	trailer    = 4     // TRAILER: bytes xdp_devmap_trim removes
)

// resizers are the devmap programs of TestResize, one per destination, and
// what each makes of a frame.
var resizers = []struct {
	tag  uint32
	prog func(*bpfObjects) *ebpf.Program
	out  func(in []byte) []byte
}{
	// An 802.1Q tag after the MAC addresses: 4 bytes more at the head.
	{progVLAN, func(o *bpfObjects) *ebpf.Program { return o.XdpDevmapVlan }, func(in []byte) []byte {
		return slices.Concat(in[:12], []byte{0x81, 0x00, vlanID >> 8, vlanID & 0xff}, in[12:])
	}},
	// trailer bytes fewer at the tail.
	{progTrim, func(o *bpfObjects) *ebpf.Program { return o.XdpDevmapTrim }, func(in []byte) []byte {
		return in[:len(in)-trailer]
	}},
	// A trailer "pad!" appended.
	{progPad, func(o *bpfObjects) *ebpf.Program { return o.XdpDevmapPad }, func(in []byte) []byte {
		return slices.Concat(in, []byte("pad!"))
	}},
}

// TestResize/HeaderPerDestination: devmap programs that change their
// frame's size, as a VLAN-tagging program does per destination: one pushes
// a header with bpf_xdp_adjust_head, one pops a trailer and one appends one
// with bpf_xdp_adjust_tail. Since seed 004 they run on the xdp_frame in the
// bulk queue at the flush (xdp_update_frame_from_buff carries the new
// bounds to ndo_xdp_xmit): every destination's receiver gets exactly its
// program's bytes, in order, and every frame is accounted for. Native path
// only: generic XDP has no bulk queue.
func TestResize(t *testing.T) {
	observe.Of(t, feature.Seed004)
	t.Run("HeaderPerDestination", func(t *testing.T) {
		for _, dv := range drivers {
			if dv.native {
				t.Run(dv.name, func(t *testing.T) {
					r, d := rigFor(t, dv)
					testResize(t, r, d)
				})
			}
		}
	})
}

func testResize(t *testing.T, r *rig, d driver) {
	ctx := withDeadline(t)
	const frames = 48
	m := r.devmap(t, false)
	entries := map[uint32]entry{}
	for i, rs := range resizers {
		r.setEntry(t, m, uint32(i), r.dst[i], rs.prog(&r.objs))
		entries[uint32(i)] = entry{ifindex(r.dst[i]), rs.tag}
		r.attachXDP(t, r.sink[i], r.objs.XdpSinkLog)
	}
	// The sinks get their own program back, so that the rig may serve the
	// next test (pool_test.go).
	t.Cleanup(func() {
		for _, s := range r.sink {
			// The rig then goes (keepable); a skipped test's last words
			// stay its reason.
			err := r.attachXDPFlags(s, r.objs.XdpSink, nl.XDP_FLAGS_DRV_MODE)
			if err != nil && !t.Skipped() {
				t.Logf("give %s its xdp_sink back: %v", s.Attrs().Name, err)
			}
		}
	})
	tr := load{frames: frames, keys: []uint32{0, 1, 2}}
	r.route(t, tr.keys...)
	r.setConfig(t, func(c *bpfConfig) { c.Keep = 1 })

	assert.NilError(t, d.push(ctx, frames, frames))
	l := settleLogged(ctx, t, r, frames)
	assert.Check(t, is.Equal(l.DeviceDrops, uint64(0)), "%v", l)
	want := make([][]string, len(r.sink))
	for n := range frames {
		i := int(tr.key(n))
		want[i] = append(want[i], hexFrame(resizers[i].out(r.original(t, uint32(n)))))
	}
	for i, s := range r.sink {
		assert.Check(t, is.DeepEqual(r.rxFrames(t, s), want[i]),
			"frames at %s, in order, from %s's program; %v", s.Attrs().Name, progName(resizers[i].tag), l)
	}
	judge(d, r.events(t), tr, entries, frames).report(t, "")
}

// settleLogged waits until every frame is at a logging sink or dropped at
// a flush, and returns the ledger:
//
//	sent (redirected) = received at the logging sinks + dropped at flush (xdp_devmap_xmit)
func settleLogged(ctx context.Context, t *testing.T, r *rig, sent uint64) ledger {
	t.Helper()
	get := func() (ledger, error) {
		l := ledger{flush: r.totals(t)}
		for _, s := range r.sink {
			l.Received += uint64(r.rxCount(t, s))
		}
		l.Sent, l.DeviceDrops = sent, l.flush.drops
		return l, nil
	}
	l, err := counters.WaitFor(ctx, 5*time.Second, get, func(l ledger) bool { return l.Balanced() })
	if err != nil {
		t.Errorf("frames unaccounted for: %v", err)
	}
	return l
}

// original is frame n as the main program redirected it (cfg.keep).
func (r *rig) original(t *testing.T, n uint32) []byte {
	t.Helper()
	var f bpfFrameBytes
	if err := r.objs.Originals.Lookup(n%r.objs.Originals.MaxEntries(), &f); err != nil {
		t.Fatalf("read originals[%d]: %v", n, err)
	}
	if f.Len > frameBytes {
		t.Fatalf("frame %d is longer than the %d bytes the log keeps", n, frameBytes)
	}
	return f.B[:f.Len]
}

// rxCount is how many frames the logging sink on l received.
func (r *rig) rxCount(t *testing.T, l netlink.Link) uint32 {
	t.Helper()
	var n uint32
	if err := r.objs.RxCount.Lookup(ifindex(l), &n); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Fatalf("read rx_count[%s]: %v", l.Attrs().Name, err)
	}
	return n
}

// rxFrames reads what the logging sink on l received, in order.
func (r *rig) rxFrames(t *testing.T, l netlink.Link) []string {
	t.Helper()
	n := r.rxCount(t, l)
	if n > rxLog {
		t.Fatalf("%s received %d frames, the log keeps %d", l.Attrs().Name, n, rxLog)
	}
	var out []string
	for slot := range n {
		var f bpfFrameBytes
		if err := r.objs.RxLog.Lookup(bpfRxKey{Ifindex: ifindex(l), Slot: slot}, &f); err != nil {
			t.Fatalf("read rx_log[%s/%d]: %v", l.Attrs().Name, slot, err)
		}
		if f.Len > frameBytes {
			out = append(out, fmt.Sprintf("longer than %d bytes: %x…", frameBytes, f.B))
			continue
		}
		out = append(out, hexFrame(f.B[:f.Len]))
	}
	return out
}

func hexFrame(b []byte) string { return fmt.Sprintf("%d bytes %x", len(b), b) }
