package tun

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/kmsg"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

const (
	tapName = "xtap0"
	// waitLimit bounds every wait for the kernel to reach a state; TCG
	// guests on two shared cores are slow, hence the margin.
	waitLimit = 10 * time.Second
	// holdFor is how long a state must stay unchanged to count as
	// "nothing moved" (a stopped queue, no wake): a wrong wake's frames
	// move within a NET_TX softirq's latency, which is well under it even
	// on PREEMPT_RT (docs/design/suite-time.md).
	holdFor = 100 * time.Millisecond
	// quiet is how long a drain waits for one more frame before it
	// concludes the ring is empty, where the counters cannot tell.
	quiet = 100 * time.Millisecond
	// settleProbe is how long a drain waits for one more frame before it
	// asks the counters whether any can still come: frames in the ring
	// come back to back.
	settleProbe = 10 * time.Millisecond
)

// tapOpts describes a test's tap.
type tapOpts struct {
	ring  int    // txqueuelen, the ptr_ring size R
	limit uint32 // pfifo limit P of the root qdisc; 0 means noqueue
	// root, when set, replaces the pfifo/noqueue choice: "default" keeps
	// the qdisc the kernel attached, "fq_codel" installs fq_codel.
	root string
	// kind is the device's TUNSETIFF kind: IFF_TAP or IFF_TUN, with
	// IFF_NO_PI or without; 0 means IFF_TAP|IFF_NO_PI.
	kind  uint16
	flags uint16 // TUNSETIFF flags beyond the kind
	// loose asks for flags without requiring the kernel to keep them:
	// the classifier observes what a kernel does with a flag it ignores.
	loose bool
	// blocking opens the queue file with tuntap.OpenBlocking, for
	// traffic.Reader.ReadToEnd.
	blocking bool
}

func (o tapOpts) backpressure() bool { return o.flags&tuntap.IFFBackpressure != 0 }

// stock is o without IFF_BACKPRESSURE: what a kernel without seed 000
// makes of o.
func (o tapOpts) stock() tapOpts {
	o.flags &^= tuntap.IFFBackpressure
	return o
}

// tapRig is one test's namespace with its tap.
type tapRig struct {
	e       *netenv.Env
	dev     *tuntap.Device
	ifindex int
	opts    tapOpts
}

// requireBackpressure skips, naming the probe, when TUNGETFEATURES lacks
// IFF_BACKPRESSURE.
func requireBackpressure(t testing.TB) {
	t.Helper()
	observe.Probe(t, feature.IFFBackpressure, tuntap.ProbeBackpressure())
}

// newTap builds the namespace, opens the tap with o.flags (checking that
// every flag asked for was kept), sizes its ring, sets it up and installs
// the root qdisc. The first queue file is rig.dev.
func newTap(t testing.TB, o tapOpts) *tapRig {
	t.Helper()
	return newTapIn(t, netenv.New(t), o)
}

// newTapIn is newTap in the namespace e, which outlives the tap when e
// belongs to a parent test.
func newTapIn(t testing.TB, e *netenv.Env, o tapOpts) *tapRig {
	t.Helper()
	if o.backpressure() && !o.loose {
		requireBackpressure(t)
	}
	kmsg.Watch(t)
	rig := &tapRig{e: e, opts: o}
	rig.dev = rig.open(t, o.flags, !o.loose)
	rig.setUp(t)
	return rig
}

// setUp finds the tap in rig.e, sizes its ring, sets it up and installs
// the root qdisc of rig.opts.
func (rig *tapRig) setUp(t testing.TB) {
	t.Helper()
	e, o := rig.e, rig.opts
	l := e.Link(t, tapName)
	rig.ifindex = l.Attrs().Index
	assert.NilError(t, e.Handle.LinkSetTxQLen(l, o.ring), "set txqueuelen of %s to %d", tapName, o.ring)
	e.Up(t, l)
	switch {
	case o.root == "default":
	case o.root == "fq_codel":
		observe.Probe(t, feature.FqCodel, rig.e.FqCodel(l))
	case o.limit == 0:
		e.Noqueue(t, l)
	default:
		e.Pfifo(t, l, o.limit)
	}
}

// open attaches one more file to the tap with flags (TUNSETIFF) and, when
// strict, checks the kernel kept them (older kernels drop
// IFF_BACKPRESSURE silently).
func (rig *tapRig) open(t testing.TB, flags uint16, strict bool) *tuntap.Device {
	t.Helper()
	kind := rig.opts.kind
	if kind == 0 {
		kind = tuntap.IFFTap | tuntap.IFFNoPI
	}
	open := tuntap.Open
	if rig.opts.blocking {
		open = tuntap.OpenBlocking
	}
	var d *tuntap.Device
	assert.NilError(t, rig.e.Do(func() (err error) {
		d, err = open(tapName, kind|flags)
		return err
	}))
	t.Cleanup(func() { d.Close() })
	if !strict {
		return d
	}
	got, err := d.Flags()
	assert.NilError(t, err)
	want := flags &^ (tuntap.IFFAttachQueue | tuntap.IFFDetachQueue)
	assert.Equal(t, got&want, want, "TUNGETIFF flags %#x: the kernel did not keep %#x", got, want&^got)
	return d
}

func (rig *tapRig) link(t testing.TB) netlink.Link {
	t.Helper()
	return rig.e.Link(t, tapName)
}

// sender opens an AF_PACKET sender in the namespace; stream tags its frames.
func (rig *tapRig) sender(t testing.TB, stream uint32) *traffic.Sender {
	t.Helper()
	var s *traffic.Sender
	assert.NilError(t, rig.e.Do(func() (err error) {
		s, err = traffic.NewSender(rig.ifindex, stream)
		return err
	}))
	t.Cleanup(func() { s.Close() })
	return s
}

// waitingSender opens a sender in the namespace that waits, up to
// waitLimit, where the stopped queue pushes back (traffic.NewWaitingSender).
func (rig *tapRig) waitingSender(t testing.TB, stream uint32) *traffic.Sender {
	t.Helper()
	var s *traffic.Sender
	assert.NilError(t, rig.e.Do(func() (err error) {
		s, err = traffic.NewWaitingSender(rig.ifindex, stream, waitLimit)
		return err
	}))
	t.Cleanup(func() { s.Close() })
	return s
}

// send sends n frames, failing on errors other than ENOBUFS (Refused).
func send(t testing.TB, s *traffic.Sender, n int) traffic.Result {
	t.Helper()
	r, err := s.Send(n)
	assert.NilError(t, err, "after %d sent, %d refused", r.Sent, r.Refused)
	return r
}

// state is one sample of the tap's counters.
type state struct {
	Link counters.Link
	Q    counters.Qdisc // zero when the root qdisc is noqueue
}

func (s state) String() string {
	if s.Q.Kind == "" {
		return fmt.Sprintf("%s; noqueue", s.Link)
	}
	return fmt.Sprintf("%s; %s", s.Link, s.Q)
}

// settled tells whether no frame can reach the ring any more, the senders
// having returned: the qdisc holds none, and every frame it handed tun
// (counted as it left, before tun_net_xmit) was read (tx_packets) or
// dropped by tun (tx_dropped). Without a qdisc a send puts its frames in
// the ring, or drops them, before it returns.
func (s state) settled() bool {
	if s.Q.Kind == "" {
		return true
	}
	return s.Q.Qlen == 0 && s.Q.Packets == s.Link.TxPackets+s.Link.TxDropped
}

func (rig *tapRig) state() (state, error) {
	var s state
	var err error
	if s.Link, err = counters.ReadLink(rig.e.Handle, tapName); err != nil {
		return s, err
	}
	if rig.opts.limit == 0 && rig.opts.root == "" {
		return s, nil
	}
	s.Q, err = counters.ReadRootQdisc(rig.e, tapName)
	return s, err
}

// waitState waits until ok accepts the tap's state.
func (rig *tapRig) waitState(t testing.TB, what string, ok func(state) bool) state {
	t.Helper()
	s, err := counters.WaitFor(context.Background(), waitLimit, rig.state, ok)
	assert.NilError(t, err, "waiting for %s", what)
	return s
}

// holdState checks that ok keeps accepting the state for holdFor.
func (rig *tapRig) holdState(t testing.TB, what string, ok func(state) bool) state {
	t.Helper()
	return counters.Holds(t, holdFor, what, rig.state, ok)
}

// waitOperUp waits until the tap's carrier is back (operstate up) after
// its last queue file closed, and its qdiscs are active again: linkwatch
// sets the operstate and activates the qdiscs under RTNL, and reading the
// qdisc takes RTNL, so a read after the operstate has turned comes after
// both. Frames sent earlier could meet the noop qdisc of a carrier-less
// device.
func (rig *tapRig) waitOperUp(t testing.TB) {
	t.Helper()
	_, err := counters.WaitFor(context.Background(), waitLimit, func() (netlink.LinkOperState, error) {
		l, err := rig.e.Handle.LinkByName(tapName)
		if err != nil {
			return 0, err
		}
		return l.Attrs().OperState, nil
	}, func(s netlink.LinkOperState) bool { return s == netlink.OperUp })
	assert.NilError(t, err, "waiting for %s's carrier after a queue file attached again", tapName)
	_, err = rig.state()
	assert.NilError(t, err)
}

func isENETDOWN(err error) bool { return errors.Is(err, unix.ENETDOWN) }
