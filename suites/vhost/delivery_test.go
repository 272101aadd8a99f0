package vhost

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// TestDelivery: frames sent into the tap arrive in the guest's
// buffers intact, in order, none lost, on every kernel with vhost-net, with
// the flag off and on, and with a guest that uses event indexes, indirect
// descriptors and mergeable buffers of 40 bytes at once (every frame split
// over two buffers and put together again).
func TestDelivery(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	for _, s := range []setup{
		{qdisc: qdiscDefault},
		{backpressure: true, qdisc: qdiscPfifo},
		{qdisc: qdiscDefault, virtio: virtioAll},
		{backpressure: true, qdisc: qdiscPfifo, virtio: virtioAll},
	} {
		t.Run(s.String(), func(t *testing.T) {
			const n = 200 // fewer than the guest's buffers: nothing may drop
			r := newRig(t, s)
			g := r.guests[0]
			posted, err := g.Post(guestQueue)
			assert.NilError(t, err)
			assert.Equal(t, posted, guestQueue)

			sent := sendAll(t, r.sender(0), n)
			rv := r.receiver(true)
			r.collect(g, rv, func(rv *receiver) bool { return rv.got >= sent })
			st := r.waitState("an idle qdisc", func(s state) bool { return s.Qdisc.Qlen == 0 })
			a := account(sent, rv.got, st)
			assert.Assert(t, a.Balanced(), "%v", a)
			assert.Equal(t, a.Received, uint64(n), "%v", a)
			want := make([]uint64, n)
			for i := range want {
				want[i] = uint64(i)
			}
			assert.Check(t, is.DeepEqual(rv.seqs, want), "sequence numbers received, in order; %v", a)
			assert.Equal(t, st.Link.TxPackets, uint64(n), "tun counted every frame as transmitted (tx_packets); %v; %v", a, st)
		})
	}
}

// TestTransmit is the guest → tap direction the same vhost device carries
// (handle_tx): frames the guest posts on its TX queue arrive on the tap
// intact and in order, and the tap counts them as received.
func TestTransmit(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	const n = 100
	r := newRig(t, setup{qdisc: qdiscDefault})
	fd := r.packetSocket()
	g := r.guests[0]
	var frames [][]byte
	for i := range n {
		frames = append(frames, traffic.Frame(traffic.SourceMAC(9), 9, uint64(i)))
	}
	posted, err := g.Transmit(frames)
	assert.NilError(t, err)
	assert.Equal(t, posted, n)
	reclaimed := 0
	_, err = counters.WaitFor(r.ctx, wait, func() (int, error) {
		k, err := g.Reclaim()
		reclaimed += k
		return reclaimed, err
	}, func(k int) bool { return k == n })
	assert.NilError(t, err, "vhost sending the guest's frames")
	got := recvFrames(t, fd, n)
	st := r.mustState()
	// The ledger of this direction: frames vhost sent (the guest reclaimed
	// their buffers), frames on the tap, frames the tap dropped on receive.
	a := counters.Accounting{Sent: n, Received: uint64(len(got)), DeviceDrops: st.Link.RxDropped}
	assert.Equal(t, len(got), n, "frames on the tap; %v; %v", a, st)
	for i := range got {
		assert.DeepEqual(t, got[i], frames[i])
	}
	assert.Equal(t, st.Link.RxPackets, uint64(n), "%v; %v", a, st)
	assert.Equal(t, st.Link.RxDropped, uint64(0), "%v; %v", a, st)
}

// packetSocket opens an AF_PACKET socket in the namespace that receives the
// test's frames arriving on the tap (what the guest transmits).
func (r *rig) packetSocket() int {
	r.tb.Helper()
	var fd int
	err := r.e.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(traffic.Htons(traffic.EtherType)))
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{
			Protocol: traffic.Htons(traffic.EtherType),
			Ifindex:  r.link.Attrs().Index,
		})
	})
	assert.NilError(r.tb, err)
	r.tb.Cleanup(func() { unix.Close(fd) })
	tv := unix.NsecToTimeval((2 * time.Second).Nanoseconds())
	assert.NilError(r.tb, unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
	return fd
}

// recvFrames receives up to n incoming frames from packet socket fd,
// stopping when none comes for the socket's timeout.
func recvFrames(tb testing.TB, fd, n int) [][]byte {
	tb.Helper()
	var frames [][]byte
	buf := make([]byte, 65536)
	for len(frames) < n {
		m, from, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		assert.NilError(tb, err, "recvfrom")
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		frames = append(frames, append([]byte(nil), buf[:m]...))
	}
	return frames
}
