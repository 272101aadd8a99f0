package vhost

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// TestBackpressure (Linux 7.3, IFF_BACKPRESSURE with a
// qdisc): a full ring stops the queue instead of dropping, the backlog
// waits in the qdisc, and vhost's consumption wakes the queue exactly where
// tun's rule says (tapModel): after every batch the guest takes, the frames
// the qdisc handed to the ring, the ring's occupancy and the frames the
// guest got equal the model's, and in the end received = sent - qdisc drops
// with no tun drop.
//
// The ring sizes tell the rule from its neighbours. vhost consumes
// VHOST_NET_BATCH = 64 entries at a time (drivers/vhost/net.c:105, 187) and
// the rule wakes once cons_cnt >= tx_ring.size / 2 (drivers/net/tun.c:2242),
// tx_ring.size being the txqueuelen the rig sets. With a ring of 256 the
// qdisc hands 128 frames to the ring after every second batch, with 512 it
// hands 256 after every fourth: a kernel that woke the queue after any
// consumed slot (64 after every batch) or later than ring/2 fails there.
// 128 is the boundary: 64 consumed is exactly ring/2, so the queue wakes
// after every batch, where a strict ">" would wait for the second. With 32,
// vhost's batch is the whole ring, so every batch wakes the queue (cons_cnt
// 32 >= 16 and the ring empty at once) and the qdisc hands 32: a threshold
// of a whole vhost batch would stall. The first step of each variant is one
// buffer: vhost takes its first batch from the full, stopped ring, which
// already counts (0 handed with 256 and 512, a wake with 32 and 128).
//
// The guest's virtio features change how it and vhost talk, not what vhost
// takes from the ring: with event indexes (kicks and signals through
// avail_event and used_event), indirect descriptors, or mergeable buffers
// of 40 bytes (two a frame: the guest posts twice the buffers), the ring
// of 256 wakes exactly as without them.
func TestBackpressure(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	setups := []setup{
		{backpressure: true, qdisc: qdiscPfifo, ring: 32},
		{backpressure: true, qdisc: qdiscPfifo, ring: 128},
		{backpressure: true, qdisc: qdiscPfifo, ring: 256},
		{backpressure: true, qdisc: qdiscPfifo, ring: 512},
		{backpressure: true, qdisc: qdiscFqCodel, ring: 256},
		{backpressure: true, qdisc: qdiscFqCodel, ring: 512},
	}
	for _, v := range virtioVariants {
		setups = append(setups, setup{backpressure: true, qdisc: qdiscPfifo, ring: 256, virtio: v})
	}
	for _, s := range setups {
		s.lateBackend = true
		t.Run("SlowGuest/"+s.String(), func(t *testing.T) { slowGuest(t, s) })
	}
}

// slowGuest fills the ring and the qdisc with vhost detached, attaches it,
// and lets the guest take one buffer, then batches of min(64, ring) buffers
// (so that vhost takes exactly one batch from a full, stopped ring per step,
// and never while the qdisc refills it), checking the kernel against
// tapModel after every step.
func slowGuest(t *testing.T, s setup) {
	r := newRig(t, s)
	run := fillStopped(t, r)
	for step := 0; run.m.left() > 0; step++ {
		run.step(t, step)
	}
	observe.Shows(t, feature.Seed000Vhost, fmt.Sprintf("ring %d: the full ring stopped the queue "+
		"and vhost's consumption woke it where tun's rule says, every step: handed %v", r.ring, run.handed))
	a := account(run.sent, run.rv.got, run.st)
	assert.Assert(t, a.Balanced(), "%v", a)
	assert.Equal(t, run.rv.got, run.sent-run.st.Qdisc.Drops, "%v", a)
	if s.qdisc == qdiscPfifo {
		assert.Equal(t, run.st.Qdisc.Drops, uint64(0), "pfifo (limit %d) drops nothing: %v", bigFIFO, a)
	}
}

// slowRun is a slowGuest run: the kernel's state after the last step, the
// model's, and what the qdisc handed to the ring after each step.
type slowRun struct {
	r      *rig
	m      *tapModel
	rv     *receiver
	sent   uint64
	st     state
	handed []int64
}

// fillStopped sends enough frames for three wakes and a last, partial
// refill with vhost detached, and checks the full ring stopped the queue
// instead of dropping: the ring full, the rest in the qdisc.
func fillStopped(t *testing.T, r *rig) *slowRun {
	size := r.ring
	wakeStep := max(size/2, min(size, vhostnet.Batch))
	sent := sendAll(t, r.sender(0), size+3*wakeStep+wakeStep/2)
	r.waitState("a full ring and a stopped queue", func(s state) bool { return inDevice(sent, 0, s) <= int64(size) })
	st := r.steady()
	a := accountInFlight(sent, 0, st)
	t.Logf("before vhost attaches: %v", a)
	assert.Equal(t, st.Link.TxDropped, uint64(0), "a full ring stops the queue instead of dropping; %v", a)
	assert.Equal(t, a.InDevice, uint64(size), "the ring (%d) is full; %v", size, a)
	assert.Assert(t, st.Qdisc.Qlen > 0, "the backlog is in the qdisc; %v", a)
	return &slowRun{r: r, m: newTapModel(size, int(st.Qdisc.Qlen), r.bufs), rv: r.receiver(false), sent: sent, st: st}
}

// step attaches vhost and posts one buffer (step 0), or posts one batch of
// buffers, and checks the kernel against the model: what the guest got,
// what the qdisc handed to the ring, what the ring and vhost's batch hold.
func (run *slowRun) step(t *testing.T, step int) {
	r, m := run.r, run.m
	k := r.bufs * min(vhostnet.Batch, m.size)
	if step == 0 {
		r.attach(0)
		k = r.bufs
	}
	delivered, err := m.post(k)
	assert.NilError(t, err, "step %d", step)
	why := fmt.Sprintf("step %d, %d guest buffers: %s", step, k, m.expect())
	want := run.rv.got + uint64(delivered)
	r.receive(r.guests[0], run.rv, k, func(rv *receiver) bool { return rv.got >= want })

	prev, woke := run.st, m.woken
	if woke {
		run.waitRefill(t, why)
	}
	st := r.steady()
	var wantHanded int64
	if woke {
		wantHanded = int64(m.refill(int(st.Qdisc.Drops - prev.Qdisc.Drops)))
	}
	run.st, run.handed = st, append(run.handed, fromQdisc(prev, st))
	a := accountInFlight(run.sent, run.rv.got, st)
	seen := fmt.Sprintf("%s\nseen: %d handed to the ring (qdisc backlog %d → %d, qdisc drops %d → %d); "+
		"handed after each step so far: %v\n%v",
		why, run.handed[step], prev.Qdisc.Qlen, st.Qdisc.Qlen, prev.Qdisc.Drops, st.Qdisc.Drops, run.handed, a)
	assert.Equal(t, run.handed[step], wantHanded, seen)
	if !woke {
		assert.Equal(t, st.Qdisc.Drops, prev.Qdisc.Drops, "the qdisc of a stopped queue does not run: %s", seen)
	}
	assert.Equal(t, run.rv.got, want, "frames the guest got: %s", seen)
	assert.Equal(t, a.InDevice, uint64(m.ring+m.held),
		"frames in the ring (%d) and in vhost's batch (%d): %s", m.ring, m.held, seen)
	assert.Equal(t, st.Link.TxDropped, uint64(0), "tun drops nothing with backpressure: %s", seen)
}

// waitRefill waits, after a step the model says woke the queue, until the
// qdisc handed the ring its free slots or ran empty.
func (run *slowRun) waitRefill(t *testing.T, why string) {
	prev, free := run.st, int64(run.m.size-run.m.ring)
	last, err := counters.WaitFor(run.r.ctx, wait, run.r.state, func(s state) bool {
		return s.Qdisc.Qlen == 0 || fromQdisc(prev, s) >= free
	})
	if err != nil {
		t.Fatalf("%s\nseen: the qdisc handed %d frames to the ring within %v; %v\n%v",
			why, fromQdisc(prev, last), wait, last, accountInFlight(run.sent, run.rv.got, last))
	}
}

// fromQdisc is how many frames the qdisc handed to the device between two
// states: what left its backlog minus what it dropped.
func fromQdisc(prev, s state) int64 {
	return int64(prev.Qdisc.Qlen) - int64(s.Qdisc.Qlen) - int64(s.Qdisc.Drops-prev.Qdisc.Drops)
}
