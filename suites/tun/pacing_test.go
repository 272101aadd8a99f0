package tun

import (
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/margin"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
)

// pacedSndbuf is the SO_SNDBUF of the paced senders; the kernel doubles it
// (sk_sndbuf 8192 bytes, about ten 60-byte frames at their truesize).
const pacedSndbuf = 4096

// TestPacing holds what seed 000 promises a sender that can wait ("lost:
// 0 pps" with a qdisc): a blocking AF_PACKET socket with a small send
// buffer, N frames to a tap whose reader is idle at first.
//
// A full qdisc never makes a sender wait, blocking or not: __dev_xmit_skb
// (net/core/dev.c) enqueues or drops, and a drop (NET_XMIT_DROP) is what
// packet_snd (net/packet/af_packet.c) returns as ENOBUFS. The one wait on
// the way is the send buffer's: packet_snd allocates each frame with
// sock_alloc_send_pskb (net/core/sock.c), which charges its truesize to
// sk_wmem_alloc and on a blocking socket sleeps while sk_wmem_alloc >=
// sk_sndbuf (up to SO_SNDTIMEO, then EAGAIN). The charge goes back when the
// frame is freed or orphaned, and tun orphans a frame only as it enters
// the ring (tun_net_xmit). So:
//
//   - backpressure/sndbuf_fills_first: the stopped queue leaves the frames
//     in the qdisc charged to the sender; once they fill its buffer (long
//     before pfifo's limit of 1000) sendmmsg waits, with the reader idle,
//     and resumes as the reader wakes the queue. Nothing is lost anywhere:
//     tun and the qdisc drop nothing, no ENOBUFS, every frame is read, in
//     order. The qdisc paces the sender only through the send buffer.
//   - backpressure/qdisc_fills_first: a pfifo of 4 fills before the send
//     buffer does; the sender does not wait, it gets ENOBUFS for every frame
//     after that, each one a qdisc drop.
//   - stock (flag off): tun tail-drops beyond the ring and frees each frame
//     at once; the sender never waits and loses N-R frames in tun.
func TestPacing(t *testing.T) {
	feature.Of(t, feature.Seed000Tun)
	const ring, n = 16, 200
	for _, tc := range []struct {
		name  string
		flags uint16
		limit uint32
	}{
		{"backpressure/sndbuf_fills_first", tuntap.IFFBackpressure, 1000},
		{"backpressure/qdisc_fills_first", tuntap.IFFBackpressure, 4},
		{"stock", 0, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tapOpts{ring: ring, limit: tc.limit, flags: tc.flags}
			te := newTap(t, o)
			s := te.pacedSender(t, 1)
			sndbuf, err := s.SendBuffer()
			assert.NilError(t, err)

			var finished atomic.Bool
			done := make(chan error, 1)
			var res traffic.Result
			go func() {
				var err error
				res, err = s.Send(n)
				finished.Store(true)
				done <- err
			}()
			waitSender := func(what string) {
				t.Helper()
				start := time.Now()
				select {
				case err := <-done:
					margin.Note(waitLimit, time.Since(start), false)
					assert.NilError(t, err, "%s: after %d sent, %d refused", what, res.Sent, res.Refused)
				case <-time.After(waitLimit):
					margin.Note(waitLimit, waitLimit, true)
					t.Fatalf("%s: the sender did not finish within %v", what, waitLimit)
				}
			}

			f := idleFate(o, n)
			paced := tc.flags != 0 && tc.name == "backpressure/sndbuf_fills_first"
			if paced {
				// The sender waits: the ring is full, the qdisc holds a
				// send buffer's worth, and nothing moves while the reader
				// is idle.
				var prev state
				st := te.waitState(t, "the sender blocked with frames in the qdisc", func(s state) bool {
					ok := s == prev && s.Q.Qlen > 0
					prev = s
					return ok
				})
				st = te.holdState(t, "blocked sender", func(s state) bool {
					return s == st && !finished.Load()
				})
				t.Logf("the sender waits with the qdisc holding %d frames (sk_sndbuf %d bytes); %v", st.Q.Qlen, sndbuf, st)
				assert.Check(t, st.Q.Qlen <= uint64(sndbuf/traffic.FrameLen), "qdisc backlog beyond what the send buffer can charge (%d bytes, each frame more than %d); %v", sndbuf, traffic.FrameLen, st)
				assert.Check(t, st.Q.Qlen < uint64(tc.limit), "the qdisc filled before the send buffer; %v", st)
				assert.Check(t, is.Equal(st.Q.Drops+st.Link.TxDropped, uint64(0)), "drops while the sender waits; %v", st)
			} else {
				// The sender does not wait for the idle reader.
				waitSender("with the reader idle")
				st := te.stopped(t, state{}, f)
				l := account(res.Sent+res.Refused, 0, st, f.ring)
				assert.Assert(t, l.Balanced(), "%v", l)
				assert.Check(t, is.Equal(res.Refused, uint64(f.qdiscDrops)), "ENOBUFS are the qdisc's drops; %v", l)
				assert.Check(t, is.Equal(st.Q.Drops, uint64(f.qdiscDrops)), "qdisc drops; %v", l)
			}

			r := traffic.NewReader(te.dev.File)
			want := f.ring + f.backlog
			if paced {
				want = n
			}
			readExactly(t, r, want)
			got := want + drain(t, r)
			if paced {
				waitSender("with the reader reading")
			}
			st := te.waitState(t, "empty qdisc", func(s state) bool { return s.Q.Qlen == 0 })
			l := account(res.Sent+res.Refused, got, st, 0)
			assert.Assert(t, l.Balanced(), "%v", l)
			assert.Check(t, is.Equal(got, want), "frames read; %v", l)
			assert.Check(t, is.Equal(st.Link.TxDropped, uint64(f.tunDrops)), "tun drops; %v", l)
			checkStreams(t, l, sentBy(s), r)
			checkFirst(t, r, 1, got)
			if paced {
				assert.Check(t, is.Equal(res, traffic.Result{Sent: n}), "every frame sent, none refused; %v", l)
				assert.Check(t, is.Equal(st.Q.Drops, uint64(0)), "qdisc drops; %v", l)
			}
			t.Logf("%s: %+v; %v", tc.name, res, l)
		})
	}
}

// pacedSender opens a blocking sender with a send buffer of pacedSndbuf
// that waits at most waitLimit for room.
func (te *tapRig) pacedSender(t testing.TB, stream uint32) *traffic.Sender {
	t.Helper()
	var s *traffic.Sender
	assert.NilError(t, te.e.Do(func() (err error) {
		s, err = traffic.NewPacedSender(te.ifindex, stream, pacedSndbuf, waitLimit)
		return err
	}), "paced sender on %s", tapName)
	t.Cleanup(func() { s.Close() })
	return s
}
