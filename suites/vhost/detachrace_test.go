package vhost

import (
	"testing"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/taprace"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

const (
	// detachRaceFor is how long TestDetachRace moves queues under traffic.
	detachRaceFor = time.Second
	// detachRaceTries is how many races may run, each on a new rig, until
	// one whose owner tracer missed nothing judges (its fentry programs,
	// before the kprobes, were skipped on PREEMPT_RT in 1 of 8 rounds of
	// debian:7.3-rt); the last is judged, losses and all.
	detachRaceTries = 3
	// detachRaceRing is the tap's ring: small, so that a ring is often
	// full when its file is detached.
	detachRaceRing = 8
	// detachRacePause is how long a guest that found nothing sleeps, so
	// that it leaves the CPU to vhost's workers: on PREEMPT_RT a worker
	// preempted inside a run of the tracer's fentry programs made the
	// kernel skip the run another task started on that CPU.
	detachRacePause = 100 * time.Microsecond
)

// TestDetachRace races seed 000's owner check with vhost-net consumers:
// __tun_wake_queue() wakes a subqueue only for the queue file that owns its
// slot. vhost is not told of a TUNSETQUEUE detach: it keeps the file and
// takes batches from its ring until __tun_detach() purges it after
// synchronize_net(), each batch followed by tun_wake_queue(), while the slot
// already belongs to the file moved into it, whose ring may be full. A two-
// queue tap, each queue the backend of a guest that reposts buffers (pausing
// when it got nothing), traffic on both queues, and a thread that detaches
// and re-attaches the file at slot 0 as fast as it can (tuntap.MoveSlots).
// bpf/owner.c (internal/guest/tunwake) must see no wake inside a call from a
// file without its slot. Afterwards, both files attached, every queue drains
// and every frame is received, freed once (tun's and the qdisc's drops, the
// rings purged at detach, the second qdisc reset while one queue remained,
// counted on kfree_skb) or still queued. Frames change guests as the slots
// move, so a stream's order is not held here. The race is taprace.Detach's,
// with vhost-net as the consumer.
func TestDetachRace(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	taprace.Detach{
		Seed: feature.Seed000Vhost, Who: "vhost on a file",
		For: detachRaceFor, Tries: detachRaceTries, Limit: wait,
		New: newDetachTap,
		// vhost calls tun_wake_queue() once per batch of up to vhostnet.Batch.
		Calls: func(got uint64) uint64 { return (got + vhostnet.Batch - 1) / vhostnet.Batch },
	}.Run(t)
}

// newDetachTap is one try's two-queue tap, each queue the backend of a
// guest.
func newDetachTap(t *testing.T) taprace.DetachTap {
	r := newRig(t, setup{backpressure: true, qdisc: qdiscMqShort, queues: 2, ring: detachRaceRing, workers: workersSpread})
	r.steerByStream()
	return taprace.DetachTap{
		NS: int(r.e.NS), Ifindex: r.link.Attrs().Index,
		Queues:  [2]*tuntap.Device{r.taps[0], r.taps[1]},
		Senders: []*traffic.Sender{r.sender(0), r.sender(1)},
		Freed:   r.freed(),
		Consume: func(q, cpu int) taprace.Consumer {
			rv := r.receiver(false)
			rv.anyOrder = true
			return startGuest(t, r.guests[q], rv, cpu, detachRacePause)
		},
		Read: func() (taprace.Counted, error) {
			st, err := r.state()
			return taprace.Counted{Ledger: account(0, 0, st), Delivered: st.Link.TxPackets, State: st}, err
		},
	}
}
