package vhost

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// stoppedBacklog is how many frames a stopped queue's qdisc holds, beyond
// its full ring, where the tests stop it with a batch in vhost (stop).
const stoppedBacklog = 64

// batchStop is what stopWithBatch left: the frames the kernel took, and
// the receiver of the guest that got the first of them.
type batchStop struct {
	sent uint64
	rv   *receiver
}

// stopWithBatch sends n frames with snd to tap queue q of a backpressure
// rig whose guest q is not attached yet (setup.lateBackend), and brings the
// queue to a stop with a batch in vhost: the queue's ring full and its txq
// stopped, the rest of the n frames in the qdisc, then vhost attached with
// one guest buffer. vhost takes a whole batch out of the full ring (too few
// to wake the queue), fills the one buffer with seq 0 and holds the rest of
// its batch.
func (r *rig) stopWithBatch(q int, snd *traffic.Sender, n int) batchStop {
	t := r.tb
	t.Helper()
	sent := sendAll(t, snd, n)
	r.waitState("a full ring and a stopped queue", func(s state) bool { return inDevice(sent, 0, s) >= int64(r.ring) })
	a := account(sent, 0, r.steady())
	a.InDevice = uint64(r.ring)
	assert.Assert(t, a.Balanced(), "the ring holds %d, the qdisc the rest: %v", r.ring, a)
	r.attach(q)
	rv := r.receiver(true)
	r.receive(r.guests[q], rv, 1, func(rv *receiver) bool { return rv.got == 1 })
	assert.Check(t, is.DeepEqual(rv.seqs, []uint64{0}))
	return batchStop{sent: sent, rv: rv}
}

// stopped is a rig whose queue stopped with a batch in vhost (stop).
type stopped struct {
	r     *rig
	freed *dropmon.Freed
	rv    *receiver
	sent  uint64
	// m says where the frames the guest has not got are: in the ring, in
	// vhost's batch, in the qdisc.
	m *tapModel
}

// stop brings queue q of r (backpressure, a qdisc, the guest not attached)
// to a stopped queue with a batch in vhost (stopWithBatch), sending
// r.ring+stoppedBacklog frames with snd, and checks it stays there as
// tapModel says: vhost took a batch of 64 from the full ring (too few to
// wake the queue) and the guest got the first, so the ring holds ring-64,
// vhost's batch 63, the qdisc stoppedBacklog; nothing dropped, nothing
// freed.
func stop(t *testing.T, r *rig, q int, snd *traffic.Sender) *stopped {
	t.Helper()
	freed := r.freed()
	b := r.stopWithBatch(q, snd, r.ring+stoppedBacklog)
	m := newTapModel(r.ring, stoppedBacklog, 1)
	_, err := m.post(1)
	assert.NilError(t, err)
	s := &stopped{r: r, freed: freed, rv: b.rv, sent: b.sent, m: m}
	s.holdStopped("vhost took its batch", 0)
	l := accountInFlight(b.sent, b.rv.got, r.mustState())
	assert.Assert(t, l.InDevice == uint64(m.ring+m.held),
		"the ring (%d) and vhost's batch (%d) hold all but the frames the guest got and the qdisc's; %v", m.ring, m.held, l)
	return s
}

// holdStopped checks, for holdFor, that nothing moves after what: the
// queue stays stopped with the qdisc's backlog, nothing is dropped, and
// exactly freed frames were freed on the tap.
func (s *stopped) holdStopped(what string, freed uint64) {
	t := s.r.tb
	t.Helper()
	counters.Hold(t, holdFor, what, func() error {
		st := s.r.mustState()
		f, err := s.freed.Count()
		still := st.Qdisc.Qlen == uint64(s.m.backlog) && st.Link.TxDropped == 0 && st.Qdisc.Drops == 0 && f.N == freed
		if err == nil && !still {
			err = fmt.Errorf("want the queue stopped with %d in the qdisc, nothing dropped, %d freed; %v; %v; %v",
				s.m.backlog, freed, st, f, s.queued())
		}
		return err
	})
}

// queued is the ledger while the tap is there: what tapModel says is in
// the ring and vhost's batch (in device) and in the qdisc.
func (s *stopped) queued() counters.Accounting {
	return counters.Accounting{
		Sent:         s.sent,
		Received:     s.rv.got,
		InDevice:     uint64(s.m.ring + s.m.held),
		QdiscBacklog: uint64(s.m.backlog),
	}
}

// readTap reads up to n frames from tap queue file f directly (the tun
// read() path, not vhost), each with its virtio-net header, and returns
// their sequence numbers in order. It stops early when no frame comes for
// quiet.
func readTap(tb testing.TB, f *os.File, n int, quiet time.Duration) []uint64 {
	tb.Helper()
	buf := make([]byte, 65536)
	var seqs []uint64
	for len(seqs) < n {
		assert.NilError(tb, f.SetReadDeadline(time.Now().Add(quiet)))
		m, err := f.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		assert.NilError(tb, err, "read tap")
		assert.Assert(tb, m == vhostnet.HdrLen+traffic.FrameLen,
			"read %d bytes from the tap, want %d", m, vhostnet.HdrLen+traffic.FrameLen)
		_, seq, err := traffic.Parse(buf[vhostnet.HdrLen:m])
		assert.NilError(tb, err)
		seqs = append(seqs, seq)
	}
	return seqs
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}
