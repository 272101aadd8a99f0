package tun

import (
	"fmt"
	"testing"

	"github.com/vishvananda/netlink"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/kmsg"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
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
	kmsg.Watch(t)
	m := &mqTap{tapRig: &tapRig{e: e, opts: o}}
	for i := range m.q {
		m.q[i] = m.open(t, o.flags|tuntap.IFFMultiQueue, true)
	}
	m.dev = m.q[0]
	l := m.link(t)
	m.ifindex = l.Attrs().Index
	assert.NilError(t, e.Handle.LinkSetTxQLen(l, o.ring))
	e.Up(t, l)
	e.MqPfifo(t, l, len(m.q), o.limit)
	assert.NilError(t, m.q[0].SetSteeringEBPF(streamSteering(t).FD()))
	return m
}

// queueState is the link counters, the root (mq, the sum of its
// children) and the qdisc of each tx queue.
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

// backlogs accepts a state whose tx queues hold b0 and b1 frames in their
// qdiscs and where tun dropped tunDrops.
func backlogs(b0, b1, tunDrops int) func(queueState) bool {
	return func(qs queueState) bool {
		return qs.PerQ[0].Qlen == uint64(b0) && qs.PerQ[1].Qlen == uint64(b1) && qs.Link.TxDropped == uint64(tunDrops)
	}
}
