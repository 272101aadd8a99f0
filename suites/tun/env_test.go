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
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/kmsg"
	"github.com/xmitcheck/xmitcheck/internal/netenv"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
)

const (
	tapName = "xtap0"
	// waitLimit bounds every wait for the kernel to reach a state; TCG
	// guests on two shared cores are slow, hence the margin.
	waitLimit = 10 * time.Second
	// holdFor is how long a state must stay unchanged to count as
	// "nothing moved" (a stopped queue, no wake). Softirq latency is
	// microseconds; 200 ms is three orders of magnitude more.
	holdFor = 200 * time.Millisecond
	// quiet is how long a drain waits for one more frame before it
	// concludes the ring is empty.
	quiet = 100 * time.Millisecond
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

// tapRig is one test's namespace with its tap.
type tapRig struct {
	e       *netenv.Env
	dev     *tuntap.Device
	ifindex int
	opts    tapOpts
}

// requireBackpressure skips (or, on a kernel expected to have it, fails)
// when TUNGETFEATURES lacks IFF_BACKPRESSURE.
func requireBackpressure(t testing.TB) {
	t.Helper()
	feature.Require(t, tuntap.ProbeBackpressure())
}

// newTap builds the namespace, opens the tap with o.flags (checking that
// every flag asked for was kept), sizes its ring, sets it up and installs
// the root qdisc. The first queue file is te.dev.
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
	te := &tapRig{e: e, opts: o}
	te.dev = te.open(t, o.flags, !o.loose)
	te.setUp(t)
	return te
}

// setUp finds the tap in te.e, sizes its ring, sets it up and installs the
// root qdisc of te.opts.
func (te *tapRig) setUp(t testing.TB) {
	t.Helper()
	e, o := te.e, te.opts
	l := e.Link(t, tapName)
	te.ifindex = l.Attrs().Index
	assert.NilError(t, e.Handle.LinkSetTxQLen(l, o.ring), "set txqueuelen of %s to %d", tapName, o.ring)
	e.Up(t, l)
	switch {
	case o.root == "default":
	case o.root == "fq_codel":
		feature.Require(t, te.e.FqCodel(l))
	case o.limit == 0:
		e.Noqueue(t, l)
	default:
		e.Pfifo(t, l, o.limit)
	}
}

// open attaches one more file to the tap with flags and, when strict,
// checks the kernel kept them (older kernels drop IFF_BACKPRESSURE silently).
func (te *tapRig) open(t testing.TB, flags uint16, strict bool) *tuntap.Device {
	t.Helper()
	kind := te.opts.kind
	if kind == 0 {
		kind = tuntap.IFFTap | tuntap.IFFNoPI
	}
	open := tuntap.Open
	if te.opts.blocking {
		open = tuntap.OpenBlocking
	}
	var d *tuntap.Device
	assert.NilError(t, te.e.Do(func() (err error) {
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

func (te *tapRig) link(t testing.TB) netlink.Link {
	t.Helper()
	return te.e.Link(t, tapName)
}

// sender opens an AF_PACKET sender in the namespace; stream tags its frames.
func (te *tapRig) sender(t testing.TB, stream uint32) *traffic.Sender {
	t.Helper()
	var s *traffic.Sender
	assert.NilError(t, te.e.Do(func() (err error) {
		s, err = traffic.NewSender(te.ifindex, stream)
		return err
	}))
	t.Cleanup(func() { s.Close() })
	return s
}

// send sends n frames and returns Sent+Refused, failing on other errors.
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

func (te *tapRig) state() (state, error) {
	var s state
	var err error
	if s.Link, err = counters.ReadLink(te.e.Handle, tapName); err != nil {
		return s, err
	}
	if te.opts.limit == 0 && te.opts.root == "" {
		return s, nil
	}
	s.Q, err = counters.ReadRootQdisc(te.e, tapName)
	return s, err
}

// waitState waits until ok accepts the tap's state.
func (te *tapRig) waitState(t testing.TB, what string, ok func(state) bool) state {
	t.Helper()
	s, err := counters.WaitFor(context.Background(), waitLimit, te.state, ok)
	assert.NilError(t, err, "waiting for %s", what)
	return s
}

// holdState checks that ok keeps accepting the state for holdFor.
func (te *tapRig) holdState(t testing.TB, what string, ok func(state) bool) state {
	t.Helper()
	return counters.Holds(t, holdFor, what, te.state, ok)
}

// fate is where frames sent to a tap with an idle reader end up.
type fate struct {
	ring, backlog, qdiscDrops, tunDrops int
}

// idleFate models both behaviours: with backpressure (flag on and a qdisc)
// the R-th frame fills the ring and stops the queue, the qdisc holds the
// next P and drops the rest; otherwise the ring takes R and tun drops the
// rest (tail-drop, FULL_RING).
func idleFate(o tapOpts, n int) fate {
	f := fate{ring: min(n, o.ring)}
	rest := n - f.ring
	if o.backpressure() && o.limit > 0 {
		f.backlog = min(rest, int(o.limit))
		f.qdiscDrops = rest - f.backlog
		return f
	}
	f.tunDrops = rest
	return f
}

// account builds the ledger from what was sent, read, and the counters.
func account(sent uint64, read int, s state, inRing int) counters.Accounting {
	return counters.Accounting{
		Sent:         sent,
		Received:     uint64(read),
		DeviceDrops:  s.Link.TxDropped,
		QdiscDrops:   s.Q.Drops,
		QdiscBacklog: s.Q.Qlen,
		InDevice:     uint64(inRing),
	}
}

// queueReader reads a queue file: a *traffic.Reader, or an entryReader
// where each read carries more than a frame. Both count what they read in
// ring entries, one read each.
type queueReader interface {
	Read(n int, wait time.Duration) (int, error)
	Drain(quiet time.Duration) (int, error)
}

// drain reads from d until no frame comes for quiet, failing on anything
// that is not an xmitcheck frame.
func drain(t testing.TB, r queueReader) int {
	t.Helper()
	n, err := r.Drain(quiet)
	assert.NilError(t, err, "reading the tap after %d frames", n)
	return n
}

// readExactly reads n frames, each within waitLimit.
func readExactly(t testing.TB, r queueReader, n int) {
	t.Helper()
	got, err := r.Read(n, waitLimit)
	assert.NilError(t, err)
	assert.Equal(t, got, n, "read %d of %d frames before the ring stayed empty for %v", got, n, waitLimit)
}

func isENETDOWN(err error) bool { return errors.Is(err, unix.ENETDOWN) }

// fill makes a tap with o, sends it n frames from sender 1 while nobody
// reads, and waits until they reach idleFate's fate: the start of most tun
// tests. It returns the tap, the sender, what it sent, the fate and the
// state that showed it.
func fill(t testing.TB, o tapOpts, n int) (*tapRig, *traffic.Sender, traffic.Result, fate, state) {
	t.Helper()
	f := idleFate(o, n)
	te := newTap(t, o)
	s := te.sender(t, 1)
	res := send(t, s, n)
	return te, s, res, f, te.stopped(t, state{}, f)
}

// stopped waits for frames sent to an idle reader to reach their fate f:
// the qdisc holds f.backlog and tun dropped f.tunDrops more than in base.
// With backpressure it then checks the queue stays stopped (the backlog
// does not move).
func (te *tapRig) stopped(t testing.TB, base state, f fate) state {
	t.Helper()
	ok := func(s state) bool {
		return s.Q.Qlen == uint64(f.backlog) && s.Link.TxDropped == base.Link.TxDropped+uint64(f.tunDrops)
	}
	te.waitState(t, fmt.Sprintf("ring full: qdisc backlog %d, tun drops %d", f.backlog, f.tunDrops), ok)
	if f.backlog == 0 {
		return te.waitState(t, "settled", ok)
	}
	return te.holdState(t, "stopped queue", ok)
}

// span is the sequence numbers [from, to) a sender used for its stream.
type span struct{ from, to uint64 }

// numbered is a sender of sequence-numbered frames (traffic.Sender,
// gsoSender).
type numbered interface {
	Stream() uint32
	Next() uint64
}

// sentBy is what each sender numbered, from its first frame on.
func sentBy[S numbered](ss ...S) map[uint32]span {
	m := map[uint32]span{}
	for _, s := range ss {
		m[s.Stream()] = span{0, s.Next()}
	}
	return m
}

// checkStreams holds what the readers read to what the senders numbered
// and to the ledger l: every stream arrived in order with no frame twice,
// only with numbers its sender used, and the frames missing from the
// streams are exactly the ledger's frames not received (dropped by tun or
// the qdisc, still queued, freed uncounted). Several readers may share a
// stream (the queues of one tap, a probe beside a reader); each must see
// it in order.
func checkStreams(t testing.TB, l counters.Accounting, sent map[uint32]span, readers ...*traffic.Reader) {
	t.Helper()
	var numbered, missing uint64
	for stream, sp := range sent {
		numbered += sp.to - sp.from
		m := sp.to - sp.from
		for _, r := range readers {
			got, err := r.Missing(stream, sp.from, sp.to)
			assert.Check(t, err)
			m -= sp.to - sp.from - got
		}
		missing += m
	}
	for i, r := range readers {
		assert.Check(t, r.InOrder(), "reader %d; %v", i, l)
		for stream := range r.Streams {
			_, ok := sent[stream]
			assert.Check(t, ok, "reader %d read stream %d, which no sender of the test sent", i, stream)
		}
	}
	assert.Check(t, is.Equal(numbered, l.Sent), "frames the senders numbered, against the ledger's sent; %v", l)
	notReceived := l.DeviceDrops + l.QdiscDrops + l.QdiscBacklog + l.InDevice + l.Uncounted
	assert.Check(t, is.Equal(missing, notReceived), "frames missing from the streams, against the ledger's drops, queued and uncounted; %v", l)
}

// readFirst reports whether r read exactly the first n frames of stream
// (numbers 0 to n-1) and nothing else of it: what tail-drop, a qdisc's
// tail-drop and a stopped queue all leave for an idle reader.
func readFirst(r *traffic.Reader, stream uint32, n int) bool {
	s := r.Streams[stream]
	if n == 0 {
		return s == nil
	}
	return s != nil && *s == traffic.Stream{Frames: uint64(n), First: 0, Last: uint64(n) - 1, InOrder: uint64(n)}
}

// checkFirst asserts readFirst.
func checkFirst(t testing.TB, r *traffic.Reader, stream uint32, n int) {
	t.Helper()
	assert.Check(t, readFirst(r, stream, n), "stream %d: want exactly its first %d frames, read %v", stream, n, r.Streams[stream])
}
