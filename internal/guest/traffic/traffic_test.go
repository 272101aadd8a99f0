package traffic

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/vishvananda/netlink"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// senderTap makes tap xtap0 (txqueuelen ring, up) in a namespace of its
// own and a Sender of stream 1 on it, closed when t ends.
func senderTap(t *testing.T, ring int) (*netenv.Env, *tuntap.Device, netlink.Link, *Sender) {
	t.Helper()
	e := netenv.New(t)
	var tap *tuntap.Device
	var s *Sender
	assert.NilError(t, e.Do(func() (err error) {
		tap, err = tuntap.Open("xtap0", tuntap.IFFTap|tuntap.IFFNoPI)
		return err
	}))
	t.Cleanup(func() { tap.Close() })
	l := e.Link(t, "xtap0")
	assert.NilError(t, e.Handle.LinkSetTxQLen(l, ring))
	e.Up(t, l)
	assert.NilError(t, e.Do(func() (err error) {
		s, err = NewSender(l.Attrs().Index, 1)
		return err
	}))
	t.Cleanup(func() { s.Close() })
	return e, tap, l, s
}

// TestSenderToTap sends through a tap with an idle reader and checks that
// every frame is accounted for: the ring holds txqueuelen of them and tun
// drops the rest (stock tail-drop, flag off). With pfifo the qdisc hides
// tun's drops from sendmmsg; with noqueue tun's NET_XMIT_DROP comes back as
// ENOBUFS, first for a frame in the middle of a batch (sendmmsg returns
// short, Send asks the device's state) and then for frames that start one.
func TestSenderToTap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for /dev/net/tun and namespaces")
	}
	const ring, n = 16, 40
	for _, qdisc := range []string{"pfifo", "noqueue"} {
		t.Run(qdisc, func(t *testing.T) {
			e, tap, l, s := senderTap(t, ring)
			if qdisc == "pfifo" {
				e.Pfifo(t, l, 100)
			} else {
				e.Noqueue(t, l)
			}

			res, err := s.Send(n)
			assert.NilError(t, err)
			assert.Equal(t, s.Next(), uint64(n))
			r := NewReader(tap.File)
			got, err := r.Read(n, 50*time.Millisecond)
			assert.NilError(t, err)
			st, err := counters.ReadLink(e.Handle, "xtap0")
			assert.NilError(t, err)
			a := counters.Accounting{Sent: res.Sent + res.Refused, Received: uint64(got), DeviceDrops: st.TxDropped}
			if qdisc == "pfifo" {
				q, err := counters.ReadRootQdisc(e, "xtap0")
				assert.NilError(t, err)
				a.QdiscDrops, a.QdiscBacklog = q.Drops, q.Qlen
				assert.Check(t, is.Equal(res.Refused, uint64(0)), "a qdisc hides tun's drops; %v", a)
			} else {
				assert.Check(t, is.Equal(res.Refused, st.TxDropped), "ENOBUFS are tun's drops; %v", a)
			}
			assert.Assert(t, a.Balanced(), "%v", a)
			assert.Equal(t, got, ring, "%v", a)
			assert.NilError(t, r.InOrder())
			missing, err := r.Missing(1, 0, n)
			assert.NilError(t, err)
			assert.Check(t, is.Equal(missing, st.TxDropped), "frames missing from the stream are tun's drops; %v", a)
			want := Stream{Frames: ring, First: 0, Last: ring - 1, InOrder: ring}
			assert.Check(t, is.DeepEqual(*r.Streams[1], want), "the ring holds the first %d frames", ring)
		})
	}
}

// TestDeviceState checks the probe Send uses after a short sendmmsg: it
// tells a device that is up from one that is down, and sends nothing.
func TestDeviceState(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for /dev/net/tun and namespaces")
	}
	e, tap, l, s := senderTap(t, 1000)

	assert.NilError(t, s.deviceState())
	e.Down(t, l)
	assert.ErrorIs(t, s.deviceState(), unix.ENETDOWN)
	e.Up(t, l)
	assert.NilError(t, s.deviceState())
	got, err := NewReader(tap.File).Read(1, 50*time.Millisecond)
	assert.NilError(t, err)
	st, err := counters.ReadLink(e.Handle, "xtap0")
	assert.NilError(t, err)
	assert.Equal(t, got, 0, "frames in the ring after the probes; %v", st)
	assert.Equal(t, st.TxDropped, uint64(0), "the probes sent nothing; %v", st)
}
