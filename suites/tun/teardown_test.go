package tun

import (
	"context"
	"errors"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/kmsg"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// teardownBacklog is how many frames each teardown finds in the qdisc of
// a stopped queue, beyond the R = 16 in its ring.
const teardownBacklog = 24

// TestTeardown tears a tap down while its queue is stopped (IFF_BACKPRESSURE,
// an idle reader: R frames in the ring, teardownBacklog in the qdisc),
// four ways, each teardownRounds times, every step bounded by waitLimit:
//
//   - CloseQueue/tap, CloseQueue/napi: close the only queue file; the
//     device goes with it (napi: IFF_NAPI|IFF_NAPI_FRAGS, whose instance
//     the close disables and deletes). The close purges the ring and wakes
//     the queue, which feeds the qdisc's frames to tun: it drops them, no
//     queue being attached (DEV_READY), or the device frees them as it goes.
//   - DetachQueue/tap, DetachQueue/napi: detach one of two stopped queues
//     (TUNSETQUEUE IFF_DETACH_QUEUE); the other takes its place.
//   - DeleteLink: delete the device over netlink, the queue file open.
//   - DeleteNetns: drop every reference to the namespace the device lives
//     in (its queue file belongs to another); also stock, where the
//     namespace goes at once, where with backpressure it waits for the
//     reader (see deleteNetns).
//
// Nothing may leak: each round counts, with kfree_skb, the frames freed on
// the tap and wants exactly the frames not read (dropmon.WatchFreed), and after
// each round the namespace that opened the queue files must have exactly
// the sockets it had before the first (netenv.Env.SocketsUsed: a queue file is a
// socket, and a sender stays one while a frame of it is not freed). The
// ledger puts the frames a teardown frees in "uncounted", with the number
// the test left there; the kernel must log no splat (kmsg.Watch).
func TestTeardown(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	bp := tapOpts{ring: 16, limit: 1000, flags: tuntap.IFFBackpressure}
	// IFF_NAPI (and IFF_NAPI_FRAGS) matter to a teardown: closing or
	// detaching a queue disables and deletes its NAPI instance.
	napi := bp
	napi.flags |= tuntap.IFFNapi | tuntap.IFFNapiFrags
	for _, v := range []struct {
		name string
		o    tapOpts
	}{{"tap", bp}, {"napi", napi}} {
		t.Run("CloseQueue/"+v.name, func(t *testing.T) {
			requireBackpressure(t)
			dropmon.RequireReasons(t)
			e := netenv.New(t)
			counters.Rounds(t, e, teardownRounds, waitLimit, func(t *testing.T) {
				stoppedTap(t, e, v.o, func(rig *tapRig) string {
					counters.Bounded(t, waitLimit, "close the only queue file", rig.dev.Close)
					return "the ring purged at close; the qdisc's frames dropped by tun (DEV_READY) or freed with the device"
				})
			})
		})
		t.Run("DetachQueue/"+v.name, func(t *testing.T) {
			requireBackpressure(t)
			dropmon.RequireReasons(t)
			e := netenv.New(t)
			counters.Rounds(t, e, teardownRounds, waitLimit, func(t *testing.T) { detachStopped(t, e, v.o) })
		})
	}
	t.Run("DeleteLink", func(t *testing.T) {
		requireBackpressure(t)
		dropmon.RequireReasons(t)
		e := netenv.New(t)
		counters.Rounds(t, e, teardownRounds, waitLimit, func(t *testing.T) {
			stoppedTap(t, e, bp, func(rig *tapRig) string {
				l := rig.link(t)
				counters.Bounded(t, waitLimit, "RTM_DELLINK "+tapName, func() error { return rig.e.Handle.LinkDel(l) })
				detachedFile(t, rig.dev)
				counters.Bounded(t, waitLimit, "close the queue file of the deleted tap", rig.dev.Close)
				return "the qdisc reset as the device closed (its one requeued frame with QUEUE_PURGE), " +
					"the ring purged as it unregistered"
			})
		})
	})
	for _, v := range variants {
		t.Run("DeleteNetns/"+v.name, func(t *testing.T) {
			o := tapOpts{ring: 16, limit: 1000, flags: v.flags}
			if o.backpressure() {
				requireBackpressure(t)
			}
			dropmon.RequireReasons(t)
			e := netenv.New(t)
			counters.Rounds(t, e, teardownRounds, waitLimit, func(t *testing.T) { deleteNetns(t, e, o) })
		})
	}
}

// stoppedTap builds a tap in e, stops its queue with R frames in the ring
// and teardownBacklog in the qdisc, runs teardown (which must leave the
// device gone and says what freed the frames), and checks the tap's
// frames were all freed.
func stoppedTap(t *testing.T, e *netenv.Env, o tapOpts, teardown func(*tapRig) string) {
	rig := newTapIn(t, e, o)
	freed := rig.freed(t)
	n := o.ring + teardownBacklog
	f := idleFate(o, n)
	s := rig.sender(t, 1)
	res := send(t, s, n)
	st := rig.reached(t, state{}, n)
	l := account(res.Handed(), 0, st, f.ring)
	assert.Assert(t, l.Balanced(), "%v", l)

	why := teardown(rig)
	_, err := rig.e.Handle.LinkByName(tapName)
	assert.Check(t, err != nil, "%s is still there after the teardown", tapName)
	// The device and its counters are gone: what it held is uncounted.
	l.InDevice, l.QdiscBacklog = 0, 0
	l.Uncounted, l.UncountedWhy = uint64(f.held()), why
	assert.Assert(t, l.Balanced(), "%v", l)
	freed.WaitFor(t, l.DeviceDrops+l.QdiscDrops+l.Uncounted, waitLimit, l)
}

// detachedFile checks that a queue file whose device is gone says so:
// TUNGETIFF and read(2) fail with EBADFD. The read goes around Go's
// poller, which answers "not pollable" once it saw the file's EPOLLERR.
func detachedFile(t *testing.T, d *tuntap.Device) {
	t.Helper()
	_, err := d.Flags()
	assert.Check(t, errors.Is(err, unix.EBADFD), "TUNGETIFF on the queue file of a deleted tap: %v", err)
	rc, err := d.SyscallConn()
	assert.NilError(t, err)
	var rerr error
	assert.NilError(t, rc.Control(func(fd uintptr) { _, rerr = unix.Read(int(fd), make([]byte, 2048)) }))
	assert.Check(t, errors.Is(rerr, unix.EBADFD), "read on the queue file of a deleted tap: %v", rerr)
}

// detachStopped fills both queues of a two-queue tap (R in each ring,
// teardownBacklog in each txq's qdisc, both stopped) and detaches queue 0.
// Its ring is purged; file 1 moves to index 0 with its full ring, so txq 0
// stays stopped and keeps its backlog; the device drops to one real tx
// queue, which resets txq 1's qdisc (qdisc_reset_all_tx_gt: its backlog is
// freed uncounted). Reading file 1 then gets its own R frames of stream 1
// and, through the wake at R/2, txq 0's backlog: frames R.. of stream 0.
func detachStopped(t *testing.T, e *netenv.Env, o tapOpts) {
	m := newMQTapIn(t, e, o)
	freed := m.freed(t)
	n := o.ring + teardownBacklog
	f := idleFate(o, n)
	s0, s1 := m.sender(t, 0), m.sender(t, 1)
	res0 := send(t, s0, n)
	base := m.reached(t, state{}, n)
	res1 := send(t, s1, n)
	m.reached(t, base, n)
	m.waitQueues(t, "both queues stopped", backlogs(f.backlog, f.backlog, 0))

	counters.Bounded(t, waitLimit, "TUNSETQUEUE IFF_DETACH_QUEUE on queue 0", m.q[0].Detach)
	kept := backlogs(f.backlog, 0, 0)
	m.waitQueues(t, "txq 0 still stopped with its backlog, txq 1's reset", kept)
	qs := m.holdQueues(t, "txq 0 stopped behind file 1's full ring", kept)
	sent := res0.Handed() + res1.Handed()
	l := account(sent, 0, qs.state, f.ring)
	const why = "queue 0's ring purged at detach, txq 1's qdisc reset to one real queue"
	l.Uncounted, l.UncountedWhy = uint64(f.held()), why
	assert.Assert(t, l.Balanced(), "%v; %v", l, qs)
	freed.WaitFor(t, l.Uncounted, waitLimit, l)

	r := traffic.NewReader(m.q[1].File)
	readExactly(t, r, f.held())
	extra := m.drain(t, r)
	qs = m.waitQueues(t, "empty qdiscs", func(qs queueState) bool { return qs.Q.Qlen == 0 })
	l = account(sent, f.held()+extra, qs.state, 0)
	l.Uncounted, l.UncountedWhy = uint64(f.held()), why
	assert.Assert(t, l.Balanced(), "%v; %v", l, qs)
	assert.Check(t, is.Equal(extra, 0), "%v", l)
	checkStreams(t, l, sentBy(s0, s1), r)
	checkFirst(t, r, 1, f.ring)
	assert.Check(t, readSpan(r, 0, f.ring, f.backlog),
		"stream 0: want frames %d-%d (txq 0's backlog), read %v; %v", f.ring, n-1, r.Streams[0], l)
	freed.WaitFor(t, l.Uncounted, waitLimit, l)
}

// deleteNetns opens the tap in home, moves it into a namespace of its own,
// stops its queue there (backpressure; stock fills the ring and
// tail-drops), then closes every reference the test holds to that
// namespace: the sender, the netlink handle, the namespace's file. The
// queue file stays open in home.
//
// Stock, nothing of the namespace is left in use: it is destroyed at once
// and takes the device with it (default_device_exit_batch), the ring's R
// frames purged; the queue file then reads EBADFD.
//
// With backpressure the frames in the qdisc are still charged to the
// sender (a frame is orphaned only as it enters the ring), and a socket
// keeps its namespace until the last of its frames is freed (sk_free
// waits for sk_wmem_alloc): the namespace outlives every handle while the
// queue stays stopped. Reading the queue file wakes the queue; once the
// last of the backlog has moved into the ring the sender is freed and the
// namespace destroyed (cleanup_net, on a workqueue), purging what the
// reader has not read by then; it reads until the file fails. Where
// wakes fall depends on when NET_TX runs (reads while the queue is awake
// do not count towards R/2), so the test cannot stop reading at the
// moment the backlog is gone: the purge of a full ring is the stock
// variant's.
func deleteNetns(t *testing.T, home *netenv.Env, o tapOpts) {
	kmsg.Watch(t)
	rig := &tapRig{e: home, opts: o}
	rig.dev = rig.open(t, o.flags, true)
	away, kill := netenv.NewDoomed(t)
	assert.NilError(t, home.Handle.LinkSetNsFd(home.Link(t, tapName), int(away.NS)),
		"move %s to a namespace of its own", tapName)
	rig.e = away
	rig.setUp(t)
	freed := rig.freed(t)

	var s *traffic.Sender
	assert.NilError(t, away.Do(func() (err error) {
		s, err = traffic.NewSender(rig.ifindex, 1)
		return err
	}))
	closeSender := sync.OnceValue(s.Close)
	t.Cleanup(func() { closeSender() })
	n := o.ring + teardownBacklog
	f := idleFate(o, n)
	res := send(t, s, n)
	st := rig.reached(t, state{}, n)
	l := account(res.Handed(), 0, st, f.ring)
	assert.Assert(t, l.Balanced(), "%v", l)

	assert.NilError(t, closeSender())
	kill()
	r := traffic.NewReader(rig.dev.File)
	read := 0
	var readErr error
	if f.backlog > 0 {
		there := func() error { _, err := rig.dev.Flags(); return err }
		counters.Hold(t, holdFor, "the namespace, pinned by the sender's frames in the stopped qdisc", there)
		for {
			got, err := r.Read(1, waitLimit)
			read += got
			if err != nil {
				// EBADFD, or Go's "not pollable" once its poller saw
				// the file's EPOLLERR first: Gone below says which.
				readErr = err
				break
			}
			assert.Assert(t, got == 1,
				"no frame for %v and the namespace still there after %d frames read; %v", waitLimit, read, l)
		}
	}
	_, err := counters.WaitFor(context.Background(), waitLimit, rig.dev.Gone, func(g bool) bool { return g })
	assert.NilError(t, err,
		"the namespace and its tap destroyed once nothing of the test held it (reads ended with %v); %v", readErr, l)
	l.Received, l.InDevice, l.QdiscBacklog = uint64(read), 0, 0
	l.Uncounted, l.UncountedWhy = uint64(f.held()-read), "left in the ring when the namespace was destroyed"
	assert.Assert(t, l.Balanced(), "%v", l)
	checkStreams(t, l, sentBy(s), r)
	checkFirst(t, r, 1, read)
	freed.WaitFor(t, l.DeviceDrops+l.QdiscDrops+l.Uncounted, waitLimit, l)
	counters.Bounded(t, waitLimit, "close the queue file", rig.dev.Close)
	t.Logf("read %d of %d frames before the namespace went; %v", read, n, l)
}

// teardownRounds is how many times each teardown runs (counters.Rounds).
// One: a teardown of a stopped queue races nothing, and no kernel tried
// with three failed a later round and passed the first
// (docs/design/suite-time.md).
// Soak with `xmitcheck run -count N`.
const teardownRounds = 1

// freed starts counting the tap's frames freed with kfree_skb.
func (rig *tapRig) freed(t testing.TB) *dropmon.Freed {
	t.Helper()
	return dropmon.WatchFreed(t, rig.e.NS, rig.ifindex, traffic.EtherType)
}
