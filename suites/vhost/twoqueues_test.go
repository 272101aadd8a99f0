package vhost

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// TestTwoQueues: two queue pairs of a multi-queue tap steered by stream.
// Queue 0's guest posts nothing, so queue 0 stops (or tail-drops without
// the flag); queue 1's guest still gets every frame of its own stream, and
// queue 0's backlog does not move meanwhile.
func TestTwoQueues(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	for _, s := range []setup{
		{qdisc: qdiscDefault, queues: 2},
		{backpressure: true, qdisc: qdiscDefault, queues: 2},
	} {
		t.Run(s.String(), func(t *testing.T) { twoQueues(t, s) })
	}
}

func twoQueues(t *testing.T, s setup) {
	r := newRig(t, s)
	r.steerByStream()
	sent0 := sendAll(t, r.sender(0), ring+vhostnet.Batch+100)
	r.waitState("queue 0 full", func(st state) bool {
		return st.Qdisc.Qlen+st.Link.TxDropped+ring+vhostnet.Batch >= sent0
	})
	st0 := r.steady()
	if s.backpressure {
		assert.Equal(t, st0.Link.TxDropped, uint64(0), "%v", accountInFlight(sent0, 0, st0))
	}

	s1, rv1 := r.sender(1), r.receiver(false)
	var sent1 uint64
	for range 4 {
		sent1 += sendAll(t, s1, ring/2)
		r.collect(r.guests[1], rv1, func(rv *receiver) bool { return rv.got >= sent1 })
	}
	st := r.mustState()
	a := accountInFlight(sent0+sent1, rv1.got, st)
	assert.Equal(t, rv1.got, sent1, "queue 1 delivers everything while queue 0 is stuck; %v", a)
	assert.Equal(t, st.Link.TxDropped, st0.Link.TxDropped, "queue 1 dropped nothing; %v", a)
	assert.Equal(t, st.Qdisc.Qlen, st0.Qdisc.Qlen, "queue 0's backlog did not move; %v", a)

	rv0 := r.receiver(false)
	sent := sent0 + sent1
	r.collect(r.guests[0], rv0, func(rv *receiver) bool {
		s := r.mustState()
		return rv.got+rv1.got+s.Link.TxDropped+s.Qdisc.Drops >= sent && s.Qdisc.Qlen == 0
	})
	st = r.mustState()
	a = account(sent, rv0.got+rv1.got, st)
	assert.Assert(t, a.Balanced(), "%v", a)
	assert.Check(t, is.DeepEqual(rv0.streams(), []uint32{0}), "guest 0 got only stream 0; %v", a)
	assert.Check(t, is.DeepEqual(rv1.streams(), []uint32{1}), "guest 1 got only stream 1; %v", a)
	if s.backpressure {
		assert.Equal(t, st.Link.TxDropped, uint64(0), "%v", a)
	}
}
