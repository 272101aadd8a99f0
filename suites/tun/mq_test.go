package tun

import (
	"fmt"
	"testing"

	"github.com/vishvananda/netlink"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/kmsg"
	"github.com/xmitcheck/xmitcheck/internal/netenv"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
)

// mqTap is a two-queue tap (IFF_MULTI_QUEUE) under "mq" with a pfifo per
// queue, steered by a TUNSETSTEERINGEBPF program: frames of stream s go to
// queue s % numqueues, so a test picks the queue a frame takes.
type mqTap struct {
	*tapRig
	q [2]*tuntap.Device // q[i] is attached as queue i at the start
}

func newMQTap(t *testing.T, o tapOpts) *mqTap {
	t.Helper()
	return newMQTapIn(t, netenv.New(t), o)
}

// newMQTapIn is newMQTap in the namespace e.
func newMQTapIn(t *testing.T, e *netenv.Env, o tapOpts) *mqTap {
	t.Helper()
	if o.backpressure() {
		requireBackpressure(t)
	}
	te := &tapRig{e: e, opts: o}
	kmsg.Watch(t)
	m := &mqTap{tapRig: te}
	for i := range m.q {
		m.q[i] = te.open(t, o.flags|tuntap.IFFMultiQueue, true)
	}
	te.dev = m.q[0]
	l := te.link(t)
	te.ifindex = l.Attrs().Index
	assert.NilError(t, te.e.Handle.LinkSetTxQLen(l, o.ring))
	te.e.Up(t, l)
	te.e.MqPfifo(t, l, len(m.q), o.limit)
	assert.NilError(t, m.q[0].SetSteeringEBPF(streamSteering(t).FD()))
	return m
}

// queueState is the link counters and the qdisc of each tx queue.
type queueState struct {
	state
	PerQ [2]counters.Qdisc
}

func (m *mqTap) queueState() (queueState, error) {
	var qs queueState
	var err error
	if qs.state, err = m.state(); err != nil {
		return qs, err
	}
	for i := range qs.PerQ {
		if qs.PerQ[i], err = counters.ReadQdisc(m.e, tapName, netlink.MakeHandle(1, uint16(i+1))); err != nil {
			return qs, err
		}
	}
	return qs, nil
}

func (qs queueState) String() string {
	return fmt.Sprintf("%s; txq0 %s; txq1 %s", qs.Link, qs.PerQ[0], qs.PerQ[1])
}

func (m *mqTap) waitQueues(t *testing.T, what string, ok func(queueState) bool) queueState {
	t.Helper()
	s, err := counters.WaitFor(t.Context(), waitLimit, m.queueState, ok)
	assert.NilError(t, err, "waiting for %s", what)
	return s
}

// holdQueues checks that ok keeps accepting the queues' state for holdFor.
func (m *mqTap) holdQueues(t *testing.T, what string, ok func(queueState) bool) queueState {
	t.Helper()
	return counters.Holds(t, holdFor, what, m.queueState, ok)
}

// TestMultiQueue is the no-stall rule per queue: one queue whose
// ring is full (stopped, with the flag) does not block the other, each
// queue stops and wakes on its own, and a queue detached and re-attached
// while stopped leaves nothing stalled.
func TestMultiQueue(t *testing.T) {
	feature.Of(t, feature.Seed000Tun)
	for _, v := range variants {
		t.Run("OthersFlow/"+v.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: v.flags}
			m := newMQTap(t, o)
			n := o.ring + 40
			f := idleFate(o, n)
			s0, s1 := m.sender(t, 0), m.sender(t, 1)
			res0 := send(t, s0, n)
			stuck := func(qs queueState) bool {
				return qs.PerQ[0].Qlen == uint64(f.backlog) && qs.Link.TxDropped == uint64(f.tunDrops)
			}
			m.waitQueues(t, "queue 0 full", stuck)

			res1 := send(t, s1, n)
			m.waitQueues(t, "queue 1 full as well", func(qs queueState) bool {
				return qs.PerQ[0].Qlen == uint64(f.backlog) && qs.PerQ[1].Qlen == uint64(f.backlog) &&
					qs.Link.TxDropped == uint64(2*f.tunDrops)
			})
			r1 := traffic.NewReader(m.q[1].File)
			readExactly(t, r1, f.ring+f.backlog)
			got1 := f.ring + f.backlog + drain(t, r1)
			qs := m.waitQueues(t, "queue 1 drained while queue 0 stays as it was", func(qs queueState) bool {
				return qs.PerQ[1].Qlen == 0 && qs.PerQ[0].Qlen == uint64(f.backlog)
			})
			assert.Check(t, is.Equal(r1.Seen()[1], uint64(got1)), "queue 1 got only stream 1: %v", r1.Seen())

			r0 := traffic.NewReader(m.q[0].File)
			readExactly(t, r0, f.ring+f.backlog)
			got0 := f.ring + f.backlog + drain(t, r0)
			qs = m.waitQueues(t, "both queues drained", func(qs queueState) bool { return qs.Q.Qlen == 0 })
			l := account(res0.Sent+res0.Refused+res1.Sent+res1.Refused, got0+got1, qs.state, 0)
			assert.Assert(t, l.Balanced(), "%v; %v", l, qs)
			assert.Check(t, is.Equal(got0, f.ring+f.backlog), "%v", l)
			assert.Check(t, is.Equal(r0.Seen()[0], uint64(got0)), "queue 0 got only stream 0: %v", r0.Seen())
			checkStreams(t, l, sentBy(s0, s1), r0, r1)
			checkFirst(t, r0, 0, f.ring+f.backlog)
			checkFirst(t, r1, 1, f.ring+f.backlog)
		})
	}

	// Each queue stops and wakes on its own: with both stopped, the R/2-th
	// read from file 1 wakes txq 1 alone (R/2 frames move from its qdisc,
	// txq 0's backlog stays), and then the R/2-th read from file 0 wakes
	// txq 0 alone. Before that, frames for queue 1 pass while queue 0 is
	// stopped.
	t.Run("WakesOnItsOwn/backpressure", func(t *testing.T) {
		o := tapOpts{ring: 16, limit: 1000, flags: tuntap.IFFBackpressure}
		m := newMQTap(t, o)
		n := o.ring + 24
		f := idleFate(o, n)
		s0, s1 := m.sender(t, 0), m.sender(t, 1)
		res0 := send(t, s0, n)
		m.waitQueues(t, "queue 0 stopped", func(qs queueState) bool { return qs.PerQ[0].Qlen == uint64(f.backlog) })
		res1 := send(t, s1, o.ring/2)
		m.holdQueues(t, "queue 1 takes frames into its ring while queue 0 is stopped", func(qs queueState) bool {
			return qs.PerQ[0].Qlen == uint64(f.backlog) && qs.PerQ[1].Qlen == 0 && qs.Link.TxDropped == 0
		})
		res1b := send(t, s1, n-o.ring/2)
		both := func(b0, b1 int) func(queueState) bool {
			return func(qs queueState) bool {
				return qs.PerQ[0].Qlen == uint64(b0) && qs.PerQ[1].Qlen == uint64(b1) && qs.Link.TxDropped == 0
			}
		}
		m.waitQueues(t, "both queues stopped", both(f.backlog, f.backlog))

		r0, r1 := traffic.NewReader(m.q[0].File), traffic.NewReader(m.q[1].File)
		readExactly(t, r1, o.ring/2-1)
		m.holdQueues(t, fmt.Sprintf("no wake after %d reads from file 1", o.ring/2-1), both(f.backlog, f.backlog))
		readExactly(t, r1, 1)
		m.waitQueues(t, "the R/2-th read from file 1 wakes txq 1", both(f.backlog, f.backlog-o.ring/2))
		m.holdQueues(t, "txq 0 still stopped, txq 1 stopped again", both(f.backlog, f.backlog-o.ring/2))
		readExactly(t, r0, o.ring/2)
		m.waitQueues(t, "the R/2-th read from file 0 wakes txq 0", both(f.backlog-o.ring/2, f.backlog-o.ring/2))
		qs := m.holdQueues(t, "both stopped again", both(f.backlog-o.ring/2, f.backlog-o.ring/2))
		sent := res0.Sent + res0.Refused + res1.Sent + res1.Refused + res1b.Sent + res1b.Refused
		l := account(sent, o.ring, qs.state, 2*o.ring)
		assert.Assert(t, l.Balanced(), "%v; %v", l, qs)

		readExactly(t, r0, n-o.ring/2)
		readExactly(t, r1, n-o.ring/2)
		extra := drain(t, r0) + drain(t, r1)
		qs = m.waitQueues(t, "both queues drained", func(qs queueState) bool { return qs.Q.Qlen == 0 })
		l = account(sent, 2*n+extra, qs.state, 0)
		assert.Assert(t, l.Balanced(), "%v; %v", l, qs)
		assert.Check(t, is.Equal(extra, 0), "%v", l)
		assert.Check(t, is.Equal(qs.Link.TxDropped, uint64(0)), "tun drops; %v", l)
		checkStreams(t, l, sentBy(s0, s1), r0, r1)
		checkFirst(t, r0, 0, n)
		checkFirst(t, r1, 1, n)
	})

	// Detaching queue 0 purges its ring (uncounted) and moves the last
	// queue (file 1) into index 0, which then receives what txq 0's qdisc
	// still held; re-attaching file 0 makes it queue 1. Steering by stream
	// follows the indexes, so afterwards stream 0 reaches file 1 and
	// stream 1 reaches file 0.
	for _, v := range variants {
		t.Run("DetachReattach/"+v.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: v.flags}
			m := newMQTap(t, o)
			n := o.ring + o.ring/2
			f := idleFate(o, n)
			s0, s1 := m.sender(t, 0), m.sender(t, 1)
			res := send(t, s0, n)
			m.waitQueues(t, "queue 0 full", func(qs queueState) bool {
				return qs.PerQ[0].Qlen == uint64(f.backlog) && qs.Link.TxDropped == uint64(f.tunDrops)
			})

			assert.NilError(t, m.q[0].Detach())
			m.waitQueues(t, "txq 0's backlog moved to file 1's ring", func(qs queueState) bool {
				return qs.Q.Qlen == 0 && qs.Link.TxDropped == uint64(f.tunDrops)
			})
			assert.NilError(t, m.q[0].Attach())

			const k = 8
			r0, r1 := traffic.NewReader(m.q[0].File), traffic.NewReader(m.q[1].File)
			res0 := send(t, s0, k)
			res1 := send(t, s1, k)
			readExactly(t, r1, f.backlog+k)
			readExactly(t, r0, k)
			extra := drain(t, r0) + drain(t, r1)
			qs := m.waitQueues(t, "both queues drained", func(qs queueState) bool { return qs.Q.Qlen == 0 })
			sent := res.Sent + res.Refused + res0.Sent + res0.Refused + res1.Sent + res1.Refused
			l := account(sent, f.backlog+2*k+extra, qs.state, 0)
			l.Uncounted, l.UncountedWhy = uint64(f.ring), "queue 0's ring purged at detach"
			assert.Assert(t, l.Balanced(), "%v; %v", l, qs)
			assert.Check(t, is.Equal(extra, 0), "%v", l)
			assert.Check(t, is.Equal(r1.Seen()[0], uint64(f.backlog+k)), "file 1 (now queue 0) gets txq 0's old backlog and stream 0: %v", r1.Seen())
			assert.Check(t, is.Equal(r0.Seen()[1], uint64(k)), "file 0 (now queue 1) gets stream 1: %v", r0.Seen())
			checkStreams(t, l, sentBy(s0, s1), r0, r1)
		})
	}
}
