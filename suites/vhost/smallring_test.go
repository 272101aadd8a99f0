package vhost

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpus"
	"github.com/xmitcheck/xmitcheck/internal/guest/kcsan"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/taprace"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
	"github.com/xmitcheck/xmitcheck/internal/guest/tunwake"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

const (
	// smallRingFor is how long the sender races vhost on each subtest
	// (longer under KCSAN: kcsan.For).
	smallRingFor = 1500 * time.Millisecond
	// smallRingPause is how long the guest sleeps after a poll that got
	// nothing: it shares the sender's CPU, and leaves it to the sender.
	smallRingPause = 100 * time.Microsecond
	// suspectEvery is the window in which vhost must deliver a frame while
	// the guest holds posted buffers and the qdisc holds frames; a window
	// without one is looked at for stallBound more.
	suspectEvery = 50 * time.Millisecond
	// stallBound is how long nothing may be delivered after a suspicious
	// window, the guest holding buffers and the qdisc frames: a stall is
	// for good, anything else moves within milliseconds.
	stallBound = time.Second
	// busyPoll is vhost's RX busy-poll timeout, in microseconds: the worker
	// polls the empty ring this long before it sleeps, longer than the
	// 50–300 µs vhost takes a frame on a TCG guest.
	busyPoll = 200
)

// smallRings are the rings raced: one vhost batch (up to vhostnet.Batch
// entries) empties any of them.
var smallRings = []int{1, 2, 4}

// smallRingPolls are vhost's RX busy-poll timeouts raced, in microseconds:
// none, as qemu runs vhost by default (the worker sleeps on an empty ring
// until sk_data_ready), and busyPoll.
var smallRingPolls = []uint32{0, busyPoll}

// TestRaceSmallRing races seed 000's handshake with vhost-net as the
// consumer, on the smallest rings. tun_net_xmit() stops the queue when its
// produce filled the ring, then, after smp_mb__after_atomic(), looks at the
// ring again and wakes the queue over a free slot. vhost's handle_rx() takes
// the ring's entries in vhost_net_buf_produce(): under the consumer lock,
// __ptr_ring_consume_batched() moves up to vhostnet.Batch of them into vhost's
// own batch, then tun_wake_queue(file, n) → __tun_wake_queue(tun, tfile, n)
// issues smp_mb() and, only if the queue is stopped, adds n to cons_cnt and
// wakes at ring/2 or an empty ring (in 7.3 this is the wake's only vhost
// path; tun_msg_ctl carries vhost's TX batches into tun_sendmsg()). The
// window raced is the producer's, between its "full" check
// (__ptr_ring_check_produce() == -ENOSPC) and netif_tx_stop_queue(): a batch
// taken there empties the ring in one step, whatever its size here, and
// sees the queue running, so it wakes nothing. Without the second look the
// producer then stops the queue over an empty ring; its sk_data_ready()
// wakes vhost, which finds nothing, and nothing else produces or wakes: a
// stall for good, which tun has no watchdog to undo.
//
// To be in the window vhost must be taking entries while the producer runs,
// not woken by the sk_data_ready() that comes after the stop: it is, while
// its handle_rx() loop finds entries and buffers, and RX busy polling
// (busyPoll) keeps the worker polling the empty ring as well; each ring is
// raced with and without. The vhost worker has the last CPU to itself
// (workersLast), opposite the one AF_PACKET sender on the first; the guest
// shares the sender's CPU and reposts every free buffer, sleeping
// smallRingPause after a poll that got nothing, so that vhost never waits
// for a buffer and never for its CPU. A stall is nothing delivered (tun
// counts tx_packets in the recvmsg vhost calls) for suspectEvery+stallBound
// while the guest kept buffers posted and got nothing, and the qdisc holds
// frames; the race stops at the first. One that came too late for that shows
// as nothing delivered for stallBound while the qdisc drains. A read(2) of
// the tap then tells whether the ring was empty. Every frame must be
// accounted for, each stream arrive in order, and tun drop no more frames
// than wakes came over a full ring (internal/guest/tunwake).
// docs/design/tun-race-small-ring.md has the measurements.
func TestRaceSmallRing(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	for _, ring := range smallRings {
		for _, poll := range smallRingPolls {
			t.Run(fmt.Sprintf("ring=%d/poll=%dus", ring, poll), func(t *testing.T) { raceSmallRing(t, ring, poll) })
		}
	}
}

func raceSmallRing(t *testing.T, ring int, poll uint32) {
	// A P for the sender, the guest and this goroutine, which watches.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 4)))
	r := newRig(t, setup{backpressure: true, qdisc: qdiscShort, ring: ring, workers: workersLast})
	assert.NilError(t, r.guests[0].SetBusyPoll(poll))
	sendCPU, err := smallRingSender()
	assert.NilError(t, err)
	burst := r.watchBurstDrops()
	sr := &taprace.SmallRing{
		Sender: r.sender(0), SenderCPU: sendCPU,
		Read:  r.counted,
		Burst: func() (uint64, error) { return burst(), nil },
		Every: suspectEvery, Bound: stallBound, Limit: wait,
	}
	tr := tunwake.Trace(t, int(r.e.NS), r.link.Attrs().Index)
	sr.Consumer = startGuest(t, r.guests[0], r.receiver(false), sendCPU, smallRingPause)
	watched := kcsan.Watch(t, feature.Seed000Vhost)

	res := sr.Race(t, kcsan.For(smallRingFor))
	st, start := res.Stall, res.Start

	if st == nil {
		st = drain(t, sr)
	}
	var empty string
	if st != nil {
		empty = probeRing(t, sr, r.taps[0])
	}
	l, last := sr.Settle(t, st != nil)
	secs := res.Took.Seconds()
	t.Logf("ring=%d, poll=%dus: %.0f sent/s, %.0f received/s, %d idle polls; "+
		"%d windows of %v without delivery that moved again; %v",
		ring, poll, float64(l.Sent)/secs, float64(l.Received)/secs, last.Idle, res.Suspects, suspectEvery, l)
	// The stall last: the judge quotes a failed test's last line.
	w := tunwake.CheckDrops(t, tr, last.Ledger.DeviceDrops, l)
	watched(w.All)
	assert.Check(t, l.Balanced(), "%v", l)
	if st != nil {
		t.Errorf("stall (ring=%d, poll=%dus): nothing delivered for %v with the guest holding buffers (%d idle polls), %s, "+
			"the qdisc holding %d, from %v into the race, seen at %v%s; %v; %v",
			ring, poll, st.Seen.Sub(st.Since).Round(time.Millisecond), st.Obs.Idle-st.From.Idle, empty,
			st.Obs.Ledger.QdiscBacklog, st.Since.Sub(start).Round(time.Millisecond),
			st.Seen.Sub(start).Round(time.Millisecond), st.When, st.Obs.State, l)
	}
}

// smallRingSender is the sender's CPU: the first the process may use, away
// from the vhost worker on the last; with one CPU, any.
func smallRingSender() (int, error) {
	all, err := cpus.Allowed()
	if err != nil || len(all) < 2 {
		return -1, err
	}
	return all[0], nil
}

// counted reads the tap's and its qdisc's counters for taprace.
func (r *rig) counted() (taprace.Counted, error) {
	st, err := r.state()
	return taprace.Counted{Ledger: account(0, 0, st), Delivered: st.Link.TxPackets, State: st}, err
}

// drain waits, after the race, until the qdisc is empty, as long as each
// stallBound delivers something. A queue that delivers nothing for
// stallBound while the guest polls and the qdisc holds frames stalled too
// late in the race for the watch to tell, or after it (the qdisc's runs
// still race vhost), and drain returns it.
func drain(t *testing.T, sr *taprace.SmallRing) *taprace.Stall {
	cur, err := sr.Look()
	assert.NilError(t, err)
	since := time.Now()
	for cur.Ledger.QdiscBacklog > 0 {
		moved := func(l taprace.SmallLook) bool { return l.Ledger.QdiscBacklog == 0 || l.Delivered > cur.Delivered }
		got, err := counters.WaitFor(context.Background(), stallBound, sr.Look, moved)
		if err != nil && got.Ledger.QdiscBacklog > 0 && got.Idle > cur.Idle {
			return &taprace.Stall{Since: since, Seen: time.Now(), From: cur, Obs: got, When: " while the qdisc drained"}
		}
		assert.NilError(t, err, "the qdisc draining after the race (the guest polled %d times)", got.Idle-cur.Idle)
		cur, since = got, time.Now()
	}
	return nil
}

// probeRing reads the tap once, non-blocking, through tun's read(2) path:
// EAGAIN says the stalled queue's ring is empty. A frame read is counted
// as delivered; it would mean vhost left frames in the ring.
func probeRing(t *testing.T, sr *taprace.SmallRing, tap *tuntap.Device) string {
	rc, err := tap.SyscallConn()
	assert.NilError(t, err)
	buf := make([]byte, 65536)
	var rerr error
	assert.NilError(t, rc.Control(func(fd uintptr) { _, rerr = unix.Read(int(fd), buf) }))
	switch {
	case errors.Is(rerr, unix.EAGAIN):
		return "the ring empty (a read of the tap got EAGAIN)"
	case rerr != nil:
		t.Fatalf("read the tap: %v", rerr)
	}
	sr.Others++
	return "the ring holding a frame vhost did not take (a read of the tap got it)"
}

// consumer is the guest: pinned to a CPU, it reposts every free RX buffer
// and collects what vhost used, in a loop that sleeps only after a poll
// that got nothing (for pause, if set), so that vhost always has buffers;
// the receiver checks each frame and the order of each stream. Ring and
// receiver are its own until close.
type consumer struct {
	g    *vhostnet.Net
	rv   *receiver
	got  atomic.Uint64 // frames received
	idle atomic.Uint64 // polls that got nothing while vhost held posted buffers
	// pause, when set, is how long the guest sleeps after a poll that got
	// nothing: a guest that need not be in a window leaves the CPU to vhost.
	pause time.Duration
	loop  *cpus.Loop
}

// startGuest starts the consumer of guest g, whose frames rv checks, on
// cpu, pausing for pause after each poll that got nothing.
func startGuest(t *testing.T, g *vhostnet.Net, rv *receiver, cpu int, pause time.Duration) *consumer {
	c := &consumer{g: g, rv: rv, pause: pause}
	c.loop = cpus.Start(cpu, c.poll)
	t.Cleanup(func() { c.close() })
	return c
}

func (c *consumer) poll(stopped func() bool) error {
	for !stopped() {
		if free := c.g.RX.Free(); free > 0 {
			if _, err := c.g.Post(free); err != nil {
				return err
			}
		}
		n, err := c.g.Receive(c.rv.check)
		if err != nil {
			return err
		}
		if c.rv.first != nil {
			return c.rv.first
		}
		if n > 0 {
			c.got.Add(uint64(n))
		} else if c.g.RX.Posted() > 0 {
			c.idle.Add(1)
			if c.pause > 0 {
				time.Sleep(c.pause)
			}
		}
	}
	return nil
}

// close stops the guest and returns its error; later calls return the
// same.
func (c *consumer) close() error { return c.loop.Stop() }

// Got is how many frames the guest received so far (taprace.Consumer).
func (c *consumer) Got() uint64 { return c.got.Load() }

// Stop stops the guest and returns every frame its receiver got, and its
// error (taprace.Consumer).
func (c *consumer) Stop() (uint64, error) {
	err := c.close()
	return c.rv.got, err
}

// Idle is how many polls got nothing while vhost held posted buffers, so
// far (taprace.Poller).
func (c *consumer) Idle() uint64 { return c.idle.Load() }
