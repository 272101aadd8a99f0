package vhost

import (
	"context"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpus"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/kmsg"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// rig is one tap in a fresh namespace with a userspace vhost-net guest
// attached to each of its queues.
type rig struct {
	tb     testing.TB
	e      *netenv.Env
	link   netlink.Link
	taps   []*tuntap.Device
	guests []*vhostnet.Net
	ring   int  // the tap's txqueuelen
	bufs   int  // receive buffers a frame takes (setup.bufsPerFrame)
	mrg    bool // the guests have mergeable receive buffers
	ctx    context.Context
	// waiting makes load's senders wait where the stopped queue pushes
	// back (traffic.NewWaitingSender) instead of never blocking.
	waiting bool
}

// newRig builds the rig in a namespace of its own.
func newRig(tb testing.TB, s setup) *rig {
	tb.Helper()
	return newRigIn(tb, netenv.New(tb), s)
}

// newRigIn builds the rig in the namespace e, which outlives it when e
// belongs to a parent test. Probes decide the skips: IFF_BACKPRESSURE
// through TUNGETFEATURES, vhost-net by opening /dev/vhost-net, fq_codel by
// creating it. The kernel must not log a splat or gain a splat taint while
// the test runs.
func newRigIn(tb testing.TB, e *netenv.Env, s setup) *rig {
	tb.Helper()
	r := &rig{
		tb: tb, e: e, ctx: testContext(tb),
		ring: ring, bufs: s.bufsPerFrame(),
		mrg: s.virtio.Features&vhostnet.FeatureMrgRxBuf != 0,
	}
	if s.ring != 0 {
		r.ring = s.ring
	}
	kmsg.Watch(tb)
	if s.backpressure {
		observe.Probe(tb, feature.IFFBackpressure, tuntap.ProbeBackpressure())
	}
	queues := max(s.queues, 1)
	r.openGuests(queues, s.virtio, s.workers)
	r.openTaps(queues, s.backpressure)
	r.configure(s.qdisc)
	if !s.lateBackend {
		for i := range r.guests {
			r.attach(i)
		}
	}
	return r
}

// testContext ends 5 s before tb's deadline, if it has one, so that a wait
// fails with its own message rather than the test binary's panic.
func testContext(tb testing.TB) context.Context {
	ctx := context.Background()
	if t, ok := tb.(*testing.T); ok {
		if d, ok := t.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, d.Add(-5*time.Second))
			tb.Cleanup(cancel)
		}
	}
	return ctx
}

// openGuests opens one guest per queue with the features of cfg, each from
// a thread on the CPU where workers puts its vhost worker.
func (r *rig) openGuests(queues int, cfg vhostnet.Config, workers placement) {
	r.tb.Helper()
	cfg.QueueSize = guestQueue
	all, err := cpus.Allowed()
	assert.NilError(r.tb, err)
	for i := range queues {
		var g *vhostnet.Net
		err := cpus.On(workers.cpu(all, i), func() (err error) {
			g, err = vhostnet.Open(cfg)
			return err
		})
		observe.Probe(r.tb, feature.VhostNet, err)
		r.guests = append(r.guests, g)
		r.tb.Cleanup(func() { g.Close() })
	}
}

// openTaps opens the tap's queues in r.e (IFF_TAP, IFF_NO_PI,
// IFF_VNET_HDR, and IFF_BACKPRESSURE when backpressure is set) and checks
// that TUNGETIFF reads the flag back as it was asked for.
func (r *rig) openTaps(queues int, backpressure bool) {
	tb := r.tb
	tb.Helper()
	flags := uint16(tuntap.IFFTap | tuntap.IFFNoPI | tuntap.IFFVnetHdr)
	if backpressure {
		flags |= tuntap.IFFBackpressure
	}
	if queues > 1 {
		flags |= tuntap.IFFMultiQueue
	}
	for range queues {
		var tap *tuntap.Device
		err := r.e.Do(func() (err error) {
			tap, err = tuntap.Open(tapName, flags)
			return err
		})
		assert.NilError(tb, err)
		tb.Cleanup(func() { tap.Close() })
		assert.NilError(tb, tap.SetVnetHdrSize(vhostnet.HdrLen))
		got, err := tap.Flags()
		assert.NilError(tb, err)
		assert.Equal(tb, got&tuntap.IFFBackpressure, flags&tuntap.IFFBackpressure,
			"TUNGETIFF flags %#x after TUNSETIFF %#x", got, flags)
		r.taps = append(r.taps, tap)
	}
}

// configure sizes the tap's ring, installs the root qdisc (one of the
// qdisc* constants) and sets the tap up, in r.e.
func (r *rig) configure(qdisc string) {
	tb, e := r.tb, r.e
	tb.Helper()
	l := e.Link(tb, tapName)
	assert.NilError(tb, e.Handle.LinkSetTxQLen(l, r.ring))
	switch qdisc {
	case qdiscPfifo:
		e.Pfifo(tb, l, bigFIFO)
	case qdiscShort:
		e.Pfifo(tb, l, shortFIFO)
	case qdiscMqPfifo:
		e.MqPfifo(tb, l, len(r.taps), bigFIFO)
	case qdiscMqShort:
		e.MqPfifo(tb, l, len(r.taps), shortFIFO)
	case qdiscFqCodel:
		observe.Probe(tb, feature.FqCodel, e.FqCodel(l))
	}
	e.Up(tb, l)
	r.link = e.Link(tb, tapName)
}

// attach makes tap queue i the backend of guest i.
func (r *rig) attach(i int) {
	r.tb.Helper()
	assert.NilError(r.tb, r.guests[i].SetBackend(r.taps[i]))
}

// sender opens an AF_PACKET sender on the tap for stream.
func (r *rig) sender(stream uint32) *traffic.Sender {
	r.tb.Helper()
	var s *traffic.Sender
	err := r.e.Do(func() (err error) {
		if r.waiting {
			s, err = traffic.NewWaitingSender(r.link.Attrs().Index, stream, wait)
		} else {
			s, err = traffic.NewSender(r.link.Attrs().Index, stream)
		}
		return err
	})
	assert.NilError(r.tb, err)
	r.tb.Cleanup(func() { s.Close() })
	return s
}

// steerByStream attaches a steering program to the tap that sends stream s
// to queue s mod queues: it returns the low byte of the frame's stream
// field (offset 21), and tun takes it modulo the number of queues.
func (r *rig) steerByStream() {
	r.tb.Helper()
	defer profile.Start(r.tb, profile.Setup).End()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SocketFilter,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.LoadAbs(21, asm.Byte),
			asm.Return(),
		},
	})
	assert.NilError(r.tb, err, "load the steering program")
	defer prog.Close()
	assert.NilError(r.tb, r.taps[0].SetSteeringEBPF(prog.FD()))
}

// freed starts counting the frames freed with kfree_skb on the rig's tap.
func (r *rig) freed() *dropmon.Freed {
	r.tb.Helper()
	return dropmon.WatchFreed(r.tb, r.e.NS, r.link.Attrs().Index, traffic.EtherType)
}

// linkGone checks that the tap is no longer in r.e.
func (r *rig) linkGone() {
	r.tb.Helper()
	_, err := r.e.Handle.LinkByName(tapName)
	assert.Check(r.tb, err != nil, "%s is still there after the teardown", tapName)
}
