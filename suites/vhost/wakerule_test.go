package vhost

import (
	"fmt"

	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// tapModel is what Linux 7.3 does with a tap opened with IFF_BACKPRESSURE,
// a qdisc at its root and vhost-net as its reader, one step at a time, so a
// test can predict exactly when the stopped queue wakes and how many frames
// the qdisc then hands to the ring. Line numbers are in Debian's 7.3.4
// source (linux-source-7.3).
//
//   - Stop: tun_net_xmit (drivers/net/tun.c:1129-1139) produces into the
//     ptr_ring and stops the queue when the ring is full after that produce.
//   - Wake: __tun_wake_queue (drivers/net/tun.c:2217-2248), called with the
//     number of entries just consumed, adds them to tfile->cons_cnt while the
//     queue is stopped and wakes it once cons_cnt >= tx_ring.size / 2 or the
//     ring is empty (__ptr_ring_empty), resetting cons_cnt to 0.
//   - Consume: vhost_net_buf_produce (drivers/vhost/net.c:179-194) takes up
//     to VHOST_NET_BATCH = 64 (net.c:105) entries into vhost's own batch with
//     __ptr_ring_consume_batched and calls tun_wake_queue(file, taken) once
//     (tun.c:3899-3920). handle_rx peeks at the next entry (net.c:1202)
//     before it looks for a guest buffer (get_rx_bufs, net.c:1208), and the
//     peek takes a new batch only when vhost's is empty (vhost_net_buf_peek,
//     net.c:220-233): a batch emptied by the last buffer is replaced at once.
//   - Refill: the wake schedules the qdisc, which dequeues into the ring until
//     it is full (and stops the queue again) or the qdisc is empty.
//
// ptr_ring hands consumed slots back to the producer 16 at a time (r->batch =
// 2*SMP_CACHE_BYTES/sizeof(void *) in __ptr_ring_set_size,
// include/linux/ptr_ring.h:506-517, for rings of 32 and more, and at the
// wrap); every count the model consumes from a full ring is a multiple of
// 16, so the free slots it counts are the ones the producer sees.
//
// The rule's second clause (an empty ring) never decides alone here: the
// queue only stops on a full ring and every entry taken after that counts,
// so the ring cannot run empty before ring/2 were counted (a full ring may
// hold up to 15 consumed slots not freed yet, ptr_ring.h:311, which leaves
// more than ring/2 entries in rings of 32 and more). With a ring of 64 or
// less, vhost's batch takes the whole ring and both clauses hold at once.
type tapModel struct {
	size    int  // the ptr_ring's size: the tap's txqueuelen
	ring    int  // entries in the ptr_ring
	backlog int  // frames in the qdisc
	held    int  // entries in vhost's batch, taken from the ring, not delivered
	bufs    int  // receive buffers the guest posted that vhost has not filled
	per     int  // receive buffers a frame takes (mergeable buffers), ≥ 1
	stopped bool // the queue is stopped
	cons    int  // tfile->cons_cnt: entries consumed since the queue stopped
	woken   bool // woken, and the qdisc has not run yet (see refill)

	// What the last post did, for failure messages.
	took    int  // entries vhost took from the ring
	counted int  // cons_cnt its last batch reached, 0 if the queue was running
	emptied bool // whether its last batch left the ring empty
}

// newTapModel is a full ring with the queue stopped and backlog frames in
// the qdisc, vhost not attached yet, and a guest whose frames take per
// receive buffers each.
func newTapModel(size, backlog, per int) *tapModel {
	return &tapModel{size: size, ring: size, backlog: backlog, per: per, stopped: true}
}

// left is how many frames the guest has yet to receive.
func (m *tapModel) left() int { return m.ring + m.held + m.backlog }

// threshold is the cons_cnt that wakes the queue (tun.c:2242).
func (m *tapModel) threshold() int { return m.size / 2 }

// post is the guest posting k receive buffers: handle_rx fills them from
// its batch, per buffers a frame (get_rx_bufs finds nothing when fewer are
// left), taking a new batch from the ring whenever its batch is empty.
// It returns how many frames the guest gets. A step whose outcome would
// depend on timing is an error: a batch taken after a wake but before the
// qdisc refilled the ring, or buffers left waiting while frames remain (vhost
// would take them as the qdisc refills the ring).
func (m *tapModel) post(k int) (int, error) {
	m.bufs += k
	m.took, m.counted, m.emptied = 0, 0, false
	delivered := 0
	for {
		if m.held == 0 {
			if m.woken {
				return delivered, fmt.Errorf("model: vhost needs a new batch before the qdisc refilled the ring " +
					"after the wake: post fewer buffers at a time")
			}
			m.take()
			if m.held == 0 {
				break
			}
		}
		if m.bufs < m.per {
			break
		}
		m.held--
		m.bufs -= m.per
		delivered++
	}
	if m.bufs >= m.per && m.left() > 0 {
		return delivered, fmt.Errorf("model: %d buffers wait while %d frames remain", m.bufs, m.left())
	}
	return delivered, nil
}

// take is vhost_net_buf_produce followed by __tun_wake_queue.
func (m *tapModel) take() {
	n := min(vhostnet.Batch, m.ring)
	m.ring -= n
	m.held += n
	m.took += n
	if !m.stopped || n == 0 {
		return
	}
	m.cons += n
	m.counted, m.emptied = m.cons, m.ring == 0
	if m.cons >= m.threshold() || m.ring == 0 {
		m.stopped, m.cons, m.woken = false, 0, true
	}
}

// refill is the qdisc's run after a wake: dropped is what the qdisc dropped
// on the way (fq_codel drops at dequeue; only the kernel knows how many). It
// returns how many frames the qdisc hands to the ring.
func (m *tapModel) refill(dropped int) int {
	m.backlog -= dropped
	n := min(m.size-m.ring, m.backlog)
	m.ring += n
	m.backlog -= n
	m.stopped = m.ring == m.size
	m.woken = false
	return n
}

// expect says what the rule makes of the last post, for a failure message;
// call it before refill.
func (m *tapModel) expect() string {
	rule := fmt.Sprintf("tun's rule: wake at cons_cnt %d (ring/2) or an empty ring", m.threshold())
	switch {
	case m.took == 0:
		return fmt.Sprintf("vhost took nothing from the ring: want nothing handed to it (%s)", rule)
	case m.counted == 0:
		return fmt.Sprintf("vhost took %d entries while the queue was running: want nothing handed to the ring (%s)",
			m.took, rule)
	case m.woken:
		return fmt.Sprintf("vhost took %d entries from the stopped queue's ring: cons_cnt %d, ring empty %v, "+
			"so the queue wakes and the qdisc fills the ring's %d free slots or hands its whole backlog (%s)",
			m.took, m.counted, m.emptied, m.size-m.ring, rule)
	default:
		return fmt.Sprintf("vhost took %d entries from the stopped queue's ring: cons_cnt %d < %d with %d entries left, "+
			"so the queue stays stopped and the qdisc hands nothing (%s)",
			m.took, m.counted, m.threshold(), m.ring, rule)
	}
}
