package tun

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// TestQueuesApart: on a two-queue tap, one queue whose ring is full
// (stopped, with the flag) does not block the other: each fills on its
// own, and reading one drains it while the other stays as it was.
func TestQueuesApart(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: v.flags}
			m := newMQTap(t, o)
			n := o.ring + 40
			f := idleFate(o, n)
			s0, s1 := m.sender(t, 0), m.sender(t, 1)
			res0 := send(t, s0, n)
			base := m.stopped(t, state{}, n)
			res1 := send(t, s1, n)
			m.stopped(t, base, n)
			m.waitQueues(t, "each tx queue holding its own backlog", backlogs(f.backlog, f.backlog, 2*f.tunDrops))

			r1 := traffic.NewReader(m.q[1].File)
			readExactly(t, r1, f.held())
			got1 := f.held() + m.drain(t, r1)
			m.waitQueues(t, "queue 1 drained while queue 0 stays as it was", backlogs(f.backlog, 0, 2*f.tunDrops))
			assert.Check(t, is.Equal(r1.Seen()[1], uint64(got1)), "queue 1 got only stream 1: %v", r1.Seen())

			r0 := traffic.NewReader(m.q[0].File)
			readExactly(t, r0, f.held())
			got0 := f.held() + m.drain(t, r0)
			qs := m.waitQueues(t, "both queues drained", backlogs(0, 0, 2*f.tunDrops))
			l := account(res0.Handed()+res1.Handed(), got0+got1, qs.state, 0)
			assert.Assert(t, l.Balanced(), "%v; %v", l, qs)
			assert.Check(t, is.Equal(got0, f.held()), "%v", l)
			assert.Check(t, is.Equal(r0.Seen()[0], uint64(got0)), "queue 0 got only stream 0: %v", r0.Seen())
			checkStreams(t, l, sentBy(s0, s1), r0, r1)
			checkFirst(t, r0, 0, f.held())
			checkFirst(t, r1, 1, f.held())
		})
	}
}

// TestWakesOnItsOwn: each queue stops and wakes on its own. Frames for
// queue 1 pass while queue 0 is stopped; with both stopped, the R/2-th
// read from file 1 wakes txq 1 alone (R/2 frames move from its qdisc,
// txq 0's backlog stays), and then the R/2-th read from file 0 wakes txq 0
// alone.
func TestWakesOnItsOwn(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	o := tapOpts{ring: 16, limit: 1000, flags: tuntap.IFFBackpressure}
	m := newMQTap(t, o)
	n, half := o.ring+24, o.ring/2
	f := idleFate(o, n)
	s0, s1 := m.sender(t, 0), m.sender(t, 1)
	res0 := send(t, s0, n)
	base := m.stopped(t, state{}, n)
	res1 := send(t, s1, half)
	m.waitQueues(t, "queue 1 takes frames into its ring while queue 0 is stopped", backlogs(f.backlog, 0, 0))
	m.holdQueues(t, "queue 1 takes frames into its ring while queue 0 is stopped", backlogs(f.backlog, 0, 0))
	res1b := send(t, s1, n-half)
	m.stopped(t, base, n)
	m.waitQueues(t, "both queues stopped", backlogs(f.backlog, f.backlog, 0))

	r0, r1 := traffic.NewReader(m.q[0].File), traffic.NewReader(m.q[1].File)
	readExactly(t, r1, half-1)
	m.holdQueues(t, fmt.Sprintf("no wake after %d reads from file 1", half-1), backlogs(f.backlog, f.backlog, 0))
	readExactly(t, r1, 1)
	m.waitQueues(t, "the R/2-th read from file 1 wakes txq 1", backlogs(f.backlog, f.backlog-half, 0))
	m.holdQueues(t, "txq 0 still stopped, txq 1 stopped again", backlogs(f.backlog, f.backlog-half, 0))
	readExactly(t, r0, half)
	m.waitQueues(t, "the R/2-th read from file 0 wakes txq 0", backlogs(f.backlog-half, f.backlog-half, 0))
	qs := m.holdQueues(t, "both stopped again", backlogs(f.backlog-half, f.backlog-half, 0))
	handed := res0.Handed() + res1.Handed() + res1b.Handed()
	l := account(handed, o.ring, qs.state, 2*o.ring)
	assert.Assert(t, l.Balanced(), "%v; %v", l, qs)
	observe.Shows(t, feature.Seed000Tun, "two queues: the R/2-th read from each file woke its own tx queue alone")

	readExactly(t, r0, n-half)
	readExactly(t, r1, n-half)
	extra := m.drain(t, r0) + m.drain(t, r1)
	qs = m.waitQueues(t, "both queues drained", backlogs(0, 0, 0))
	l = account(handed, 2*n+extra, qs.state, 0)
	assert.Assert(t, l.Balanced(), "%v; %v", l, qs)
	assert.Check(t, is.Equal(extra, 0), "%v", l)
	checkStreams(t, l, sentBy(s0, s1), r0, r1)
	checkFirst(t, r0, 0, n)
	checkFirst(t, r1, 1, n)
}

// TestDetachReattach: detaching queue 0 while its ring is full purges that
// ring (uncounted) and moves the last queue (file 1, its ring empty) into
// index 0, which __tun_detach then wakes: file 1 receives what txq 0's
// qdisc still held. Re-attaching file 0 makes it queue 1. Steering by
// stream follows the indexes, so afterwards stream 0 reaches file 1 and
// stream 1 reaches file 0.
func TestDetachReattach(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: v.flags}
			m := newMQTap(t, o)
			n := o.ring + o.ring/2
			f := idleFate(o, n)
			s0, s1 := m.sender(t, 0), m.sender(t, 1)
			res := send(t, s0, n)
			m.stopped(t, state{}, n)

			assert.NilError(t, m.q[0].Detach())
			m.waitQueues(t, "txq 0's backlog moved to file 1's ring", backlogs(0, 0, f.tunDrops))
			assert.NilError(t, m.q[0].Attach())

			const k = 8
			r0, r1 := traffic.NewReader(m.q[0].File), traffic.NewReader(m.q[1].File)
			res0 := send(t, s0, k)
			res1 := send(t, s1, k)
			readExactly(t, r1, f.backlog+k)
			readExactly(t, r0, k)
			extra := m.drain(t, r0) + m.drain(t, r1)
			qs := m.waitQueues(t, "both queues drained", backlogs(0, 0, f.tunDrops))
			l := account(res.Handed()+res0.Handed()+res1.Handed(), f.backlog+2*k+extra, qs.state, 0)
			l.Uncounted, l.UncountedWhy = uint64(f.ring), "queue 0's ring purged at detach"
			assert.Assert(t, l.Balanced(), "%v; %v", l, qs)
			assert.Check(t, is.Equal(extra, 0), "%v", l)
			assert.Check(t, is.Equal(r1.Seen()[0], uint64(f.backlog+k)),
				"file 1 (now queue 0) gets txq 0's old backlog and stream 0: %v", r1.Seen())
			assert.Check(t, is.Equal(r0.Seen()[1], uint64(k)), "file 0 (now queue 1) gets stream 1: %v", r0.Seen())
			checkStreams(t, l, sentBy(s0, s1), r0, r1)
		})
	}
}
