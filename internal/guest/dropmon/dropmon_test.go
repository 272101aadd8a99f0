package dropmon

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/testmain"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// TestFilter sends n UDP datagrams to a closed port on the loopback of one
// namespace: udp_rcv() frees each with NO_SOCKET on lo. A monitor filtered
// to that lo counts exactly n, one filtered to another namespace's lo none.
func TestFilter(t *testing.T) {
	const n = 7
	reason, err := Reason(feature.DropReasonNoSocket)
	observe.Require(t, err)
	here, other := netenv.New(t), netenv.New(t)
	watch := func(e *netenv.Env) *Monitor {
		ino, err := NetnsInode(int(e.NS))
		assert.NilError(t, err)
		m, err := Attach(Filter{Ifindex: 1, NetnsInode: ino}) // lo is ifindex 1 in every namespace
		assert.NilError(t, err)
		t.Cleanup(func() { m.Close() })
		return m
	}
	mine, theirs := watch(here), watch(other)

	assert.NilError(t, here.Do(func() error {
		// Unconnected, so the ICMP errors never fail a later send.
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer c.Close()
		to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9} // nobody listens in a new namespace
		for range n {
			if _, err := c.WriteTo([]byte("xmitcheck"), to); err != nil {
				return err
			}
		}
		return nil
	}))
	got, err := mine.Count(reason)
	assert.NilError(t, err)
	seen, err := mine.All()
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got, uint64(n)),
		"NO_SOCKET (%d) drops on this namespace's lo; every reason seen: %v", reason, seen)
	got, err = theirs.Count(reason)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got, uint64(0)), "NO_SOCKET drops on another namespace's lo")
}

// TestHist sends n frames of the suite's ethertype from one veth end to the
// other, where no protocol takes them: the receive path frees each once. A
// histogram of that ethertype counts exactly n frees, one of another
// ethertype none.
func TestHist(t *testing.T) {
	const n = 64
	e := netenv.New(t)
	a, _ := e.Veth(t, "xh0", "xh1", 0)
	mine, err := WatchHist(t, traffic.EtherType)
	if errors.Is(err, ErrNoHist) {
		t.Skip(err)
	}
	assert.NilError(t, err)
	other, err := WatchHist(t, traffic.EtherType+1)
	assert.NilError(t, err)
	sendUnclaimed(t, e, a.Attrs().Index, n)
	// The peer frees them in its receive softirq, after Send returned.
	got, err := counters.WaitFor(t.Context(), 5*time.Second, mine.Total, func(f FreedCount) bool { return f.N >= n })
	assert.NilError(t, err, "frees of ethertype %#x", traffic.EtherType)
	assert.Check(t, is.Equal(got.N, uint64(n)), "frees of ethertype %#x: %v", traffic.EtherType, got)
	got, err = other.Total()
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got.N, uint64(0)), "frees of ethertype %#x: %v", traffic.EtherType+1, got)
}

// TestHistShared: two Hists of one ethertype share the binary's instance,
// and each counts from where it began: the first the frees of both sends,
// the second those of the second send alone.
func TestHistShared(t *testing.T) {
	const n, m = 16, 24
	shareHists = func() bool { return true }
	t.Cleanup(func() {
		shareHists = testmain.Running
		for _, inst := range sharedHists.by {
			assert.Check(t, inst.close())
		}
		sharedHists.by, sharedHists.none = nil, nil
	})
	e := netenv.New(t)
	a, _ := e.Veth(t, "xh0", "xh1", 0)
	first, err := WatchHist(t, traffic.EtherType)
	if errors.Is(err, ErrNoHist) {
		t.Skip(err)
	}
	assert.NilError(t, err)
	frees := func(h *Hist, want uint64) {
		t.Helper()
		got, err := counters.WaitFor(t.Context(), 5*time.Second, h.Total, func(f FreedCount) bool { return f.N >= want })
		assert.NilError(t, err)
		assert.Check(t, is.Equal(got.N, want), "%v", got)
	}
	sendUnclaimed(t, e, a.Attrs().Index, n)
	frees(first, n)
	second, err := WatchHist(t, traffic.EtherType)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(second.inst, first.inst), "one instance for the binary")
	sendUnclaimed(t, e, a.Attrs().Index, m)
	frees(first, n+m)
	frees(second, m)
}

// TestWatchFreed sends n frames of the suite's ethertype as TestHist does:
// WatchFreed counts exactly n frees, with a histogram or, on a kernel
// without one, a BPF program on the peer.
func TestWatchFreed(t *testing.T) {
	const n = 64
	e := netenv.New(t)
	a, b := e.Veth(t, "xf0", "xf1", 0)
	RequireReasons(t)
	freed := WatchFreed(t, e.NS, b.Attrs().Index, traffic.EtherType)
	sendUnclaimed(t, e, a.Attrs().Index, n)
	freed.WaitFor(t, n, 5*time.Second, stringer("the peer's receive path frees every frame once"))
}

type stringer string

func (s stringer) String() string { return string(s) }

// sendUnclaimed sends n frames of the suite's ethertype from the device
// ifindex of e.
func sendUnclaimed(t *testing.T, e *netenv.Env, ifindex int, n uint64) {
	t.Helper()
	assert.NilError(t, e.Do(func() error {
		s, err := traffic.NewSender(ifindex, 0)
		if err != nil {
			return err
		}
		defer s.Close()
		r, err := s.Send(int(n))
		if err == nil && r.Sent != n {
			err = fmt.Errorf("sent %d of %d frames: %+v", r.Sent, n, r)
		}
		return err
	}))
}
