package tun

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/margin"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

const (
	// pacedSndbuf is the SO_SNDBUF of the paced senders; the kernel
	// doubles it (sk_sndbuf 8192 bytes, about ten 60-byte frames at their
	// truesize).
	pacedSndbuf = 4096
	// pacedFrames is how many frames a paced sender sends.
	pacedFrames = 200
)

// TestPacing: what seed 000's "lost: 0 pps" means for a sender that can
// wait, a blocking AF_PACKET socket with a small send buffer, sending to a
// tap whose reader is idle at first.
//
// A full qdisc never makes a sender wait: __dev_xmit_skb enqueues or
// drops, and packet_snd returns a drop (NET_XMIT_DROP) as ENOBUFS. The one
// wait is the send buffer's: sock_alloc_send_pskb charges each frame's
// truesize to sk_wmem_alloc and sleeps while it is at sk_sndbuf; the
// charge goes back when the frame is freed or orphaned, and tun orphans a
// frame only as it enters the ring. So with the flag the stopped queue
// keeps the qdisc's frames charged: once they fill the buffer the sender
// waits, and nothing is lost anywhere (sndbuf_fills_first). A pfifo that
// fills first drops and refuses instead (qdisc_fills_first); with the flag
// off tun tail-drops and the sender never waits (stock).
func TestPacing(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	t.Run("backpressure/sndbuf_fills_first", func(t *testing.T) {
		pacedWaits(t, tapOpts{ring: 16, limit: 1000, flags: tuntap.IFFBackpressure})
	})
	for _, tc := range []struct {
		name string
		o    tapOpts
	}{
		{"backpressure/qdisc_fills_first", tapOpts{ring: 16, limit: 4, flags: tuntap.IFFBackpressure}},
		{"stock", tapOpts{ring: 16, limit: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) { pacedNoWait(t, tc.o) })
	}
}

// pacedWaits: the sender waits with the reader idle, the qdisc holding a
// send buffer's worth, and finishes as the reader reads; nothing is lost.
func pacedWaits(t *testing.T, o tapOpts) {
	rig := newTap(t, o)
	p := rig.startPaced(t, pacedFrames)
	sndbuf, err := p.s.SendBuffer()
	assert.NilError(t, err)
	st := rig.blocked(t, p, pacedFrames)
	t.Logf("the sender waits with the qdisc holding %d frames (sk_sndbuf %d bytes); %v", st.Q.Qlen, sndbuf, st)
	assert.Check(t, st.Q.Qlen <= uint64(sndbuf/traffic.FrameLen),
		"qdisc backlog beyond what the send buffer can charge (%d bytes, each frame more than %d); %v",
		sndbuf, traffic.FrameLen, st)
	assert.Check(t, st.Q.Qlen < uint64(o.limit), "the qdisc filled before the send buffer; %v", st)
	assert.Check(t, is.Equal(st.Q.Drops+st.Link.TxDropped, uint64(0)), "drops while the sender waits; %v", st)
	observe.Shows(t, feature.Seed000Tun, fmt.Sprintf(
		"a blocking sender waited behind the stopped queue, %d frames in the qdisc, none dropped", st.Q.Qlen))

	r := traffic.NewReader(rig.dev.File)
	readExactly(t, r, pacedFrames)
	got := pacedFrames + rig.drain(t, r)
	p.wait(t, "with the reader reading")
	st = rig.waitState(t, "empty qdisc", func(now state) bool { return now.Q.Qlen == 0 })
	l := account(p.res.Handed(), got, st, 0)
	assert.Assert(t, l.Balanced(), "%v", l)
	assert.Check(t, is.Equal(got, pacedFrames), "frames read; %v", l)
	assert.Check(t, is.Equal(p.res, traffic.Result{Sent: pacedFrames}), "every frame sent, none refused; %v", l)
	assert.Check(t, is.Equal(st.Link.TxDropped+st.Q.Drops, uint64(0)), "tun and qdisc drops; %v", l)
	checkStreams(t, l, sentBy(p.s), r)
	checkFirst(t, r, 1, got)
}

// pacedNoWait: the sender finishes with the reader idle; its frames meet
// their fate (idleFate), the qdisc's drops refused as ENOBUFS.
func pacedNoWait(t *testing.T, o tapOpts) {
	rig := newTap(t, o)
	p := rig.startPaced(t, pacedFrames)
	p.wait(t, "with the reader idle")
	fx := rig.waitFill(t, p.s, p.res, pacedFrames)
	l := fx.ledger()
	assert.Assert(t, l.Balanced(), "%v", l)
	assert.Check(t, is.Equal(p.res.Refused, uint64(fx.fate.qdiscDrops)), "ENOBUFS are the qdisc's drops; %v", l)
	assert.Check(t, is.Equal(fx.st.Q.Drops, uint64(fx.fate.qdiscDrops)), "qdisc drops; %v", l)
	r := traffic.NewReader(rig.dev.File)
	l, _ = fx.readBack(t, r, r, 0)
	t.Logf("%+v; %v", p.res, l)
}

// paced is a paced sender sending on a goroutine of its own.
type paced struct {
	s        *traffic.Sender
	res      traffic.Result // once wait returned
	finished atomic.Bool
	done     chan error
}

// startPaced starts a paced sender of stream 1 sending n frames.
func (rig *tapRig) startPaced(t testing.TB, n int) *paced {
	t.Helper()
	p := &paced{s: rig.pacedSender(t, 1), done: make(chan error, 1)}
	go func() {
		res, err := p.s.Send(n)
		p.res = res
		p.finished.Store(true)
		p.done <- err
	}()
	return p
}

// wait waits, at most waitLimit, for the sender to finish.
func (p *paced) wait(t testing.TB, what string) {
	t.Helper()
	start := time.Now()
	select {
	case err := <-p.done:
		margin.Note(waitLimit, time.Since(start), false)
		assert.NilError(t, err, "%s: after %d sent, %d refused", what, p.res.Sent, p.res.Refused)
	case <-time.After(waitLimit):
		margin.Note(waitLimit, waitLimit, true)
		t.Fatalf("%s: the sender did not finish within %v", what, waitLimit)
	}
}

// blocked waits until the counters hold still for holdFor and returns
// them: the sender waits for room, with frames in the qdisc. A sender
// that finished instead did not wait: its frames' fate is judged (the
// flag kept and stock tail-drop is seed 000 absent) and the test fails.
func (rig *tapRig) blocked(t *testing.T, p *paced, n int) state {
	t.Helper()
	st, err := counters.WaitSteady(context.Background(), waitLimit, holdFor, rig.state)
	assert.NilError(t, err, "waiting for the counters to hold still with the reader idle")
	if p.finished.Load() {
		p.wait(t, "with the reader idle")
		rig.reached(t, state{}, n)
		t.Fatalf("the sender did not wait with the reader idle: %+v; %v", p.res, st)
	}
	assert.Assert(t, st.Q.Qlen > 0, "the sender stopped with nothing in the qdisc; %v", st)
	return st
}

// pacedSender opens a blocking sender with a send buffer of pacedSndbuf
// that waits at most waitLimit for room.
func (rig *tapRig) pacedSender(t testing.TB, stream uint32) *traffic.Sender {
	t.Helper()
	var s *traffic.Sender
	assert.NilError(t, rig.e.Do(func() (err error) {
		s, err = traffic.NewPacedSender(rig.ifindex, stream, pacedSndbuf, waitLimit)
		return err
	}), "paced sender on %s", tapName)
	t.Cleanup(func() { s.Close() })
	return s
}
