package vhost

import (
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// state is what the kernel says about the tap and its root qdisc.
type state struct {
	Link  counters.Link
	Qdisc counters.Qdisc
}

func (s state) String() string { return s.Link.String() + "; " + s.Qdisc.String() }

func (r *rig) state() (state, error) {
	l, err := counters.ReadLink(r.e.Handle, tapName)
	if err != nil {
		return state{}, err
	}
	q, err := counters.ReadRootQdisc(r.e, tapName)
	return state{Link: l, Qdisc: q}, err
}

// mustState reads the tap's state, failing the test if it cannot.
func (r *rig) mustState() state {
	r.tb.Helper()
	s, err := r.state()
	assert.NilError(r.tb, err)
	return s
}

// txq reads the qdisc of tx queue i under a qdiscMqPfifo root.
func (r *rig) txq(i int) (counters.Qdisc, error) {
	return counters.ReadQdisc(r.e, tapName, netlink.MakeHandle(1, uint16(i+1)))
}

// steadyWindow is how long the tap's counters must stay still for steady
// to call a wake-up finished.
const steadyWindow = 50 * time.Millisecond

// steady waits until the tap's state stops moving: a wake-up that is
// still moving frames from the qdisc into the ring (NET_TX softirq) must not
// be sampled half-way. Bounded by wait.
func (r *rig) steady() state {
	r.tb.Helper()
	s, err := counters.WaitSteady(r.ctx, wait, steadyWindow, r.state)
	assert.NilError(r.tb, err, "waiting for the tap's counters to settle")
	return s
}

// waitState waits until ok accepts the tap's state, failing the test with
// the last state seen.
func (r *rig) waitState(what string, ok func(state) bool) state {
	r.tb.Helper()
	s, err := counters.WaitFor(r.ctx, wait, r.state, ok)
	assert.NilError(r.tb, err, "waiting for %s", what)
	return s
}

// account is the ledger once the guests hold everything that was not
// dropped: nothing is left in the device.
func account(sent, received uint64, s state) counters.Accounting {
	return counters.Accounting{
		Sent:         sent,
		Received:     received,
		DeviceDrops:  s.Link.TxDropped,
		QdiscDrops:   s.Qdisc.Drops,
		QdiscBacklog: s.Qdisc.Qlen,
	}
}

// inDevice is what the ledger leaves for the device (the tap's ptr_ring
// plus the batch vhost holds) while frames are still in flight: it cannot
// be read from the kernel, so it is derived.
func inDevice(sent, received uint64, s state) int64 {
	return int64(sent) - int64(received) - int64(s.Link.TxDropped) - int64(s.Qdisc.Drops) - int64(s.Qdisc.Qlen)
}

// accountInFlight is account with the device's share derived (inDevice).
func accountInFlight(sent, received uint64, s state) counters.Accounting {
	a := account(sent, received, s)
	a.InDevice = uint64(inDevice(sent, received, s))
	return a
}

// sendAll sends n frames and returns how many the kernel took (accepted +
// refused by the qdisc, which counts the refused as drops).
func sendAll(tb testing.TB, s *traffic.Sender, n int) uint64 {
	tb.Helper()
	res, err := s.Send(n)
	assert.NilError(tb, err)
	return res.Handed()
}
