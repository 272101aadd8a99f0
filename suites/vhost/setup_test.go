package vhost

import (
	"fmt"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

const (
	tapName = "xvtap0"
	// ring is the tap's txqueuelen unless a setup says otherwise: the size
	// of each queue's ptr_ring.
	ring = 256
	// guestQueue is the size of the guest's RX virtqueue.
	guestQueue = 256
	// ringSlack is how many slots of a ptr_ring of this size a consumer may
	// have taken without the producer seeing them free yet: ptr_ring zeroes
	// consumed slots in batches of SMP_CACHE_BYTES*2/sizeof(void *) = 16
	// (__ptr_ring_discard_one), so a "full" ring holds at least ring-15.
	ringSlack = 15
	// bigFIFO is the pfifo limit of the backpressure tests: large enough
	// that the qdisc never drops what they send.
	bigFIFO = 100000
	// shortFIFO is the pfifo limit of a race that runs for a time: what it
	// holds at the end drains in well under a second on a TCG guest.
	shortFIFO = 1000
	// wait bounds every wait of the suite on a slow (TCG) guest.
	wait = 20 * time.Second
	// holdFor is how long a state must stay unchanged to count as "nothing
	// moved" (a stopped queue, no frame freed): well over a NET_TX
	// softirq's latency, even on PREEMPT_RT (docs/design/suite-time.md).
	holdFor = 100 * time.Millisecond
	// mrgBufSize is the size of mergeable receive buffers: smaller than the
	// header and a frame (12 + 60 bytes), so every frame takes two.
	mrgBufSize = 40
)

// virtioVariants are the guest configurations the tests run with besides
// the default (VIRTIO_F_VERSION_1 only): event indexes, indirect
// descriptors, mergeable receive buffers.
var virtioVariants = []vhostnet.Config{
	{Features: vhostnet.FeatureEventIdx},
	{Features: vhostnet.FeatureIndirect},
	{Features: vhostnet.FeatureMrgRxBuf, BufSize: mrgBufSize},
}

// virtioAll is every feature of virtioVariants at once.
var virtioAll = vhostnet.Config{
	Features: vhostnet.FeatureEventIdx | vhostnet.FeatureIndirect | vhostnet.FeatureMrgRxBuf,
	BufSize:  mrgBufSize,
}

// Qdiscs at the root of the tap.
const (
	qdiscDefault = ""          // what the kernel gives a tap: pfifo_fast, or mq of pfifo_fast
	qdiscPfifo   = "pfifo"     // pfifo limit bigFIFO
	qdiscShort   = "pfifo1000" // pfifo limit shortFIFO
	qdiscFqCodel = "fq_codel"  // fq_codel with its defaults (limit 10240)
	// qdiscMqPfifo is an mq whose class 1:i+1 has a pfifo limit bigFIFO
	// for tx queue i, so each queue's backlog can be read on its own.
	qdiscMqPfifo = "mq_pfifo"
	// qdiscMqShort is qdiscMqPfifo with limits of shortFIFO, for a race
	// that runs for a time.
	qdiscMqShort = "mq_pfifo1000"
)

// setup says how to build a rig.
type setup struct {
	backpressure bool   // open the tap with IFF_BACKPRESSURE (probed; skips where missing)
	qdisc        string // root qdisc, one of the qdisc* constants
	queues       int    // tap queues, each with its own guest; 0 means 1
	ring         int    // the tap's txqueuelen (ptr_ring size); 0 means ring
	// virtio is the guests' features and buffer size (the queue size is
	// guestQueue).
	virtio      vhostnet.Config
	lateBackend bool // leave the guests detached: the test calls attach
	// workers says where the guests' vhost workers run.
	workers placement
}

// placement is where a rig's vhost workers run: a worker starts with the
// CPUs of the thread that called VHOST_SET_OWNER (vhostnet.Open).
type placement int

const (
	workersAnywhere placement = iota // where the scheduler puts them
	// workersSpread puts guest i's worker on allowed CPU i (mod their
	// number), so that no two workers share a CPU where there are enough.
	workersSpread
	// workersLast puts every worker on the last allowed CPU, away from a
	// sender pinned to the first.
	workersLast
)

// cpu is the CPU guest i's worker starts on, -1 for any.
func (p placement) cpu(all []int, i int) int {
	switch p {
	case workersSpread:
		return all[i%len(all)]
	case workersLast:
		return all[len(all)-1]
	}
	return -1
}

func (s setup) String() string {
	mode := "stock"
	if s.backpressure {
		mode = "backpressure"
	}
	q := s.qdisc
	if q == "" {
		q = "default"
	}
	if s.ring != 0 {
		q += fmt.Sprintf("_ring%d", s.ring)
	}
	for _, f := range []struct {
		bit  uint64
		name string
	}{
		{vhostnet.FeatureEventIdx, "eventidx"}, {vhostnet.FeatureIndirect, "indirect"},
		{vhostnet.FeatureMrgRxBuf, "mrgrxbuf"},
	} {
		if s.virtio.Features&f.bit != 0 {
			q += "_" + f.name
		}
	}
	if s.virtio.BufSize != 0 {
		q += fmt.Sprintf("_buf%d", s.virtio.BufSize)
	}
	return mode + "_" + q
}

// bufsPerFrame is how many receive buffers a frame takes in the guest: more
// than one only with mergeable buffers smaller than the header and a frame.
func (s setup) bufsPerFrame() int {
	size := s.virtio.BufSize
	if s.virtio.Features&vhostnet.FeatureMrgRxBuf == 0 || size == 0 {
		return 1
	}
	return (vhostnet.HdrLen + traffic.FrameLen + size - 1) / size
}
