package tun

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// attachHeld is how many frames txq 1's qdisc holds behind file B's full
// ring when the queue files move; attachSent how many go to txq 1 after.
const attachHeld, attachSent = 8, 8

// TestAttachWake: a queue file that comes to a tx queue index backpressure
// left stopped finds that subqueue woken. Files A (index 0) and B (index
// 1) of a two-queue tap; B's ring fills and txq 1 stops with attachHeld
// frames in its qdisc; the files move; frames sent to txq 1 must then
// reach the file at index 1. Nothing else would ever wake txq 1: that
// file's ring is empty, so no read of it can. The kernel's rules
// (drivers/net/tun.c):
//
//   - __tun_detach moves the last queue into the index it frees and wakes
//     that index only if the file moved there has an empty ring; dropping
//     to one real queue resets txq 1's qdisc (qdisc_reset_all_tx_gt).
//   - tun_attach gives the file index numqueues and force-wakes that
//     subqueue (tun_force_wake_queue).
//   - tun_set_iff force-wakes every attached queue only on a single-queue
//     device or when the file it attached is the device's only one; for a
//     further queue of a multi-queue device it returns before that,
//     leaving the wake to tun_attach.
func TestAttachWake(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, c := range []struct {
		name string
		move func(*testing.T, *mqTap) moved
	}{
		{"DetachOther", detachOther},
		{"DetachSelf", detachSelf},
		{"SetIFF", setIFF},
	} {
		t.Run(c.name, func(t *testing.T) { attachWake(t, c.move) })
	}
}

// moved is where a move left the queue files: at0 and at1 are the files
// at index 0 and 1, ring0 the frames of B's ring still at index 0, tunMay
// how many of txq 1's backlog tun may drop (DEV_READY: no file at index 1)
// before the reset frees the rest, and why what freed the frames.
type moved struct {
	at0, at1      *tuntap.Device
	ring0, tunMay int
	why           string
}

// detachOther detaches A: B moves to index 0 with its ring full, so
// nothing wakes txq 1; re-attaching A gives it index 1, and only
// tun_attach can wake txq 1.
func detachOther(t *testing.T, m *mqTap) moved {
	a, b := m.q[0], m.q[1]
	counters.Bounded(t, waitLimit, "TUNSETQUEUE IFF_DETACH_QUEUE on file A (index 0)", a.Detach)
	counters.Bounded(t, waitLimit, "TUNSETQUEUE IFF_ATTACH_QUEUE on file A", a.Attach)
	return moved{
		at0: b, at1: a, ring0: m.opts.ring,
		why: "txq 1's backlog, its qdisc reset as A's detach left one real queue",
	}
}

// detachSelf detaches B, the last queue: its own index is left to itself,
// its ring purged, so __tun_detach wakes txq 1 there and then; re-attaching
// B gives it index 1 again.
func detachSelf(t *testing.T, m *mqTap) moved {
	b := m.q[1]
	counters.Bounded(t, waitLimit, "TUNSETQUEUE IFF_DETACH_QUEUE on file B (index 1)", b.Detach)
	counters.Bounded(t, waitLimit, "TUNSETQUEUE IFF_ATTACH_QUEUE on file B", b.Attach)
	return moved{
		at0: m.q[0], at1: b, tunMay: attachHeld,
		why: "B's ring purged at its detach, and what of txq 1's backlog its qdisc reset rather than feed to tun",
	}
}

// setIFF makes the tap persistent and closes A, then B (txq 1 still
// stopped: the same moves as detachOther, then B's purge wakes txq 0),
// then opens two files with TUNSETIFF: the first takes index 0 (and
// tun_set_iff wakes it), the second index 1, woken by tun_attach alone.
func setIFF(t *testing.T, m *mqTap) moved {
	assert.NilError(t, m.q[0].SetPersist(true))
	counters.Bounded(t, waitLimit, "close file A (index 0)", m.q[0].Close)
	counters.Bounded(t, waitLimit, "close file B", m.q[1].Close)
	flags := m.opts.flags | tuntap.IFFMultiQueue
	at0, at1 := m.open(t, flags, true), m.open(t, flags, true)
	t.Cleanup(func() { at0.SetPersist(false) })
	m.waitOperUp(t)
	return moved{
		at0: at0, at1: at1,
		why: "B's ring purged as it closed, and txq 1's backlog, its qdisc reset as A's close left one real queue",
	}
}

// attachWake stops txq 1 behind B's full ring, lets move move the files,
// and sends attachSent frames to txq 1: they must reach the file now at
// index 1. Every frame sent is read, dropped by tun, or freed uncounted
// (kfree_skb counts those exactly).
func attachWake(t *testing.T, move func(*testing.T, *mqTap) moved) {
	dropmon.RequireReasons(t)
	o := tapOpts{ring: 16, limit: 1000, flags: tuntap.IFFBackpressure}
	m := newMQTap(t, o)
	freed := m.freed(t)
	s := m.sender(t, 1)
	n := o.ring + attachHeld
	res := send(t, s, n)
	m.stopped(t, state{}, n)
	m.waitQueues(t, "txq 1 stopped behind B's full ring", backlogs(0, attachHeld, 0))

	mv := move(t, m)
	gone := uint64(n - mv.ring0)
	freed.WaitFor(t, gone, waitLimit, counters.Accounting{
		Sent:      res.Handed(),
		InDevice:  uint64(mv.ring0),
		Uncounted: gone, UncountedWhy: mv.why + ", or dropped by tun",
	})
	qs := m.waitQueues(t, "txq 1's backlog gone", func(qs queueState) bool { return qs.Q.Qlen == 0 })
	l := account(res.Handed(), 0, qs.state, mv.ring0)
	l.Uncounted, l.UncountedWhy = gone-l.DeviceDrops, mv.why
	assert.Assert(t, l.Balanced() && l.DeviceDrops <= uint64(mv.tunMay), "tun may drop at most %d; %v", mv.tunMay, l)

	res2 := send(t, s, attachSent)
	_, err := counters.WaitFor(t.Context(), waitLimit, m.queueState, backlogs(0, 0, int(l.DeviceDrops)))
	assert.NilError(t, err, "txq 1 stalled: still stopped with the %d frames sent after the move in its qdisc", attachSent)
	r0, r1 := traffic.NewReader(mv.at0.File), traffic.NewReader(mv.at1.File)
	readExactly(t, r1, attachSent)
	observe.Shows(t, feature.Seed000Tun, fmt.Sprintf(
		"txq 1, stopped behind a full ring, woke for the file that came to index 1: %d frames reached it", attachSent))

	readExactly(t, r0, mv.ring0)
	extra := m.drain(t, r0) + m.drain(t, r1)
	qs = m.waitQueues(t, "empty qdiscs", backlogs(0, 0, int(l.DeviceDrops)))
	l2 := account(res.Handed()+res2.Handed(), mv.ring0+attachSent+extra, qs.state, 0)
	l2.Uncounted, l2.UncountedWhy = l.Uncounted, l.UncountedWhy
	assert.Assert(t, l2.Balanced(), "%v; %v", l2, qs)
	assert.Check(t, is.Equal(extra, 0), "%v", l2)
	checkStreams(t, l2, sentBy(s), r0, r1)
	checkFirst(t, r0, 1, mv.ring0)
	assert.Check(t, readSpan(r1, 1, n, attachSent),
		"the file at index 1: want frames %d-%d, read %v", n, n+attachSent-1, r1.Streams[1])
	freed.WaitFor(t, gone, waitLimit, l2)
}
