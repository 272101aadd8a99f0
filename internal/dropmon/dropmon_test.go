package dropmon

import (
	"net"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/netenv"
)

// TestFilter sends n UDP datagrams to a closed port on the loopback of one
// namespace: udp_rcv() frees each with NO_SOCKET on lo. A monitor filtered
// to that lo counts exactly n, one filtered to another namespace's lo none.
func TestFilter(t *testing.T) {
	const n = 7
	reason, err := Reason(feature.DropReasonNoSocket)
	feature.Require(t, err)
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
	assert.Check(t, is.Equal(got, uint64(n)), "NO_SOCKET (%d) drops on this namespace's lo; every reason seen: %v", reason, seen)
	got, err = theirs.Count(reason)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(got, uint64(0)), "NO_SOCKET drops on another namespace's lo")
}
