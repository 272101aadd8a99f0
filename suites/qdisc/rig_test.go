package qdisc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/kmsg"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

const (
	// tapRing is the tap's txqueuelen, the size of its ptr_ring: small, so
	// that the queue stops and wakes often.
	tapRing = 64
	// fifoLimit is the pfifo limit in packets.
	fifoLimit = 256
	// settleTimeout bounds the wait for the backlog to drain once the
	// senders stopped (TCG guests are slow).
	settleTimeout = 15 * time.Second
	// drainStill is how long a draining backlog may stand still, nothing
	// delivered, dropped or dequeued, before the drain counts as stuck
	// (counters.WaitMoving): a stranded backlog fails at once instead of
	// at settleTimeout.
	drainStill = 3 * time.Second
	// consumerSpin is the busy loop per frame of the veth consumer, which
	// makes it slower than the senders so that its ring fills.
	consumerSpin = 20000
)

// rig is one path under test: the device the senders use, with the root
// qdisc under test, and the consumer that drains it.
type rig struct {
	e   *netenv.Env
	dev netlink.Link
	// peer is the veth end whose rx_dropped belongs to the device's drops
	// (frames veth lost before the consumer saw them); "" for a tap.
	peer string
	// delivered returns how many frames of streams [lo, hi) the consumer got.
	delivered func(lo, hi uint32) (uint64, error)
	// burst counts QDISC_BURST_DROP frees of the suite's frames; nil on
	// kernels without them.
	burst func() (uint64, error)
}

// path builds a rig in e.
type path struct {
	name  string
	build func(tb testing.TB, e *netenv.Env) *rig
}

// rig builds p in a namespace of its own, with a kind root qdisc.
func (p path) rig(tb testing.TB, kind string) *rig {
	tb.Helper()
	kmsg.Watch(tb)
	r := p.build(tb, netenv.New(tb))
	r.setQdisc(tb, kind)
	return r
}

var (
	vethPath = path{"veth_xdp", func(tb testing.TB, e *netenv.Env) *rig { return vethXDP(tb, e, consumerSpin) }}
	// vethFast drains as fast as XDP can: the qdisc, not the consumer, is
	// the bottleneck, and its lock the most contended.
	vethFast = path{"veth_xdp_fast", func(tb testing.TB, e *netenv.Env) *rig { return vethXDP(tb, e, 0) }}
	tapPath  = path{"tap_backpressure", func(tb testing.TB, e *netenv.Env) *rig {
		observe.Probe(tb, feature.IFFBackpressure, tuntap.ProbeBackpressure())
		// The tap's stop and wake are seed 000's: a qdisc test over it
		// fails when they do.
		observe.LeansOn(tb, feature.Seed000Tun, "a tap with IFF_BACKPRESSURE and a reader")
		return tapReader(tb, e, tuntap.IFFBackpressure, tapRing)
	}}
	// paths are the devices every no-stall test runs on.
	paths = []path{vethPath, tapPath}
)

// vethXDP builds xq0 <-> xq1 with the stream counter as XDP on xq1: veth
// then forwards through xq1's NAPI ring (256 entries), and stops xq0's txq
// when that ring is full where the kernel has qdisc backpressure. xq1's
// NAPI runs threaded, so the ring fills whenever the consumer thread is
// not scheduled, and veth_poll wakes xq0's queue from that thread. spin is
// the consumer's busy loop per frame.
func vethXDP(tb testing.TB, e *netenv.Env, spin int32) *rig {
	tb.Helper()
	a, b := e.Veth(tb, "xq0", "xq1", 0)
	m, err := perCPUCounters("xc_streams", maxStream+1)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	p, err := streamCounterXDP(m, spin)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	var l link.Link
	err = e.Do(func() (err error) {
		l, err = link.AttachXDP(link.XDPOptions{Program: p, Interface: b.Attrs().Index, Flags: link.XDPDriverMode})
		return err
	})
	if err != nil {
		tb.Fatalf("attach XDP in driver mode to veth %s: %v (veth has native XDP since 4.19)", b.Attrs().Name, err)
	}
	tb.Cleanup(func() { l.Close() })
	switch err := e.ThreadedNAPI(b.Attrs().Name); {
	case errors.Is(err, netenv.ErrNoThreadedNAPI):
		tb.Logf("consumer NAPI stays in softirq: %v", err)
	case err != nil:
		tb.Fatalf("threaded NAPI on %s: %v", b.Attrs().Name, err)
	}
	r := &rig{e: e, dev: a, peer: b.Attrs().Name, delivered: func(lo, hi uint32) (uint64, error) {
		return sumStreams(m, lo, hi)
	}}
	r.countBurstDrops(tb)
	return r
}

func sumStreams(m *ebpf.Map, lo, hi uint32) (uint64, error) {
	var sum uint64
	for s := lo; s < hi; s++ {
		v, err := sumCounter(m, s)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// tapReader builds tap xq0 with flags (IFF_TAP|IFF_NO_PI added), a
// txqueuelen (ring size) of ring, and a reader that drains it until the
// test ends.
func tapReader(tb testing.TB, e *netenv.Env, flags uint16, ring int) *rig {
	tb.Helper()
	flags |= tuntap.IFFTap | tuntap.IFFNoPI
	var tap *tuntap.Device
	if err := e.Do(func() (err error) { tap, err = tuntap.Open("xq0", flags); return err }); err != nil {
		tb.Fatalf("open tap: %v", err)
	}
	got, err := tap.Flags()
	if err != nil {
		tb.Fatal(err)
	}
	if got&flags != flags {
		tb.Fatalf("TUNGETIFF flags %#x lack requested %#x: the kernel dropped a flag it claimed to support", got, flags)
	}
	l := e.Link(tb, "xq0")
	if err := e.Handle.LinkSetTxQLen(l, ring); err != nil {
		tb.Fatalf("set txqueuelen of xq0 to %d: %v", ring, err)
	}
	e.Up(tb, l)

	var seen [maxStream + 1]atomic.Uint64
	var readErr atomic.Pointer[error]
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := traffic.NewReader(tap.File)
		prev := map[uint32]uint64{}
		for ctx.Err() == nil {
			// Few frames per call: the counts are published between
			// calls, and a slow guest reads only a few frames per ms.
			if _, err := r.Read(8, 20*time.Millisecond); err != nil {
				readErr.Store(&err)
				return
			}
			for s, v := range r.Seen() {
				seen[min(s, maxStream)].Add(v - prev[s])
				prev[s] = v
			}
		}
	}()
	tb.Cleanup(func() {
		cancel()
		wg.Wait()
		tap.Close()
	})
	r := &rig{e: e, dev: e.Link(tb, "xq0"), delivered: func(lo, hi uint32) (uint64, error) {
		if p := readErr.Load(); p != nil {
			return 0, fmt.Errorf("tap reader stopped: %w", *p)
		}
		var sum uint64
		for s := lo; s < hi; s++ {
			sum += seen[s].Load()
		}
		return sum, nil
	}}
	r.countBurstDrops(tb)
	return r
}

// countBurstDrops counts the frames of the suite's ethertype that
// __dev_xmit_skb() frees with QDISC_BURST_DROP (dropmon.WatchBurst); a
// kernel without the reason has no such drop and no counter.
func (r *rig) countBurstDrops(tb testing.TB) {
	tb.Helper()
	count, err := dropmon.WatchBurst(tb, r.e.NS, r.dev.Attrs().Index, traffic.EtherType)
	if err == nil {
		r.burst = count
	}
}

// qdiscs are the locked root qdiscs under test.
var qdiscs = []string{"pfifo", "fq_codel"}

// setQdisc makes kind the root qdisc of the rig's device. fq_codel may be
// missing (this machine's kernel has none); it is probed by creating it.
func (r *rig) setQdisc(tb testing.TB, kind string) {
	tb.Helper()
	switch kind {
	case "pfifo":
		r.e.Pfifo(tb, r.dev, fifoLimit)
	case "bfifo":
		r.bfifo(tb, fifoLimit*traffic.FrameLen)
	case "fq_codel":
		observe.Probe(tb, feature.FqCodel, r.e.FqCodel(r.dev))
	default:
		tb.Fatalf("unknown qdisc %q", kind)
	}
}

// state is every counter of a rig at one moment.
type state struct {
	q         counters.Qdisc
	dev, peer counters.Link
	// burst counts frames dropped before the qdisc
	// (SKB_DROP_REASON_QDISC_BURST_DROP); the qdisc's drops miss them.
	burst uint64
}

func (r *rig) state() (state, error) {
	var s state
	var err error
	if r.burst != nil {
		if s.burst, err = r.burst(); err != nil {
			return s, err
		}
	}
	if s.q, err = counters.ReadRootQdisc(r.e, r.dev.Attrs().Name); err != nil {
		return s, err
	}
	if s.dev, err = counters.ReadLink(r.e.Handle, r.dev.Attrs().Name); err != nil {
		return s, err
	}
	if r.peer != "" {
		if s.peer, err = counters.ReadLink(r.e.Handle, r.peer); err != nil {
			return s, err
		}
	}
	return s, nil
}

// ledger is the accounting of one load plus the raw counters behind it,
// what a failure prints.
type ledger struct {
	a   counters.Accounting
	now state
}

func (s ledger) String() string {
	return fmt.Sprintf("%v [qdisc %v] [dev %v] [peer %v]", s.a, s.now.q, s.now.dev, s.now.peer)
}

// account states the ledger of frames of streams [lo, hi), handed frames of
// which went to the kernel since base was taken: sent = delivered + device
// drops (tx_dropped, and the veth peer's rx_dropped) + qdisc drops + qdisc
// backlog + uncounted (the burst drops of its defer_list, 7.2+). What
// is still in the device's ring shows up as a shortfall until the consumer
// has it.
func (r *rig) account(handed uint64, lo, hi uint32, base state) (ledger, error) {
	now, err := r.state()
	if err != nil {
		return ledger{}, err
	}
	got, err := r.delivered(lo, hi)
	if err != nil {
		return ledger{}, err
	}
	a := counters.Accounting{
		Sent:         handed,
		Received:     got,
		DeviceDrops:  now.dev.Sub(base.dev).TxDropped + now.peer.Sub(base.peer).RxDropped,
		QdiscDrops:   now.q.Drops - base.q.Drops,
		QdiscBacklog: now.q.Qlen,
	}
	if r.burst != nil {
		a = dropmon.BookBurst(a, now.burst-base.burst)
	}
	return ledger{a: a, now: now}, nil
}

// settle waits until the qdisc is empty and every frame is accounted for,
// and returns the last state; the error carries it on timeout, or once
// nothing moved for drainStill.
func (r *rig) settle(ctx context.Context, handed uint64, lo, hi uint32, base state) (ledger, error) {
	return counters.WaitMoving(ctx, settleTimeout, drainStill, func() (ledger, error) {
		return r.account(handed, lo, hi, base)
	}, func(s ledger) bool { return s.a.QdiscBacklog == 0 && s.a.Balanced() })
}
