package vhost

import (
	"sync"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// teardownSetup is the rig every teardown starts from: IFF_BACKPRESSURE, a
// pfifo, the guest attached by the test once the queue has stopped.
var teardownSetup = setup{backpressure: true, qdisc: qdiscPfifo, lateBackend: true}

// TestTeardown tears vhost-net and its tap apart while the tap's queue is
// stopped (IFF_BACKPRESSURE, a ring of 256 full, stoppedBacklog frames in
// the qdisc) and vhost holds a batch (it took 64 from the full ring, too
// few to wake the queue, and the guest got the first: 63 held), five ways,
// each teardownRounds times in one namespace, every step bounded by wait:
//
//   - CloseVhost: close the vhost-net file; then close the queue file.
//   - DetachBackend: VHOST_NET_SET_BACKEND with fd -1; then close the queue
//     file.
//   - CloseQueue: close the queue file while vhost holds it; then close the
//     vhost-net file.
//   - DeleteLink: delete the tap over netlink while vhost is attached; the
//     guest then posts buffers.
//   - DeleteNetns: drop every reference to the namespace the tap lives in
//     (its queue file, which vhost holds, belongs to another) while vhost is
//     attached; the namespace stays while the qdisc holds the sender's
//     frames, and goes once the guest's next batch of buffers let the
//     qdisc hand them to the ring; the guest then posts buffers.
//
// Nothing may leak: each round counts, with kfree_skb, the frames freed on
// the tap and wants exactly the frames the guest did not get (dropmon.WatchFreed),
// and after each round the namespace that opened the queue files must have
// exactly the sockets it had before the first (netenv.Env.SocketsUsed: a queue file is
// a socket, and a sender stays one while a frame of it is not freed). The
// ledger puts the frames a teardown frees in "uncounted", with the number
// the test left there; the kernel must log no splat (kmsg.Watch).
func TestTeardown(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	for _, c := range []struct {
		name  string
		round func(t *testing.T, home *netenv.Env)
	}{
		{"CloseVhost", func(t *testing.T, e *netenv.Env) {
			releaseVhost(t, e, "close the vhost-net file", (*vhostnet.Net).Close)
		}},
		{"DetachBackend", func(t *testing.T, e *netenv.Env) {
			releaseVhost(t, e, "VHOST_NET_SET_BACKEND fd -1", (*vhostnet.Net).DetachBackend)
		}},
		{"CloseQueue", closeQueue},
		{"DeleteLink", deleteLink},
		{"DeleteNetns", deleteNetns},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireTeardown(t)
			e := netenv.New(t)
			counters.Rounds(t, e, teardownRounds, wait, func(t *testing.T) { c.round(t, e) })
		})
	}
}

// requireTeardown skips t, naming the probe, on a kernel without
// vhost-net (opening /dev/vhost-net), IFF_BACKPRESSURE (TUNGETFEATURES) or
// drop reasons (the frame counter), in that order.
func requireTeardown(t *testing.T) {
	t.Helper()
	g, err := vhostnet.Open(vhostnet.Config{})
	observe.Probe(t, feature.VhostNet, err)
	assert.NilError(t, g.Close())
	observe.Probe(t, feature.IFFBackpressure, tuntap.ProbeBackpressure())
	dropmon.RequireReasons(t)
}

// ledger is the ledger once the tap is gone: vhost still holds held frames
// of its batch, and the rest of what tapModel says the test left in the
// ring, vhost's batch and the qdisc is uncounted, freed for why.
func (s *stopped) ledger(why string, held int) counters.Accounting {
	return counters.Accounting{
		Sent:         s.sent,
		Received:     s.rv.got,
		InDevice:     uint64(held),
		Uncounted:    uint64(s.m.left() - held),
		UncountedWhy: why,
	}
}

// releaseVhost lets vhost go of the stopped tap with release (close its
// file, or detach the backend): vhost gives the 63 entries it holds back
// to the head of the ring (vhost_net_stop_vq or vhost_net_set_backend →
// vhost_net_buf_unproduce → ptr_ring_unconsume, drivers/vhost/net.c:197),
// which has room for them, frees nothing and wakes nothing (its 64 counted
// stay short of ring/2). Closing the queue file, the last reference, then
// takes the device with it: it purges the ring, vhost's batch back at its
// head, and wakes the queue, which feeds the qdisc's frames to tun: it
// drops them, no queue being attached (DEV_READY), or the device frees
// them as it goes.
func releaseVhost(t *testing.T, e *netenv.Env, what string, release func(*vhostnet.Net) error) {
	releaseInTwo(t, e,
		step{what, func(r *rig) error { return release(r.guests[0]) }}, what,
		step{"close the queue file", func(r *rig) error { return r.taps[0].Close() }},
		"ring and vhost's batch purged at close; "+
			"the qdisc's frames dropped by tun (DEV_READY) or freed with the device")
}

// closeQueue closes the queue file while vhost holds it: vhost's own
// reference to the file (get_tap_socket) keeps it, and the device, alive,
// stopped, nothing freed. Closing the vhost-net file then gives its batch
// back to the ring and drops the file's last reference (vhost_net_release):
// tun_chr_close purges the ring and unregisters the device, and the qdisc's
// frames are dropped by tun, no queue being attached (DEV_READY), or freed
// with the device.
func closeQueue(t *testing.T, e *netenv.Env) {
	releaseInTwo(t, e,
		step{"close the queue file", func(r *rig) error { return r.taps[0].Close() }},
		"close the queue file vhost holds (the tap still there)",
		step{"close the vhost-net file", func(r *rig) error { return r.guests[0].Close() }},
		"ring and vhost's batch purged at vhost's release; "+
			"the qdisc's frames dropped by tun (DEV_READY) or freed with the device")
}

// step is one step of a teardown: what it does, as its bound names it,
// and how, on the rig.
type step struct {
	what string
	do   func(r *rig) error
}

// releaseInTwo stops the queue of a new rig in e and takes first, after
// which the queue stays stopped and nothing is freed (held names the
// state), then second, after which the tap is gone and every frame the
// guest did not get was freed once, for why.
func releaseInTwo(t *testing.T, e *netenv.Env, first step, held string, second step, why string) {
	r := newRigIn(t, e, teardownSetup)
	s := stop(t, r, 0, r.sender(0))
	counters.Bounded(t, wait, first.what, func() error { return first.do(r) })
	s.holdStopped(held, 0)

	counters.Bounded(t, wait, second.what, func() error { return second.do(r) })
	r.linkGone()
	s.freedAll(t, why, 0)
}

// deleteLink deletes the tap over netlink while vhost is attached. The
// device goes at once: the qdisc's frames are freed as it closes, the
// ring purged as it unregisters (tun_detach_all), and the queue file,
// open in the test and in vhost, is left detached (TUNGETIFF: EBADFD).
// vhost's batch outlives the device (batchOutlives).
func deleteLink(t *testing.T, e *netenv.Env) {
	r := newRigIn(t, e, teardownSetup)
	s := stop(t, r, 0, r.sender(0))
	link := r.link
	counters.Bounded(t, wait, "RTM_DELLINK "+tapName, func() error { return r.e.Handle.LinkDel(link) })
	r.linkGone()
	gone, err := r.taps[0].Gone()
	assert.NilError(t, err)
	assert.Check(t, gone, "TUNGETIFF still works on the queue file of a deleted tap")
	s.batchOutlives(t, "the qdisc's frames freed as the device closed, the ring purged as it unregistered")
}

// freedAll checks the ledger once the tap is gone (ledger) and waits until
// its uncounted frames were freed on the tap, exactly; it returns it.
func (s *stopped) freedAll(t *testing.T, why string, held int) counters.Accounting {
	t.Helper()
	l := s.ledger(why, held)
	assert.Assert(t, l.Balanced(), "%v", l)
	s.freed.WaitFor(t, l.Uncounted, wait, l)
	return l
}

// batchOutlives checks what is left once the tap is gone and vhost still
// holds its batch: what the device held besides it was freed, exactly,
// with the device (why), and vhost's frames stay until it looks at them
// again, which the guest's next buffers make it do: each recvmsg on the
// detached file fails (tun_recvmsg: EBADFD) and frees the frame, and the
// buffer goes back unused (vhost_discard_vq_desc), so the guest gets
// nothing more. Closing the files then frees nothing.
func (s *stopped) batchOutlives(t *testing.T, why string) {
	t.Helper()
	l := s.freedAll(t, why, s.m.held)
	s.freed.Hold(t, l.Uncounted, holdFor, "vhost keeps its batch while the guest posts nothing", l)

	g := s.r.guests[0]
	_, err := g.Post(g.RX.Free())
	assert.NilError(t, err)
	l = s.ledger(why+"; vhost's batch freed by recvmsg on the detached queue file as the guest posted buffers", 0)
	s.freed.WaitFor(t, l.Uncounted, wait, l)
	got, err := g.Receive(s.rv.check)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got, 0), "the guest got frames after the tap was gone; %v", l)

	counters.Bounded(t, wait, "close the vhost-net file", g.Close)
	counters.Bounded(t, wait, "close the queue file", s.r.taps[0].Close)
	s.freed.Hold(t, l.Uncounted, holdFor, "closing the files frees nothing more", l)
}

// deleteNetns opens the tap in home, moves it into a namespace of its own,
// stops its queue there with a batch in vhost, then closes every reference
// the test holds to that namespace: the sender, the netlink handle, the
// namespace's file. The queue file stays open in home, and vhost holds it.
//
// The frames in the qdisc are still charged to the sender (a frame is
// orphaned only as it enters the ring), and a socket keeps its namespace
// until the last of its frames is freed: the namespace outlives every
// handle while the queue stays stopped. The guest then posts one batch of
// buffers: it gets vhost's 63, vhost takes a second batch (cons_cnt 128 =
// ring/2 wakes the queue) and the guest gets its first, and the qdisc hands
// all of its frames to the ring (tapModel). The sender is then freed and
// the namespace destroyed (cleanup_net, on a workqueue), which unregisters
// the tap: its ring purged; vhost's batch outlives it (batchOutlives).
func deleteNetns(t *testing.T, home *netenv.Env) {
	away, kill := netenv.NewDoomed(t)
	r := newRigIn(t, home, teardownSetup)
	assert.NilError(t, home.Handle.LinkSetNsFd(r.link, int(away.NS)), "move %s to a namespace of its own", tapName)
	r.e = away
	r.configure(teardownSetup.qdisc)
	var snd *traffic.Sender
	assert.NilError(t, away.Do(func() (err error) {
		snd, err = traffic.NewSender(r.link.Attrs().Index, 0)
		return err
	}))
	closeSender := sync.OnceValue(snd.Close)
	t.Cleanup(func() { closeSender() })
	s := stop(t, r, 0, snd)

	assert.NilError(t, closeSender())
	kill()
	tap := r.taps[0]
	there := func() error { _, err := tap.Flags(); return err }
	counters.Hold(t, holdFor, "the namespace, pinned by the sender's frames in the stopped qdisc", there)

	delivered, err := s.m.post(vhostnet.Batch)
	assert.NilError(t, err)
	assert.Assert(t, s.m.woken, "model: one batch of buffers wakes the queue")
	s.m.refill(0)
	assert.Assert(t, s.m.backlog == 0, "model: the qdisc hands all its frames to the ring")
	want := s.rv.got + uint64(delivered)
	r.receive(r.guests[0], s.rv, vhostnet.Batch, func(rv *receiver) bool { return rv.got >= want })
	_, err = counters.WaitFor(r.ctx, wait, tap.Gone, func(g bool) bool { return g })
	assert.NilError(t, err,
		"the namespace and its tap destroyed once the qdisc handed the sender's last frame to the ring; %v", s.queued())
	s.batchOutlives(t, "the ring purged as the destroyed namespace's tap unregistered")
	assert.Check(t, is.DeepEqual(s.rv.seqs, seqRange(0, want)),
		"the guest gets the frames from the first, in order, none twice")
}

// teardownRounds is how many times each teardown runs (counters.Rounds):
// one, as in tun (its teardownRounds).
const teardownRounds = 1
