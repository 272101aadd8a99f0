package traffic

import (
	"os"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/netenv"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
)

// TestSenderToTap sends through a tap with an idle reader and checks that
// every frame is accounted for: the ring holds txqueuelen of them and tun
// drops the rest (stock tail-drop, flag off).
func TestSenderToTap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for /dev/net/tun and namespaces")
	}
	const ring, n = 16, 40
	e := netenv.New(t)
	var tap *tuntap.Device
	var s *Sender
	assert.NilError(t, e.Do(func() (err error) {
		tap, err = tuntap.Open("xtap0", tuntap.IFFTap|tuntap.IFFNoPI)
		return err
	}))
	defer tap.Close()
	l := e.Link(t, "xtap0")
	assert.NilError(t, e.Handle.LinkSetTxQLen(l, ring))
	e.Up(t, l)
	e.Pfifo(t, l, 100)
	assert.NilError(t, e.Do(func() (err error) {
		s, err = NewSender(l.Attrs().Index, 1)
		return err
	}))
	defer s.Close()

	res, err := s.Send(n)
	assert.NilError(t, err)
	r := NewReader(tap.File)
	got, err := r.Drain(50 * time.Millisecond)
	assert.NilError(t, err)
	st, err := counters.ReadLink(e.Handle, "xtap0")
	assert.NilError(t, err)
	q, err := counters.ReadRootQdisc(e, "xtap0")
	assert.NilError(t, err)
	a := counters.Accounting{Sent: res.Sent + res.Refused, Received: uint64(got), DeviceDrops: st.TxDropped, QdiscDrops: q.Drops, QdiscBacklog: q.Qlen}
	assert.Equal(t, q.Drops, res.Refused, "qdisc drops are the sends refused with ENOBUFS")
	assert.Assert(t, a.Balanced(), "%v", a)
	assert.Equal(t, got, ring, "%v", a)
}
